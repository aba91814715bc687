"""Ingestion throughput through the HTTP API, against two floors measured in the same run.

calmon floor: the same rows written straight to the same PostgreSQL schema by the same
repository code (binary COPY into the staging table, the INSERT, the window dirtying), one
transaction per batch, no HTTP, no parsing, no validation. Best floor: one plain binary COPY
straight into predictions, keeping the same guarantees (see bench/ingest_floors.py). Then the
same rows go through a real `calmon serve` process (uvicorn) as columnar JSON, row JSON and CSV,
one request per batch, sequentially like the floors, and through the Python client
(``app.client``), whose time includes its own work: turning the arrays into columnar JSON, gzip,
the request. A path's rows/s is its rows over the sum of its own write (floor), request (API)
or ``send`` (client) times. Printed: rows/s per path, each path's ratio to both floors, request
latency p50/p99, and where the time of one request goes (parse and validation, in-process).

    python -m bench.ingest --database-url postgresql+psycopg://postgres@127.0.0.1/calmon_bench \
        --ids both --stored-rows 0 5000000

The database's calmon tables are emptied first and last (it must be a scratch database). Every
path writes every batch into the same model with ids of its own (ascending per path, or random
32-hex), after ``--stored-rows`` rows of that model were stored, interleaved batch by batch with
a rotating order, so that load from elsewhere on the machine falls on all paths alike.

``--row-fields`` adds a twin of each floor, API path and of the client that sends the same
rows with a transaction ``amount`` and ``entity`` (issue 24), in the same run, and prints each
twin's rows/s against its path's without them (the target: >= 90%); the floors' twins say what
storing the two columns costs the repository's write and a plain COPY, the bound for the rest.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import numpy as np
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.client import CalmonClient
from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.db.repositories.staged_rows import StagedRows
from app.db.types import utcnow
from app.ingest.body import parse_body
from app.ingest.validate import Limits, validate
from app.ingest.windows import floor_to_windows
from app.schemas.models import ModelCreate
from app.services.ingest import limits_from
from app.services.models import add_model
from app.services.tokens import create_token
from app.settings import Settings
from bench.arguments import write_load_parser
from bench.ingest_floors import (
    ID_PATTERNS,
    best_floor_rows,
    labelled_rows,
    make_ids,
    preload,
    write_best_floor,
    write_calmon_floor,
)
from tests.support.server import bearer_client, running_server

START_MICROS = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp()) * 1_000_000
SPAN_MICROS = 7 * 86_400 * 1_000_000  # a week of traffic: 7 daily windows
TABLES = ("predictions", "prediction_keys", "windows", "batches")


@dataclass(frozen=True)
class Batch:
    """One batch of synthetic rows (fraud-like: ~0.5% positives, 30% not labelled yet)."""

    batch_id: str
    ids: list[str]
    micros: np.ndarray[Any, np.dtype[np.int64]]
    scores: np.ndarray[Any, np.dtype[np.float64]]
    labels: list[int | None]
    segments: list[str]
    # A transaction's value and card (issue 24's optional fields), when the path sends them.
    amounts: np.ndarray[Any, np.dtype[np.float64]] | None = None
    entities: list[str] | None = None

    def timestamps(self) -> list[str]:
        iso = np.datetime_as_string(self.micros.astype("datetime64[us]"), unit="us")
        return [value + "Z" for value in iso.tolist()]


@dataclass(frozen=True)
class PathResult:
    """Throughput and request latencies of one way of writing the batches."""

    name: str
    rows: int
    seconds: float
    latencies: list[float]

    @property
    def rows_per_second(self) -> float:
        """Rows over the total time of this path's writes."""
        return self.rows / self.seconds

    @property
    def median_rows_per_second(self) -> float:
        """Rows per batch over the median batch time: one stalled batch does not decide it."""
        return self.rows / len(self.latencies) / self.percentile(50)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")


