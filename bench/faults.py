"""Fault suite (issue 16): sustained ingest while PostgreSQL restarts and while a table is
locked, on a scratch PostgreSQL cluster of its own (never the shared one).

Clients post batches without pause and re-send a batch on 503 with the same batch_id, as a
client should; a prober reads /readyz every 100 ms. Afterwards: every answer was a 2xx or a
503, /readyz turned red soon after each fault started, and the rows acknowledged (a 2xx for
their batch) are exactly the rows stored. Run: ``python -m bench.faults`` (needs PostgreSQL's
server binaries; as root it runs them as the ``postgres`` user).
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
from sqlalchemy import create_engine, text

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.services.tokens import create_token
from app.settings import Settings
from bench.cluster import scratch_cluster
from tests.support.server import running_server

BATCH_ROWS = 500


@dataclass
class Tally:
    """What the clients and the prober saw."""

    statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: int = 0
    acknowledged_rows: int = 0
    readiness: list[tuple[float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(base: str, token: str, number: int, until: float, tally: Tally) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        batch = 0
        while time.monotonic() < until:
            batch_id = f"c{number}-b{batch}"
            rows = [
                {"id": f"{batch_id}-{i}", "timestamp": 1_793_000_000 + i, "score": i / BATCH_ROWS}
                for i in range(BATCH_ROWS)
            ]
            body = {"batch_id": batch_id, "rows": rows}
            while True:  # re-send on 503 until the batch is acknowledged
                try:
                    status = http.post("/v1/models/faults/batches", json=body).status_code
                except httpx.TransportError:
                    with tally.lock:
                        tally.transport_errors += 1
                    time.sleep(0.2)
                    continue
                with tally.lock:
                    tally.statuses[status] += 1
                    if status in (200, 201):
                        tally.acknowledged_rows += BATCH_ROWS
                if status != 503:
                    break
                time.sleep(0.2)
            batch += 1


def prober(base: str, started: float, until: float, tally: Tally) -> None:
    with httpx.Client(base_url=base, timeout=5) as http:
        while time.monotonic() < until:
            try:
                status = http.get("/readyz").status_code
            except httpx.TransportError:
                status = 0
            with tally.lock:
                tally.readiness.append((time.monotonic() - started, status))
            time.sleep(0.1)


def red_after(readiness: list[tuple[float, int]], fault_at: float) -> float | None:
    """Seconds from a fault's start to the first /readyz answer that was not 200."""
    for at, status in readiness:
        if at >= fault_at and status != 200:
            return at - fault_at
    return None


def lock_table(url: str, seconds: float) -> None:
    engine = create_engine(url)
    with engine.connect() as connection:
        connection.begin()
        connection.execute(text("LOCK TABLE predictions IN ACCESS EXCLUSIVE MODE"))
        time.sleep(seconds)
        connection.rollback()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=24.0)
    args = parser.parse_args()
    with scratch_cluster() as cluster:
        upgrade(cluster.url)
        engine = create_db_engine(Settings(database_url=cluster.url))
        with create_session_factory(engine).begin() as session:
            token = create_token(session, "faults", ["admin", "ingest", "read"]).token
        env = {"CALMON_READINESS_TIMEOUT_SECONDS": "1", "CALMON_LOG_LEVEL": "warning"}
        with running_server(cluster.url, env=env) as server:
            created = httpx.post(
                f"{server.base_url}/v1/models",
                json={"name": "faults", "threshold": 0.5},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert created.status_code == 201, created.text
            tally = Tally()
            started = time.monotonic()
            until = started + args.seconds
            threads = [
                threading.Thread(target=client, args=(server.base_url, token, n, until, tally))
                for n in range(args.clients)
            ]
            threads.append(
                threading.Thread(target=prober, args=(server.base_url, started, until, tally))
            )
            for thread in threads:
                thread.start()
            restart_at = args.seconds * 0.2
            lock_at = args.seconds * 0.55
            time.sleep(restart_at)
            cluster.pg_ctl("-m", "fast", "restart")
            time.sleep(max(lock_at - (time.monotonic() - started), 0))
            lock_table(cluster.url, seconds=4)
            for thread in threads:
                thread.join()
        with engine.connect() as connection:
            stored = connection.execute(text("SELECT count(*) FROM predictions")).scalar_one()
        engine.dispose()
    answers = ", ".join(f"{status}: {count}" for status, count in sorted(tally.statuses.items()))
    print("| clients | seconds | answers | transport errors | acknowledged rows | stored rows |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    print(
        f"| {args.clients} | {args.seconds:.0f} | {answers} | {tally.transport_errors} | "
        f"{tally.acknowledged_rows} | {stored} |"
    )
    print()
    print("| fault | started at | /readyz red after |")
    print("| --- | ---: | ---: |")
    for name, at in (
        ("PostgreSQL restart (fast)", restart_at),
        ("predictions locked 4 s", lock_at),
    ):
        red = red_after(tally.readiness, at)
        shown = "never" if red is None else f"{red:.2f} s"
        print(f"| {name} | {at:.1f} s | {shown} |")
    unexpected = {s: c for s, c in tally.statuses.items() if s not in (200, 201, 503)}
    exact = stored == tally.acknowledged_rows
    print(f"\nonly 2xx and 503: {not unexpected}; acknowledged == stored: {exact}")
    raise SystemExit(0 if exact and not unexpected else 1)


if __name__ == "__main__":
    main()
