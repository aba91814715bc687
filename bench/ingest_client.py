"""The Python client and `calmon send` against the columnar JSON path, in the same runs.

The rows of bench/ingest.py go to one real `calmon serve` (uvicorn, PostgreSQL) four ways, each
with ids of its own:

- columnar JSON via API: one request per batch, bodies encoded before timing (as bench/ingest.py
  times its columnar path);
- client send (arrays): ``CalmonClient.send`` of numpy arrays and lists, timed from the arrays
  to the last answer (conversion, JSON, hashing, the requests);
- calmon send of a CSV, a JSON-lines and a Parquet file: what `calmon send FILE` runs (opening
  and counting the file, reading, converting, encoding, the requests), in this process so that
  the paths can be closely interleaved; the files are written before timing.

A run sends ``--rows`` rows through every path, ``--parts`` parts at a time, the order of the
paths rotating from one part to the next, so that load from elsewhere on the machine falls on
all of them alike; the tables are emptied between runs. Printed: each run's rows/s per path and
its ratio to columnar JSON (the target is >= 90%), the median of the runs, and the start of a
real `calmon send` process, which a file pays once.

    python -m bench.ingest_client --database-url postgresql+psycopg://postgres@127.0.0.1/scratch
"""

from __future__ import annotations

import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from app.client import CalmonClient
from app.client.files import PredictionFile
from bench.arguments import write_load_parser
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
from tests.support.server import REPO_ROOT, bearer_client, clean_environment, running_server

COLUMNAR = "columnar JSON via API"
ARRAYS = "client send (arrays)"
CSV_FILE = "calmon send (CSV file)"
JSONL_FILE = "calmon send (JSON lines)"
PARQUET_FILE = "calmon send (Parquet file)"
PATHS = (COLUMNAR, ARRAYS, CSV_FILE, JSONL_FILE, PARQUET_FILE)
SUFFIXES = {CSV_FILE: "csv", JSONL_FILE: "jsonl", PARQUET_FILE: "parquet"}
TARGET = 0.9


def write_csv(path: Path, batches: list[Batch]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_HEADER)
        for batch in batches:
            writer.writerows(csv_rows(batch))


def write_jsonl(path: Path, batches: list[Batch]) -> None:
    with path.open("wb") as handle:
        for batch in batches:
            for row in csv_rows(batch):
                record = dict(zip(CSV_HEADER, row, strict=True))
                record["label"] = record["label"] if record["label"] != "" else None
                handle.write(msgspec.json.encode(record) + b"\n")


def write_parquet(path: Path, batches: list[Batch]) -> None:
    micros = np.concatenate([batch.micros for batch in batches])
    table = pa.table(
        {
            "id": [i for batch in batches for i in batch.ids],
            "timestamp": pa.array(micros, pa.timestamp("us", "UTC")),
            "score": np.concatenate([batch.scores for batch in batches]),
            "label": pa.array([v for batch in batches for v in batch.labels], pa.int8()),
            "segment": [s for batch in batches for s in batch.segments],
        }
    )
    pq.write_table(table, path)


def send_file(client: CalmonClient, path: Path, batch_rows: int) -> float:
    """What `calmon send` does with ``path``, in this process; seconds."""
    start = time.perf_counter()
    feed = PredictionFile.open(path)
    sent = client.send_chunks(MODEL, feed.chunks(batch_rows), path.name)
    seconds = time.perf_counter() - start
    if sent.rows_inserted != feed.rows:
        raise RuntimeError(f"calmon send {path.name}: unexpected answer {sent}")
    return seconds


def send_arrays(client: CalmonClient, batches: list[Batch], prefix: str) -> float:
    """``CalmonClient.send`` of the part's columns, from arrays to the last answer; seconds."""
    ids = [i for batch in batches for i in batch.ids]
    micros = np.concatenate([batch.micros for batch in batches])
    scores = np.concatenate([batch.scores for batch in batches])
    labels = [v for batch in batches for v in batch.labels]
    segments = [s for batch in batches for s in batch.segments]
    start = time.perf_counter()
    sent = client.send(
        MODEL,
        ids=ids,
        timestamps=micros.astype("datetime64[us]"),
        scores=scores,
        labels=labels,
        segments=segments,
        prefix=prefix,
    )
    seconds = time.perf_counter() - start
    if sent.rows_inserted != len(ids):
        raise RuntimeError(f"client: unexpected answer {sent}")
    return seconds


