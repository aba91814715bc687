"""Peak memory of `calmon serve` for hostile ingest bodies (issue 16: a body's cost is bounded).

Each body goes to a fresh server process (SQLite, default limits); the number is the growth of
the process's peak resident memory (VmHWM) over its peak after a small warm-up batch, set against
CALMON_MAX_BODY_BYTES (the decoded size limit). Run: ``python -m bench.body_memory``.

``--concurrent 4 40`` then sends N copies of the costliest body at once to one fresh server
(40 is the size of the server's thread pool): CALMON_MAX_CONCURRENT_INGEST (4) bounds how many
are decoded and parsed at once, so the peak should stay near 4 times one body's.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import random
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.ingest.body import SEPARATORS_PER_LABEL, SEPARATORS_PER_ROW
from app.services.tokens import create_token
from app.settings import Settings
from tests.support.server import LiveServer, running_server

MIB = 1024 * 1024
LIMIT = 64 * MIB  # the default CALMON_MAX_BODY_BYTES
MODEL = "bench"
FIELD_NAMES = ("id", "timestamp", "score", "label", "segment")
Body = tuple[bytes, dict[str, str]]  # (bytes sent, headers)


def _gzip_json(document: bytes) -> Body:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    return gzip.compress(document, compresslevel=6), headers


def _gzip_csv(document: bytes) -> Body:
    headers = {"Content-Type": "text/csv", "Content-Encoding": "gzip", "X-Batch-Id": "b"}
    return gzip.compress(document, compresslevel=6), headers


def many_rows() -> Body:
    """The issue's attack: 64 MiB of small, alike rows, gzip-compressed (~200 KB)."""
    row = b'{"id":"x","timestamp":1793000000,"score":0.5},'
    count = (LIMIT - 64) // len(row)
    return _gzip_json(
        b'{"batch_id":"b","rows":[' + row * count + b'{"id":"y","timestamp":1,"score":0}]}'
    )


def empty_members() -> Body:
    """160,000 empty gzip members (3.2 MB): once minutes of CPU."""
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    return gzip.compress(b"", mtime=0) * 160_000, headers


def padding_bomb() -> Body:
    """One valid row and 64 MiB of spaces (ratio ~1,000)."""
    valid = b'{"batch_id":"b","rows":[{"id":"a","timestamp":1793000000,"score":0.5}]}'
    return _gzip_json(valid + b" " * (LIMIT - len(valid)))


def _text(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=length))


def _long_string_rows(prefix: str = "", size: int = LIMIT) -> bytes:
    """Row JSON just under ``size`` bytes whose ids are long random strings (incompressible
    enough for the ratio, few separators per byte), each starting with ``prefix``."""
    rng = random.Random(0)
    pool = [_text(rng, 4_000) for _ in range(64)]
    rows: list[dict[str, object]] = []
    written = 0
    while written < size - 16_384:
        row = {
            "id": prefix + pool[len(rows) % 64] + str(len(rows)),
            "timestamp": 1_793_000_000,
            "score": 0.5,
        }
        rows.append(row)
        written += len(msgspec.json.encode(row)) + 1
    document = msgspec.json.encode({"batch_id": "b", "rows": rows})
    assert len(document) < size
    return document


def long_strings() -> Body:
    """The largest parse that passes every limit: row JSON of long ids, just under 64 MiB."""
    return _gzip_json(_long_string_rows())


def wide_strings() -> Body:
    """The same with one emoji starting each id: Python then stores every character of the id
    in 4 bytes (1 for ASCII), so the parsed strings weigh 4 times the body's bytes."""
    return _gzip_json(_long_string_rows("\U0001f600"))


