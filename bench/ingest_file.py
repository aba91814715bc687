"""`calmon send FILE` against the columnar JSON path, in the same run.

The rows of bench/ingest.py are written to CSV files (``--parts`` of them); then, part by part,
alternating which goes first, one part goes through the code `calmon send` runs (opening and
counting the file, reading and converting the CSV, encoding, gzip, the requests; in this
process, so that the parts can be small and the two paths closely interleaved) and the same rows
go to another model as pre-encoded columnar JSON requests, one per batch, timed as
bench/ingest.py times them. Printed: rows/s of both and their ratio (target >= 90%), and the
start of a real `calmon send` process, which a file pays once.

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

from app.client import CalmonClient
from app.client.files import PredictionFile
from bench.ingest import (
    CSV_HEADER,
    MODEL,
    Batch,
    columnar_body,
    csv_rows,
    make_batches,
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
        writer.writerow(CSV_HEADER)
        for batch in batches:
            writer.writerows(csv_rows(batch))


def send_file(client: CalmonClient, path: Path, batch_rows: int) -> float:
    """What `calmon send` does with ``path``, in this process; seconds."""
    start = time.perf_counter()
    feed = PredictionFile.open(path)
    sent = client.send_chunks(MODEL, feed.chunks(batch_rows), path.name)
    seconds = time.perf_counter() - start
    if sent.rows_inserted != feed.rows:
        raise RuntimeError(f"calmon send: unexpected answer {sent}")
    return seconds


def process_start(base_url: str, token: str, directory: Path) -> float:
    """Wall seconds of a real `calmon send` process over a one-row file (imports, start)."""
    path = directory / "one.csv"
    path.write_text("id,timestamp,score\nstart-1,2026-11-01T00:00:00Z,0.5\n")
    command = [sys.executable, "-m", "app.cli", "send", str(path), "--model", MODEL]
    start = time.perf_counter()
    subprocess.run(
        [*command, "--url", base_url, "--quiet"],
        cwd=REPO_ROOT,
        env=clean_environment({"CALMON_TOKEN": token}),
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def run(
    database_url: str, total_rows: int, batch_rows: int, parts: int
) -> tuple[float, float, float]:
    """(rows/s of calmon send's code, rows/s of columnar JSON, seconds a process start costs)."""
    _settings, engine, _id, token = prepare(database_url)
    # Both write into the one model, with ids of their own and the same other columns.
    batches = make_batches(total_rows, batch_rows, tag="s")
    columnar = make_batches(total_rows, batch_rows, tag="c")
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
            CalmonClient(server.base_url, token, batch_rows=batch_rows, timeout=300) as client,
        ):
            for number in range(parts):
                part = slice(number * per_part, (number + 1) * per_part)
                path = directory / f"part-{number}.csv"
                write_csv(path, batches[part])
                bodies = [columnar_body(batch) for batch in columnar[part]]
                order = [SEND, COLUMNAR] if number % 2 == 0 else [COLUMNAR, SEND]
                for name in order:
                    if name == SEND:
                        seconds[SEND] += send_file(client, path, batch_rows)
                    else:
                        for batch, body in zip(columnar[part], bodies, strict=True):
                            seconds[COLUMNAR] += post_batch(
                                http,
                                MODEL,
                                body,
                                "application/json",
                                batch.batch_id,
                            )
                print(f"part {number + 1}/{parts} done", file=sys.stderr, flush=True)
            start = process_start(server.base_url, token, directory)
    finally:
        reset(engine)
        engine.dispose()
    return total_rows / seconds[SEND], total_rows / seconds[COLUMNAR], start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="a scratch PostgreSQL database")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=50_000)
    parser.add_argument("--parts", type=int, default=5)
    args = parser.parse_args(argv)
    send, columnar, start = run(args.database_url, args.rows, args.batch_rows, args.parts)
    ratio = send / columnar
    whole = 1 / (1 / send + start / args.rows)
    print(f"\n{args.rows:,} rows, batches of {args.batch_rows:,}, {args.parts} parts")
    print(f"{SEND:28} {send:10,.0f} rows/s")
    print(f"{COLUMNAR:28} {columnar:10,.0f} rows/s")
    print(f"ratio {ratio:.0%}; target >= 90%:", "MET" if ratio >= 0.9 else "MISSED")
    print(
        f"a `calmon send` process starts in {start:.2f} s, once per file: with it, "
        f"{whole:,.0f} rows/s for the whole file, {whole / columnar:.0%} of columnar"
    )
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