def make_batches(
    total_rows: int,
    batch_rows: int,
    *,
    ids: str = "sequential",
    tag: str = "a",
    seed: int = 0,
    row_fields: bool = False,
) -> list[Batch]:
    """Synthetic batches with ids unique to ``tag``; the other columns depend on ``seed`` only,
    so every path writes the same values. With ``row_fields``, each row has an amount
    (log-normal, cents) and an entity (one of ``total_rows / 4`` cards), drawn apart so that
    the other columns stay the same."""
    rng = np.random.default_rng(seed)
    id_rng = np.random.default_rng([seed, ord(tag[0])])
    field_rng = np.random.default_rng([seed, 1])
    cards = max(total_rows // 4, 1)
    batches = []
    for number, first in enumerate(range(0, total_rows, batch_rows)):
        n = min(batch_rows, total_rows - first)
        positives = rng.random(n) < 0.005
        labelled = rng.random(n) < 0.7
        batches.append(
            Batch(
                batch_id=f"{tag}-batch-{number}",
                ids=make_ids(ids, tag, first, n, id_rng),
                micros=np.sort(START_MICROS + rng.integers(0, SPAN_MICROS, n)),
                scores=np.clip(rng.beta(1, 8, n) + 0.5 * positives, 0, 1).round(6),
                labels=[
                    int(p) if lab else None for p, lab in zip(positives, labelled, strict=True)
                ],
                segments=rng.choice(["FR", "DE", "ES", "IT"], n).tolist(),
            )
        )
        if row_fields:
            amounts = field_rng.lognormal(3.5, 1.2, n).round(2)
            entities = [f"card-{card:08d}" for card in field_rng.integers(0, cards, n).tolist()]
            batches[-1] = dataclasses.replace(batches[-1], amounts=amounts, entities=entities)
    return batches


def batch_columns(batch: Batch) -> dict[str, list[Any]]:
    """The batch's columns by API name (amount and entity only when it has them)."""
    columns: dict[str, list[Any]] = {
        "id": batch.ids,
        "timestamp": batch.timestamps(),
        "score": batch.scores.tolist(),
        "label": batch.labels,
        "segment": batch.segments,
    }
    if batch.amounts is not None and batch.entities is not None:
        columns |= {"amount": batch.amounts.tolist(), "entity": batch.entities}
    return columns


def columnar_body(batch: Batch) -> bytes:
    return msgspec.json.encode({"batch_id": batch.batch_id, "columns": batch_columns(batch)})


def row_body(batch: Batch) -> bytes:
    columns = batch_columns(batch)
    rows = [
        dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)
    ]
    return msgspec.json.encode({"batch_id": batch.batch_id, "rows": rows})


CSV_HEADER = ["id", "timestamp", "score", "label", "segment"]


def csv_rows(batch: Batch) -> Iterator[tuple[object, ...]]:
    """A batch's rows as the CSV format has them (an empty label field for no label)."""
    columns = batch_columns(batch)
    columns["label"] = ["" if label is None else label for label in batch.labels]
    return zip(*columns.values(), strict=True)


def csv_body(batch: Batch) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(batch_columns(batch))
    writer.writerows(csv_rows(batch))
    return out.getvalue().encode()