def warm_up(http: httpx.Client, client: CalmonClient, directory: Path, batch_rows: int) -> None:
    """100 untimed rows through every path first: the server's first request pays for lazy
    imports and statement caches, the client's first file for importing pyarrow, and either
    would fall on whichever path happened to go first."""
    batches = {path: make_batches(100, 100, tag=f"w{n}") for n, path in enumerate(PATHS)}
    (first,) = batches[COLUMNAR]
    post_batch(http, MODEL, columnar_body(first), "application/json", "warm-up")
    send_arrays(client, batches[ARRAYS], "warm-up")
    writers = {CSV_FILE: write_csv, JSONL_FILE: write_jsonl, PARQUET_FILE: write_parquet}
    for path, write in writers.items():
        file = directory / f"warm-up.{SUFFIXES[path]}"
        write(file, batches[path])
        send_file(client, file, batch_rows)


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
    database_url: str, total_rows: int, batch_rows: int, parts: int, runs: int = 3
) -> tuple[list[dict[str, float]], dict[str, list[float]], float]:
    """Each run's rows/s per path, each part's ratio to columnar JSON per path, and the seconds
    a `calmon send` process start costs."""
    _settings, engine, _id, token = prepare(database_url)
    # The same values on every path (same seed), ids of each path's own (its tag).
    batches = {
        path: make_batches(total_rows, batch_rows, tag="cafjp"[n]) for n, path in enumerate(PATHS)
    }
    per_part = -(-len(batches[COLUMNAR]) // parts)
    scratch = tempfile.TemporaryDirectory(prefix="calmon-bench-client-")  # the files sent
    directory = Path(scratch.name)
    results: list[dict[str, float]] = []
    # Each part's ratio to columnar JSON: parts are sent within seconds of each other, so a
    # burst of load elsewhere weighs less on the median of these than on a run's total.
    part_shares: dict[str, list[float]] = {path: [] for path in PATHS}
    try:
        with (
            running_server(database_url) as server,
            bearer_client(server.base_url, token) as http,
            CalmonClient(server.base_url, token, batch_rows=batch_rows, timeout=300) as client,
        ):
            for number in range(parts):  # the inputs of every part, made before any timing
                part = slice(number * per_part, (number + 1) * per_part)
                write_csv(directory / f"part-{number}.csv", batches[CSV_FILE][part])
                write_jsonl(directory / f"part-{number}.jsonl", batches[JSONL_FILE][part])
                write_parquet(directory / f"part-{number}.parquet", batches[PARQUET_FILE][part])
            bodies = [columnar_body(batch) for batch in batches[COLUMNAR]]
            warm_up(http, client, directory, batch_rows)

            def send_part(path: str, number: int) -> float:
                part = slice(number * per_part, (number + 1) * per_part)
                if path == COLUMNAR:
                    pairs = zip(batches[COLUMNAR][part], bodies[part], strict=True)
                    return sum(
                        post_batch(http, MODEL, body, "application/json", batch.batch_id)
                        for batch, body in pairs
                    )
                if path == ARRAYS:
                    return send_arrays(client, batches[ARRAYS][part], f"arrays-{number}")
                return send_file(client, directory / f"part-{number}.{SUFFIXES[path]}", batch_rows)

            for run_number in range(runs):
                reset(engine)
                seconds = dict.fromkeys(PATHS, 0.0)
                for number in range(parts):
                    # Rotated, and reversed every other part: each path goes at every place
                    # and after two different paths, whatever the one before leaves behind
                    # (a checkpoint, autovacuum) falls on all of them.
                    turn = (run_number + number) % len(PATHS)
                    order = PATHS[turn:] + PATHS[:turn]
                    if (run_number * parts + number) % 2:
                        order = order[::-1]
                    taken = {path: send_part(path, number) for path in order}
                    for path, part_seconds in taken.items():
                        seconds[path] += part_seconds
                        part_shares[path].append(taken[COLUMNAR] / part_seconds)
                    print(
                        f"run {run_number + 1}/{runs}, part {number + 1}/{parts} done",
                        file=sys.stderr,
                        flush=True,
                    )
                results.append({path: total_rows / seconds[path] for path in PATHS})
            start = process_start(server.base_url, token, directory)
    finally:
        reset(engine)
        engine.dispose()
        scratch.cleanup()
    return results, part_shares, start


def report(
    results: list[dict[str, float]],
    part_shares: dict[str, list[float]],
    start: float,
    total_rows: int,
) -> bool:
    """Print every run and the medians; whether every path met the target in the median."""
    print(
        f"\n{'path':28} "
        + " ".join(f"{'run ' + str(n + 1):>16}" for n in range(len(results)))
        + f" {'median':>16} {'median of parts':>16}"
    )
    met = True
    for path in PATHS:
        shares = [run[path] / run[COLUMNAR] for run in results]
        cells = [
            f"{run[path]:8,.0f} {share:6.0%}" for run, share in zip(results, shares, strict=True)
        ]
        median = statistics.median(run[path] for run in results)
        share = statistics.median(shares)
        met = met and share >= TARGET
        print(
            f"{path:28} "
            + " ".join(f"{cell:>16}" for cell in cells)
            + f" {median:8,.0f} {share:6.0%} {statistics.median(part_shares[path]):16.0%}"
        )
    print(
        f"target: every path >= {TARGET:.0%} of columnar JSON (median of the runs' ratios):",
        "MET" if met else "MISSED",
    )
    whole = 1 / (1 / statistics.median(run[CSV_FILE] for run in results) + start / total_rows)
    print(
        f"a `calmon send` process starts in {start:.2f} s, once per file: with it, a "
        f"{total_rows:,}-row CSV file goes at {whole:,.0f} rows/s"
    )
    return met


def main(argv: list[str] | None = None) -> int:
    parser = write_load_parser(__doc__, rows=1_000_000)
    parser.add_argument("--parts", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    results, shares, start = run(
        args.database_url, args.rows, args.batch_rows, args.parts, args.runs
    )
    print(
        f"\n{args.rows:,} rows per path and run, batches of {args.batch_rows:,}, {args.parts} parts"
    )
    return 0 if report(results, shares, start, args.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
