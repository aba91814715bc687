"""Peak memory of `calmon serve` for hostile ingest bodies (issue 16: a body's cost is bounded).

Each body goes to a fresh server process (SQLite, default limits); the number is the growth of
the process's peak resident memory (VmHWM) over its peak after a small warm-up batch, set against
CALMON_MAX_BODY_BYTES (the decoded size limit). Run: ``python -m bench.body_memory``.
"""

from __future__ import annotations

import argparse
import gzip
import random
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.ingest.body import SEPARATORS_PER_ROW
from app.services.tokens import create_token
from app.settings import Settings
from tests.support.server import LiveServer, running_server

MIB = 1024 * 1024
LIMIT = 64 * MIB  # the default CALMON_MAX_BODY_BYTES
MODEL = "bench"
Body = tuple[bytes, dict[str, str]]  # (bytes sent, headers)


def _gzip_json(document: bytes) -> Body:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
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


def long_strings() -> Body:
    """The largest parse that passes every limit: just under 64 MiB of rows whose ids are long
    random strings (incompressible enough for the ratio, few separators per byte)."""
    rng = random.Random(0)
    pool = [_text(rng, 4_000) for _ in range(64)]
    rows: list[dict[str, object]] = []
    size = 0
    while size < LIMIT - 8_192:
        row = {
            "id": pool[len(rows) % 64] + str(len(rows)),
            "timestamp": 1_793_000_000,
            "score": 0.5,
        }
        rows.append(row)
        size += 4_060
    return _gzip_json(orjson.dumps({"batch_id": "b", "rows": rows})[: LIMIT - 1] + b"]}")


def many_short_strings() -> Body:
    """Just under 64 MiB of columnar JSON holding as many strings as the separator limit lets
    through (the most Python objects a body under every limit can become)."""
    rng = random.Random(1)
    count = SEPARATORS_PER_ROW * 100_000 - 100
    length = LIMIT // count - 4
    ids = [_text(rng, length) for _ in range(count // 8)] * 8
    document = orjson.dumps({"batch_id": "b", "columns": {"id": ids}})
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
    return _gzip_json(orjson.dumps({"batch_id": "legit", "rows": rows}))


ATTACKS: dict[str, Callable[[], Body]] = {
    "legit 100k-row batch": legit_batch,
    "many alike rows (issue)": many_rows,
    "160k empty gzip members": empty_members,
    "padding bomb": padding_bomb,
    "long strings at 64 MiB": long_strings,
    "strings at the separator limit": many_short_strings,
}


def peak_kib(server: LiveServer) -> int:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def measure(url: str, token: str, body: Body) -> tuple[int, float, float]:
    """(status, peak growth in MiB, seconds) of one body on a fresh server."""
    content, headers = body
    auth = {"Authorization": f"Bearer {token}"}
    with running_server(url) as server, httpx.Client(base_url=server.base_url, timeout=600) as http:
        http.post("/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=auth)
        warm = {"batch_id": "warm", "rows": [{"id": "w", "timestamp": 1_793_000_000, "score": 0.1}]}
        http.post(f"/v1/models/{MODEL}/batches", json=warm, headers=auth)
        before = peak_kib(server)
        started = time.perf_counter()
        response = http.post(
            f"/v1/models/{MODEL}/batches", content=content, headers={**auth, **headers}
        )
        seconds = time.perf_counter() - started
        after = peak_kib(server)
        http.delete(f"/v1/models/{MODEL}", headers=auth)
    return response.status_code, (after - before) / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="substring of the attacks to run")
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
        for name, build in ATTACKS.items():
            if args.only and args.only not in name:
                continue
            body = build()
            status, growth, seconds = measure(url, token, body)
            print(
                f"| {name} | {len(body[0]) / MIB:.2f} MiB | {status} | {growth:.0f} MiB | "
                f"{growth * MIB / LIMIT:.2f} | {seconds:.2f} s |",
                flush=True,
            )


if __name__ == "__main__":
    main()