def reset(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {', '.join(TABLES)}"))


def staged_rows(model_id: int, batch: Batch) -> StagedRows:
    """The floor's input: the batch as the repository takes it, prepared before timing (with
    its amounts and entities when it has them)."""
    rows = labelled_rows(
        model_id,
        batch.ids,
        micros=batch.micros,
        windows=floor_to_windows(batch.micros, "day", "Europe/Paris"),
        scores=batch.scores,
        labels=np.array([-1 if v is None else v for v in batch.labels], dtype=np.int8),
        segments=batch.segments,
    )
    if batch.amounts is None:
        return rows
    return dataclasses.replace(rows, amounts=batch.amounts, entities=batch.entities)


def plant_sentinels(factory: sessionmaker[Session], model_id: int) -> None:
    """Store rows whose ids sort after every path's, in every window of the run, so that no
    path appends at the right edge of the id indexes.

    PostgreSQL inserts a key greater than every stored one without descending the index (it
    remembers the rightmost leaf) and splits that leaf 90/10 rather than in halves: the path
    whose tag sorted last ran up to 20% faster than a path with the same rows and an earlier
    tag (the twins with amount and entity, tagged after every path, looked cheaper than the
    paths without them). With the sentinels every path inserts inside the indexes alike."""
    sentinels = make_batches(700, 700, tag="~")[0]  # "~" sorts after letters and digits
    write_calmon_floor(factory, staged_rows(model_id, sentinels))


def post_batch(
    http: httpx.Client, model: str, body: bytes, content_type: str, batch_id: str
) -> float:
    """One request to the live server; seconds taken."""
    # CSV carries no batch id in its body; it goes in the query string.
    params = {"batch_id": batch_id} if content_type == "text/csv" else {}
    start = time.perf_counter()
    response = http.post(
        f"/v1/models/{model}/batches",
        content=body,
        params=params,
        headers={"Content-Type": content_type},
    )
    seconds = time.perf_counter() - start
    if response.status_code != 201:
        raise RuntimeError(f"{model}: HTTP {response.status_code}: {response.text[:500]}")
    return seconds


def best_of(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def in_process_costs(
    batch: Batch, settings: Settings, with_fields: Batch | None = None
) -> list[tuple[str, float]]:
    """Seconds of the CPU steps of one request, measured in this process (best of 3); those of
    columnar JSON with amount and entity too when ``with_fields`` is a batch that has them."""
    limits = limits_from(settings, utcnow())
    bodies = {
        "columnar JSON": (columnar_body(batch), "application/json"),
        "row JSON": (row_body(batch), "application/json"),
        "CSV": (csv_body(batch), "text/csv"),
    }
    if with_fields is not None:
        bodies["columnar JSON" + WITH_FIELDS] = (columnar_body(with_fields), "application/json")
    costs = []
    for label, (body, content_type) in bodies.items():
        costs.extend(_parse_and_validate_costs(label, body, content_type, limits))
    micros = batch.micros
    costs.append(
        (
            "window flooring (Europe/Paris)",
            best_of(3, lambda: floor_to_windows(micros, "day", "Europe/Paris")),
        )
    )
    row_json = bodies["row JSON"][0]
    costs.append(("row JSON: stdlib json.loads", best_of(3, lambda: json.loads(row_json))))
    costs.append(
        ("row JSON: msgspec.json.decode", best_of(3, lambda: msgspec.json.decode(row_json)))
    )
    return costs


def _parse_and_validate_costs(
    label: str, body: bytes, content_type: str, limits: Limits
) -> list[tuple[str, float]]:
    batch_id = "b" if content_type == "text/csv" else None
    raw = parse_body(body, content_type, batch_id)
    return [
        (f"{label}: parse", best_of(3, lambda: parse_body(body, content_type, batch_id))),
        (f"{label}: validate + hash", best_of(3, lambda: validate(raw, limits).content_hash())),
    ]


MODEL = "bench-ingest"


def prepare(database_url: str) -> tuple[Settings, Engine, int, str]:
    """Migrate, register the model every path writes into, mint a token.

    Returns (settings, engine, model id, token).
    """
    settings = Settings(database_url=database_url, migrate_on_start=False)
    upgrade(database_url)
    engine = create_db_engine(settings)
    with engine.begin() as connection:
        connection.execute(text("TRUNCATE models, api_tokens, model_segments CASCADE"))
    reset(engine)
    factory = create_session_factory(engine)
    with factory.begin() as session:
        spec = ModelCreate(name=MODEL, threshold=0.5, granularity="day", timezone="Europe/Paris")
        model_id = add_model(session, spec).id
        token = create_token(session, "bench", ["ingest"]).token
    return settings, engine, model_id, token


FLOOR = "calmon floor (no HTTP)"
BEST = "best floor (plain COPY)"
CLIENT = "client send (arrays)"
API_PATHS: dict[str, tuple[Callable[[Batch], bytes], str]] = {
    "columnar JSON via API": (columnar_body, "application/json"),
    "row JSON via API": (row_body, "application/json"),
    "CSV via API": (csv_body, "text/csv"),
}
WITH_FIELDS = " + amount, entity"
"""The suffix of a path's twin that sends the same rows with an amount and an entity."""


def without_fields(path: str) -> str:
    """The path a twin (``--row-fields``) is measured against: itself without the fields."""
    return path.removesuffix(WITH_FIELDS)


def warm_up(http: httpx.Client, api_paths: list[str]) -> None:
    """One small untimed batch per API path first: the server's first request of a kind pays
    for lazy imports and statement caches, which would weigh on a short run's total."""
    for number, path in enumerate(api_paths):
        (batch,) = make_batches(100, 100, tag="w")
        batch = dataclasses.replace(
            batch, batch_id=f"warm-up-{number}", ids=[f"w{number}-{i}" for i in batch.ids]
        )
        content_type = API_PATHS[path][1]
        post_batch(http, MODEL, API_PATHS[path][0](batch), content_type, batch.batch_id)


def send_with_client(client: CalmonClient, batch: Batch) -> float:
    """One batch through the client, from numpy arrays to the stored answer; seconds taken."""
    start = time.perf_counter()
    sent = client.send(
        MODEL,
        ids=batch.ids,
        timestamps=batch.micros.astype("datetime64[us]"),
        scores=batch.scores,
        labels=batch.labels,
        segments=batch.segments,
        amounts=batch.amounts,
        entities=batch.entities,
        prefix=batch.batch_id,
    )
    seconds = time.perf_counter() - start
    if sent.batches != 1 or sent.rows_inserted != len(batch.ids):
        raise RuntimeError(f"client: unexpected answer {sent}")
    return seconds


def round_order(paths: list[str], number: int) -> list[str]:
    """The order the paths write batch ``number`` in: rotating from one round to the next, and
    each twin (with amount and entity) right beside its path, first in every other round.

    A twin written 6 paths after its path (5 s later) met other moments of the machine's load:
    over 24 rounds the share's 95% interval spanned 16 points. Side by side, what slows one of
    the two slows both."""
    twins = set(paths) & {path + WITH_FIELDS for path in paths}
    pairs = [
        [path, path + WITH_FIELDS] if path + WITH_FIELDS in twins else [path]
        for path in paths
        if path not in twins
    ]
    start = number % len(pairs)
    rotated = pairs[start:] + pairs[:start]
    return [path for pair in rotated for path in (pair if number % 2 == 0 else pair[::-1])]


def run(
    database_url: str,
    total_rows: int,
    batch_rows: int,
    *,
    ids: str = "sequential",
    stored_rows: int = 0,
    with_csv: bool = True,
    with_row_json: bool = True,
    with_client: bool = True,
    row_fields: bool = False,
) -> list[PathResult]:
    """Every path writes every batch, interleaved: batch 1 by each path, then batch 2...

    All paths write into one model after ``stored_rows`` of its rows were stored, each with ids
    of its own, so all of them see the same table and index sizes and, batch by batch, the same
    load from the rest of the machine; the order of the paths rotates from one batch to the next.
    With ``row_fields``, each API path and the client have a twin sending amount and entity,
    which writes each batch right before or after its path (:func:`round_order`).
    """
    api_paths = [
        path
        for path in API_PATHS
        if (with_csv or path != "CSV via API") and (with_row_json or path != "row JSON via API")
    ]
    paths = [FLOOR, BEST, *api_paths, *([CLIENT] if with_client else [])]
    if row_fields:
        # The floors' twins are the bounds: the repository's write of the wider rows, and the
        # plain COPY's (what storing the two columns costs the database itself).
        paths += [path + WITH_FIELDS for path in paths]
    settings, engine, model_id, token = prepare(database_url)
    batches = {
        path: make_batches(
            total_rows,
            batch_rows,
            ids=ids,
            tag="abcdefghijkl"[number],
            row_fields=path.endswith(WITH_FIELDS),
        )
        for number, path in enumerate(paths)
    }
    latencies: dict[str, list[float]] = {path: [] for path in paths}
    factory = create_session_factory(engine)
    try:
        preload(engine, model_id, ids, stored_rows, datetime(2026, 11, 1, tzinfo=UTC))
        plant_sentinels(factory, model_id)
        with (
            running_server(database_url) as server,
            bearer_client(server.base_url, token) as http,
            CalmonClient(server.base_url, token, batch_rows=batch_rows, timeout=300) as client,
        ):
            warm_up(http, api_paths)
            for number in range(len(batches[FLOOR])):
                # Inputs are prepared before any timing: client-side encoding is not measured.
                floor_rows = {
                    path: staged_rows(model_id, batches[path][number])
                    for path in paths
                    if without_fields(path) == FLOOR
                }
                best_rows = {
                    path: best_floor_rows(staged_rows(model_id, batches[path][number]))
                    for path in paths
                    if without_fields(path) == BEST
                }
                bodies = {
                    path: API_PATHS[without_fields(path)][0](batches[path][number])
                    for path in paths
                    if without_fields(path) in api_paths
                }
                for path in round_order(paths, number):
                    batch = batches[path][number]
                    if without_fields(path) == FLOOR:
                        seconds = write_calmon_floor(factory, floor_rows[path])
                    elif without_fields(path) == BEST:
                        seconds = write_best_floor(factory, model_id, best_rows[path])
                    elif without_fields(path) == CLIENT:
                        seconds = send_with_client(client, batch)
                    else:
                        content_type = API_PATHS[without_fields(path)][1]
                        seconds = post_batch(
                            http, MODEL, bodies[path], content_type, batch.batch_id
                        )
                    latencies[path].append(seconds)
                print(f"batch {number + 1}/{len(batches[FLOOR])} done", file=sys.stderr, flush=True)
        with_fields = batches[paths[-1]][0] if row_fields else None
        costs = in_process_costs(batches[FLOOR][0], settings, with_fields)
    finally:
        reset(engine)
        engine.dispose()
    results = [
        PathResult(path, total_rows, sum(latencies[path]), latencies[path]) for path in paths
    ]
    report(results, costs, batch_rows, f"{ids} ids, {stored_rows:,} rows stored before")
    return results


def report(
    results: list[PathResult], costs: list[tuple[str, float]], batch_rows: int, setting: str
) -> None:
    floors = {result.name: result for result in results[:2]}
    floor, best = floors[FLOOR], floors[BEST]
    print(
        f"\ningestion, {floor.rows:,} rows in batches of {batch_rows:,} "
        f"(PostgreSQL, one run; {setting})"
    )
    print(
        f"{'path':40} {'rows/s':>8} {'median rows/s':>14} {'of calmon floor':>16} "
        f"{'of best floor':>14} {'p50 ms':>7} {'p99 ms':>7}"
    )
    for result in results:
        print(
            f"{result.name:40} {result.rows_per_second:8,.0f} "
            f"{result.median_rows_per_second:14,.0f} "
            f"{_ratio(result, floor):16.0%} {_ratio(result, best):14.0%} "
            f"{result.percentile(50) * 1e3:7.0f} {result.percentile(99) * 1e3:7.0f}"
        )
    twins = fields_ratios(results)
    if twins:
        print("\nwith amount and entity, against the same path without them (same run):")
        by_name = {result.name: result for result in results}
        for path, share in twins.items():
            without = by_name[without_fields(path)]
            total = without.seconds / by_name[path].seconds
            low, high = paired_share_interval(without, by_name[path])
            print(
                f"  {without_fields(path):24} {without.rows_per_second:8,.0f}"
                f" -> {by_name[path].rows_per_second:8,.0f} rows/s: {share:4.0%} (total time"
                f" {total:.1%}, 95% interval over the batch rounds {low:.1%} to {high:.1%})"
            )
    print(f"\nCPU steps of one {batch_rows:,}-row request, in-process (best of 3):")
    for label, seconds in costs:
        print(f"  {label:56} {seconds * 1e3:8.1f} ms")


def _ratio(result: PathResult, floor: PathResult) -> float:
    """``result``'s rows/s as a fraction of ``floor``'s, the lower of the two measures.

    Total-time and median-batch throughput disagree when a few batches stall (a checkpoint, a
    neighbour's load); taking the lower ratio never flatters the API.
    """
    return min(
        result.rows_per_second / floor.rows_per_second,
        result.median_rows_per_second / floor.median_rows_per_second,
    )


def ratios(results: list[PathResult], floor: str = FLOOR) -> dict[str, float]:
    """Each other path's rows/s as a fraction of ``floor``'s (the lower of the two measures)."""
    by_name = {result.name: result for result in results}
    return {
        result.name: _ratio(result, by_name[floor])
        for result in results
        if result.name not in (FLOOR, BEST)
    }


def fields_ratios(results: list[PathResult]) -> dict[str, float]:
    """Each twin's rows/s (with amount and entity) as a fraction of its path's without them,
    the lower of the two measures."""
    by_name = {result.name: result for result in results}
    return {
        result.name: _ratio(result, by_name[without_fields(result.name)])
        for result in results
        if result.name.endswith(WITH_FIELDS)
    }


def pooled_share(
    passes: Sequence[tuple[Sequence[float], Sequence[float]]], draws: int = 4000, seed: int = 0
) -> tuple[float, float, float]:
    """A twin's share of rows/s over ``passes`` (each: its path's batch times, the twin's):
    total time without over total time with, and the 95% interval of a paired bootstrap that
    resamples the batch rounds within each pass (both wrote batch b in the same round, so a
    round that the machine slowed counts for both; a pass's ids, sizes and load stay its own)."""
    rng = np.random.default_rng(seed)
    totals = np.zeros((draws, 2))
    for without, with_fields in passes:
        paired = np.array([without, with_fields])
        rounds = rng.integers(0, paired.shape[1], (draws, paired.shape[1]))
        totals += paired[:, rounds].sum(axis=2).T
    share = sum(map(sum, (p[0] for p in passes))) / sum(map(sum, (p[1] for p in passes)))
    low, high = np.quantile(totals[:, 0] / totals[:, 1], [0.025, 0.975])
    return float(share), float(low), float(high)


def paired_share_interval(without: PathResult, with_fields: PathResult) -> tuple[float, float]:
    """95% interval of one pass's share of rows/s for a twin (:func:`pooled_share`)."""
    _, low, high = pooled_share([(without.latencies, with_fields.latencies)])
    return low, high


def client_ratio(results: list[PathResult]) -> float:
    """The client's rows/s as a fraction of columnar JSON's (whose bodies were encoded before
    timing), the lower of the two measures."""
    by_name = {result.name: result for result in results}
    return _ratio(by_name[CLIENT], by_name["columnar JSON via API"])


def save_latencies(path: Path, setting: str, results: list[PathResult]) -> None:
    """Append one pass's batch times, by path, to the JSON-lines file ``path``
    (``python -m bench.ingest_pool`` pools the passes)."""
    line = {"setting": setting, "latencies": {r.name: r.latencies for r in results}}
    with path.open("a") as out:
        out.write(json.dumps(line) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = write_load_parser(__doc__, rows=1_000_000)
    parser.add_argument("--ids", choices=[*ID_PATTERNS, "both"], default="both")
    parser.add_argument(
        "--stored-rows", type=int, nargs="+", default=[0], help="rows stored before, per run"
    )
    parser.add_argument("--quick", action="store_true", help="floors and columnar JSON only")
    parser.add_argument(
        "--row-fields",
        action="store_true",
        help="a twin of each API path and the client that sends amount and entity too",
    )
    parser.add_argument(
        "--latencies-out",
        type=Path,
        help="append each pass's batch times to this JSON-lines file (bench.ingest_pool)",
    )
    args = parser.parse_args(argv)
    patterns = list(ID_PATTERNS) if args.ids == "both" else [args.ids]
    summary = []
    for stored in args.stored_rows:
        for pattern in patterns:
            results = run(
                args.database_url,
                args.rows,
                args.batch_rows,
                ids=pattern,
                stored_rows=stored,
                with_csv=not args.quick,
                with_row_json=not args.quick,
                with_client=not args.quick,
                row_fields=args.row_fields,
            )
            summary.append((pattern, stored, results))
            if args.latencies_out:
                save_latencies(args.latencies_out, f"{pattern} ids, {stored:,} stored", results)
    print("\nsummary: columnar JSON via API, rows/s and share of each floor (lower of 2 measures)")
    print(
        f"{'ids':11} {'stored':>10} {'calmon floor':>13} {'best floor':>11} {'API':>8} "
        f"{'of calmon':>10} {'of best':>8}"
    )
    met = True
    for pattern, stored, results in summary:
        by_name = {result.name: result for result in results}
        api = by_name["columnar JSON via API"]
        share = ratios(results, BEST)["columnar JSON via API"]
        met = met and share >= 0.70
        print(
            f"{pattern:11} {stored:10,} {by_name[FLOOR].rows_per_second:13,.0f} "
            f"{by_name[BEST].rows_per_second:11,.0f} {api.rows_per_second:8,.0f} "
            f"{ratios(results)['columnar JSON via API']:10.0%} {share:8.0%}"
        )
    print("target: columnar JSON >= 70% of the best floor:", "MET" if met else "MISSED")
    if args.row_fields:
        print("\nsummary: rows/s with amount and entity, share of without (lower of 2 measures)")
        kept = True
        for pattern, stored, results in summary:
            shares = fields_ratios(results)
            # The floors' writes of the wider rows are the bounds, not paths under test.
            bound, plain = shares.pop(FLOOR + WITH_FIELDS), shares.pop(BEST + WITH_FIELDS)
            kept = kept and min(shares.values()) >= 0.90
            listed = ", ".join(f"{without_fields(p)} {v:.0%}" for p, v in shares.items())
            print(
                f"{pattern:11} {stored:10,}  {listed} (the floors themselves: calmon's "
                f"{bound:.0%}, the plain COPY's {plain:.0%})"
            )
        print("target: every path with amount and entity >= 90%:", "MET" if kept else "MISSED")
        met = met and kept
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
