"""`calmon send FILE` against the columnar JSON path, in the same run.

The rows of bench/ingest.py are written to CSV files (``--parts`` of them); then, part by part,
alternating which goes first, one part goes through a real `calmon send` process (its time
includes starting Python, reading and converting the CSV, gzip and the requests) and the same
rows go to another model as pre-encoded columnar JSON requests, one per batch, timed as
bench/ingest.py times them. Printed: rows/s of both and their ratio (target >= 90%).

    python -m bench.ingest_file --database-url postgresql+psycopg://postgres@127.0.0.1:5432/scratch
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.ingest import (
    Batch,
    columnar_body,
    make_batches,
    model_name,
    post_batch,
    prepare,
    reset,
)
from tests.support.server import REPO_ROOT, clean_environment, running_server

COLUMNAR = "columnar JSON via API"
SEND = "calmon send (CSV file)"


def write_csv(path: Path, batches: list[Batch]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "timestamp", "score", "label", "segment"])
        for batch in batches:
            labels = ["" if label is None else label for label in batch.labels]
            writer.writerows(
                zip(
                    batch.ids,
                    batch.timestamps(),
                    batch.scores.tolist(),
                    labels,
                    batch.segments,
                    strict=True,
                )
            )


def send_file(base_url: str, token: str, path: Path, batch_rows: int) -> float:
    """One `calmon send` process over ``path``; wall seconds."""
    command = [sys.executable, "-m", "app.cli", "send", str(path), "--model", model_name(SEND)]
    command += ["--url", base_url, "--batch-rows", str(batch_rows), "--quiet"]
    start = time.perf_counter()
    subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=clean_environment({"CALMON_TOKEN": token}),
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def run(database_url: str, total_rows: int, batch_rows: int, parts: int) -> tuple[float, float]:
    """(rows/s of calmon send, rows/s of columnar JSON)."""
    _settings, engine, _ids, token = prepare(database_url, [COLUMNAR, SEND])
    batches = make_batches(total_rows, batch_rows)
    per_part = -(-len(batches) // parts)
    seconds = {COLUMNAR: 0.0, SEND: 0.0}
    directory = Path(tempfile.mkdtemp(prefix="calmon-bench-file-"))
    try:
        reset(engine)
        with (
            running_server(database_url) as server,
            httpx.Client(
                base_url=server.base_url,
                headers={"Authorization": f"Bearer {token}"},
                timeout=300,
            ) as http,
        ):
            for number in range(parts):
                part = batches[number * per_part : (number + 1) * per_part]
                path = directory / f"part-{number}.csv"
                write_csv(path, part)
                bodies = [columnar_body(batch) for batch in part]
                order = [SEND, COLUMNAR] if number % 2 == 0 else [COLUMNAR, SEND]
                for name in order:
                    if name == SEND:
                        seconds[SEND] += send_file(server.base_url, token, path, batch_rows)
                    else:
                        for batch, body in zip(part, bodies, strict=True):
                            seconds[COLUMNAR] += post_batch(
                                http,
                                model_name(COLUMNAR),
                                body,
                                "application/json",
                                batch.batch_id,
                            )
                print(f"part {number + 1}/{parts} done", file=sys.stderr, flush=True)
    finally:
        reset(engine)
        engine.dispose()
    return total_rows / seconds[SEND], total_rows / seconds[COLUMNAR]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="a scratch PostgreSQL database")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=50_000)
    parser.add_argument("--parts", type=int, default=2)
    args = parser.parse_args(argv)
    send, columnar = run(args.database_url, args.rows, args.batch_rows, args.parts)
    ratio = send / columnar
    print(f"\n{args.rows:,} rows, batches of {args.batch_rows:,}, {args.parts} parts")
    print(f"{SEND:28} {send:10,.0f} rows/s")
    print(f"{COLUMNAR:28} {columnar:10,.0f} rows/s")
    print(f"ratio {ratio:.0%}; target >= 90%:", "MET" if ratio >= 0.9 else "MISSED")
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