def wide_strings_at_their_limit() -> Body:
    """The same under the quarter of the byte limit such a body may have: the largest one."""
    return _gzip_json(_long_string_rows("\U0001f600", LIMIT // 4))


def bmp_strings_at_their_limit() -> Body:
    """Ids starting with a character past U+00FF (2 bytes each in Python), under half the
    limit, the most such a body may have."""
    return _gzip_json(_long_string_rows("\u0100", LIMIT // 2))


def broken_json_with_nan() -> Body:
    """Long strings holding the word NaN in a body that is not JSON (one byte too many at the
    end): a failed parse of a body with NaN in it is parsed again to name the rows."""
    document = _long_string_rows().replace(b"0.5", b"NaN", 1)
    return _gzip_json(document + b"]")


def tiny_rows() -> Body:
    """Row JSON of as many tiny rows as the separator limit lets through (twice the row
    limit): each becomes a dict before the row limit is checked."""
    rng = random.Random(4)
    count = (SEPARATORS_PER_ROW * 100_000) // 4 - 100  # 4 separators a row
    rows = b",".join(
        b'{"id":"%s","timestamp":1,"score":0}' % _text(rng, 6).encode() for _ in range(count)
    )
    return _gzip_json(b'{"batch_id":"b","rows":[' + rows + b"]}")


def many_short_strings() -> Body:
    """Just under 64 MiB of columnar JSON holding as many strings as the separator limit lets
    through (the most Python objects a body under every limit can become)."""
    rng = random.Random(1)
    count = SEPARATORS_PER_ROW * 100_000 - 100
    length = LIMIT // count - 4
    ids = [_text(rng, length) for _ in range(count // 8)] * 8
    document = msgspec.json.encode({"batch_id": "b", "columns": {"id": ids}})
    assert len(document) < LIMIT
    return _gzip_json(document)


def csv_short_fields() -> Body:
    """Just under 64 MiB of CSV: as many lines of 5 fields as the row limit allows (a line
    past it is refused as it is read, so more fields need longer ones)."""
    rng = random.Random(1)
    lines = 100_000
    length = LIMIT // (lines * 5) - 2
    pool = [_text(rng, length) for _ in range(1_000)]
    body = "id,timestamp,score,label,segment\n" + "".join(
        ",".join(pool[(i + k) % 1000] for k in range(5)) + "\n" for i in range(lines)
    )
    document = body.encode()
    assert len(document) < LIMIT
    return _gzip_csv(document)


def string_rows() -> Body:
    """Row JSON just under 64 MiB: rows of 5 string fields (6 separators a row), as many as
    the separator limit lets through, the strings as long as the byte limit then allows."""
    rng = random.Random(5)
    count = (SEPARATORS_PER_ROW * 100_000) // 6 - 100
    overhead = len(b'{"id":"","timestamp":"","score":"","label":"","segment":""},')
    length = (LIMIT - 64) // count - overhead
    pool = [_text(rng, length // 5) for _ in range(1_000)]
    rows = [
        dict(zip(FIELD_NAMES, (pool[(i + k) % 1000] for k in range(5)), strict=True))
        for i in range(count)
    ]
    document = msgspec.json.encode({"batch_id": "b", "rows": rows})
    assert len(document) < LIMIT
    return _gzip_json(document)


def csv_long_fields() -> Body:
    """Just under 64 MiB of CSV lines with a long id (up to the csv module's field limit)."""
    rng = random.Random(0)
    pool = [_text(rng, 4_000) for _ in range(64)]
    lines = ["id,timestamp,score\n"]
    size = 0
    while size < LIMIT - 16_384:
        lines.append(f"{pool[len(lines) % 64]}{len(lines)},1793000000,0.5\n")
        size += len(lines[-1])
    return _gzip_csv("".join(lines).encode())


def label_entries() -> Body:
    """A label update just under 64 MiB: as many entries as the label separator budget lets
    through (3 separators each), two strings each."""
    rng = random.Random(6)
    count = (SEPARATORS_PER_LABEL * 100_000) // 3 - 100
    length = (LIMIT - 64) // count - len(b'{"id":"","label":""},')
    pool = [_text(rng, length // 2) for _ in range(1_000)]
    entries = [{"id": pool[i % 1000], "label": pool[(i + 1) % 1000]} for i in range(count)]
    document = msgspec.json.encode({"labels": entries})
    assert len(document) < LIMIT
    return _gzip_json(document)


def label_entries_at_row_limit() -> Body:
    """A label update just under 64 MiB of 100,000 entries (the row limit), long bad ids."""
    rng = random.Random(7)
    count = 100_000
    length = (LIMIT - 64) // count - len(b'{"id":"","label":1},')
    pool = [_text(rng, length) for _ in range(1_000)]
    entries = [{"id": pool[i % 1000], "label": 1} for i in range(count)]
    document = msgspec.json.encode({"labels": entries})
    assert len(document) < LIMIT
    return _gzip_json(document)


def legit_batch() -> Body:
    """A real 100,000-row batch (the row limit), for scale."""
    rng = random.Random(2)
    rows = [
        {
            "id": f"tx-{i:09d}",
            "timestamp": 1_793_000_000 + i,
            "score": round(rng.random(), 6),
            "label": rng.choice([0, 1, None]),
            "segment": rng.choice(["FR", "DE", "ES"]),
        }
        for i in range(100_000)
    ]
    return _gzip_json(msgspec.json.encode({"batch_id": "legit", "rows": rows}))


ATTACKS: dict[str, Callable[[], Body]] = {
    "legit 100k-row batch": legit_batch,
    "many alike rows (issue)": many_rows,
    "160k empty gzip members": empty_members,
    "padding bomb": padding_bomb,
    "row JSON, long strings at 64 MiB": long_strings,
    "row JSON, tiny rows at the separator limit": tiny_rows,
    "row JSON, 5 strings a row at the separator limit": string_rows,
    "columnar JSON, strings at the separator limit": many_short_strings,
    "CSV, long fields at 64 MiB": csv_long_fields,
    "CSV, 100k lines of 5 fields": csv_short_fields,
    "broken JSON holding NaN, 64 MiB": broken_json_with_nan,
    "row JSON, long strings with an emoji (4-byte chars)": wide_strings,
    "row JSON, long strings with an emoji, a quarter of 64 MiB": wide_strings_at_their_limit,
    "row JSON, long strings with U+0100, half of 64 MiB": bmp_strings_at_their_limit,
}


LABEL_ATTACKS: dict[str, Callable[[], Body]] = {
    "labels JSON, entries at the separator limit": label_entries,
    "labels JSON, 100k entries of long ids": label_entries_at_row_limit,
}


def peak_kib(server: LiveServer) -> int:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def measure(
    url: str, token: str, body: Body, copies: int = 1, route: str = "batches"
) -> tuple[list[int], float, float]:
    """(statuses, peak growth in MiB, seconds) of ``copies`` of one body sent at once to a
    fresh server, to ``/v1/models/{model}/{route}``."""
    content, headers = body
    auth = {"Authorization": f"Bearer {token}"}
    with running_server(url) as server, httpx.Client(base_url=server.base_url, timeout=600) as http:
        http.post("/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=auth)
        warm = {"batch_id": "warm", "rows": [{"id": "w", "timestamp": 1_793_000_000, "score": 0.1}]}
        http.post(f"/v1/models/{MODEL}/batches", json=warm, headers=auth)
        before = peak_kib(server)
        started = time.perf_counter()

        def send(_: int) -> int:
            with httpx.Client(base_url=server.base_url, timeout=600) as own:
                return own.post(
                    f"/v1/models/{MODEL}/{route}", content=content, headers={**auth, **headers}
                ).status_code

        with concurrent.futures.ThreadPoolExecutor(copies) as pool:
            statuses = sorted(pool.map(send, range(copies)))
        seconds = time.perf_counter() - started
        after = peak_kib(server)
        http.delete(f"/v1/models/{MODEL}", headers=auth)
    return statuses, (after - before) / 1024, seconds


def _statuses(statuses: list[int]) -> str:
    return ", ".join(
        f"{statuses.count(s)}x {s}" if len(statuses) > 1 else str(s) for s in sorted(set(statuses))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="substring of the attacks to run")
    parser.add_argument(
        "--concurrent",
        type=int,
        nargs="*",
        default=[],
        help="also send this many copies of the costliest body at once (e.g. 4 40)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{directory}/bench.sqlite3"
        upgrade(url)
        engine = create_db_engine(Settings(database_url=url))
        with create_session_factory(engine).begin() as session:
            token = create_token(session, "bench", ["admin", "ingest", "read"]).token
        engine.dispose()
        print(
            f"| body | sent | status | peak growth | x decoded limit ({LIMIT // MIB} MiB) | time |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        worst: tuple[float, str] = (0.0, "")
        targets = [(n, b, "batches") for n, b in ATTACKS.items()]
        targets += [(n, b, "labels") for n, b in LABEL_ATTACKS.items()]
        for name, build, route in targets:
            if args.only and args.only not in name:
                continue
            body = build()
            statuses, growth, seconds = measure(url, token, body, route=route)
            if route == "batches":  # the concurrency table sends batches
                worst = max(worst, (growth, name))
            print(
                f"| {name} | {len(body[0]) / MIB:.2f} MiB | {_statuses(statuses)} | "
                f"{growth:.0f} MiB | {growth * MIB / LIMIT:.2f} | {seconds:.2f} s |",
                flush=True,
            )
        if args.concurrent:
            _concurrent_table(url, token, worst, args.concurrent)


def _concurrent_table(url: str, token: str, single: tuple[float, str], counts: list[int]) -> None:
    growth_one, name = single
    body = ATTACKS[name]()
    print(f"\n{name}, N copies at once (CALMON_MAX_CONCURRENT_INGEST=4):\n")
    print(
        f"| N | statuses | peak growth | x one body | x decoded limit ({LIMIT // MIB} MiB) | time |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for copies in counts:
        statuses, growth, seconds = measure(url, token, body, copies)
        print(
            f"| {copies} | {_statuses(statuses)} | {growth:.0f} MiB | {growth / growth_one:.2f} | "
            f"{growth * MIB / LIMIT:.2f} | {seconds:.2f} s |",
            flush=True,
        )


if __name__ == "__main__":
    main()
