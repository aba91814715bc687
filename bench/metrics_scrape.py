"""What one /metrics scrape costs as models and segments grow, with and without the series budget.

    python -m bench.metrics_scrape                      # 10x10, 100x10, 1000x10 on SQLite
    python -m bench.metrics_scrape --sizes 1000x10 --database-url postgresql+psycopg://...

Each size gets a fresh database seeded with what the worker leaves behind for every (model,
segment): a judged window with all eleven metrics (regular and calibrated, with intervals), its
nowcast and its early estimate, and an alert state. A real `calmon serve` then answers: one
scrape alone (its time, bytes and series), then four scrapers at once (the wall time until the
last has its page, and how many renderings served them), and the server's peak memory. Budget
"default" is CALMON_METRICS_MAX_SERIES' default; "none" lifts it out of reach.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert
from sqlalchemy.orm import Session

from app.db.engine import create_db_engine, create_session_factory
from app.db.metrics_tables import AlertStateRow, WindowMetrics, WindowMetricValue
from app.db.migrate import upgrade
from app.metrics import METRIC_NAMES
from app.settings import Settings
from tests.support.databases import settings_for
from tests.support.nowcasts import stored_example
from tests.support.server import running_server
from tests.support.worker_data import new_model
from tests.support.worker_output import EARLY

DEFAULT_BUDGET = Settings.model_fields["metrics_max_series"].default
SCRAPE_TOKEN = "bench-scrape-token"


def seed(session: Session, models: int, segments: int) -> None:
    """``models`` models of ``segments`` segments each ("all" and the rest), as the worker
    leaves them: a judged window with every metric, its nowcast, an early estimate on the next
    window, and an alert state."""
    now = datetime.now(UTC).replace(microsecond=0)
    judged = now.replace(hour=0, minute=0, second=0) - timedelta(days=2)
    waiting = judged + timedelta(days=1)
    nowcast = stored_example(pi=0.05)
    names = ["all", *(f"segment-{k}" for k in range(1, segments))]
    for m in range(models):
        model = new_model(session, name=f"model-{m:04d}", threshold=0.5)
        windows, values, alerts = [], [], []
        for segment in names:
            common = {"model_id": model.id, "segment": segment, "pi0": 0.005, "threshold": 0.5}
            for start, mature in ((judged, True), (waiting, False)):
                windows.append(
                    {
                        **common,
                        "window_start": start,
                        "rows_total": 10_000,
                        "labelled": 10_000 if mature else 300,
                        "positives": 50 if mature else 31,
                        "negatives": 9_950 if mature else 269,
                        "label_coverage": 1.0 if mature else 0.03,
                        "pi": 0.005,
                        "verdict": "stable" if mature else "insufficient_data",
                        "source_version": 1,
                        "duration_seconds": 0.1,
                        "mature": mature,
                        "judged_at": now if mature else None,
                        "nowcast": nowcast,
                        "nowcast_reference_version": 1,
                        "early": None if mature else EARLY,
                        "computed_at": now,
                    }
                )
            values += [
                {
                    "model_id": model.id,
                    "window_start": judged,
                    "segment": segment,
                    "metric": metric,
                    "regular": 0.5,
                    "regular_ci_low": 0.45,
                    "regular_ci_high": 0.55,
                    "calibrated": 0.6,
                    "calibrated_ci_low": 0.55,
                    "calibrated_ci_high": 0.65,
                    "prior_effect": 0.01,
                    "performance_effect": -0.02,
                }
                for metric in METRIC_NAMES
            ]
            alerts.append(
                {
                    "model_id": model.id,
                    "segment": segment,
                    "reference_version": 1,
                    "state": "ok",
                    "threshold": 10.0,
                    "last_window": judged,
                    "reference_value": 0.62,
                    "updated_at": now,
                }
            )
        session.execute(insert(WindowMetrics), windows)
        session.execute(insert(WindowMetricValue), values)
        session.execute(insert(AlertStateRow), alerts)


@dataclass(frozen=True)
class Scrape:
    """One size's measurements."""

    alone_seconds: float
    page_bytes: int
    series: int
    together_seconds: float
    renderings: int
    peak_rss_mb: float


def _get(url: str) -> httpx.Response:
    response = httpx.get(url, headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"}, timeout=120)
    response.raise_for_status()
    return response


def _series(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def _renderings(text: str) -> float:
    """How many times the page was rendered (the process's /metrics request counter)."""
    for line in text.splitlines():
        if line.startswith("calmon_http_request_duration_seconds_count") and '"/metrics"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(database_url: str, budget: int, scrapers: int) -> Scrape:
    """Scrape a seeded database through a real server: alone, then ``scrapers`` at once."""
    env = {"CALMON_METRICS_TOKEN": SCRAPE_TOKEN, "CALMON_METRICS_MAX_SERIES": str(budget)}
    env |= {"CALMON_WORKER_EMBEDDED": "false"}
    with (
        tempfile.TemporaryDirectory() as logs,
        running_server(database_url, env=env, log_dir=Path(logs), ready_timeout=120) as server,
    ):
        url = f"{server.base_url}/metrics"
        started = time.perf_counter()
        alone = _get(url)
        alone_seconds = time.perf_counter() - started
        time.sleep(5.1)  # past the page's TTL: the scrapers below find no page to share yet
        pages: list[str] = []
        threads = [
            threading.Thread(target=lambda: pages.append(_get(url).text)) for _ in range(scrapers)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        together = time.perf_counter() - started
        # Every page of one rendering carries the same request count; distinct counts are
        # distinct renderings.
        renderings = len({_renderings(page) for page in pages})
        return Scrape(
            alone_seconds,
            len(alone.content),
            _series(alone.text),
            together,
            renderings,
            _peak_rss_mb(server.process.pid),
        )


def _sizes(text: str) -> tuple[int, int]:
    models, segments = text.lower().split("x")
    return int(models), int(segments)


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["10x10", "100x10", "1000x10"])
    parser.add_argument("--scrapers", type=int, default=4)
    parser.add_argument(
        "--database-url",
        default=None,
        help="an empty PostgreSQL database (one size per run); default: a SQLite file per size",
    )
    parser.add_argument("--budgets", nargs="+", default=["default", "none"])
    args = parser.parse_args(argv)
    if args.database_url and len(args.sizes) > 1:
        parser.error("--database-url takes one size (each size needs an empty database)")
    print(
        "| models x segments | budget | series | bytes | one scrape (s) "
        f"| {args.scrapers} at once (s) | renderings | peak RSS (MB) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for size in args.sizes:
            models, segments = _sizes(size)
            url = args.database_url or f"sqlite:///{Path(scratch, size + '.sqlite3').as_posix()}"
            upgrade(url)
            engine = create_db_engine(settings_for(url))
            try:
                with create_session_factory(engine).begin() as session:
                    seed(session, models, segments)
            finally:
                engine.dispose()
            for budget_name in args.budgets:
                budget = DEFAULT_BUDGET if budget_name == "default" else 10**9
                got = measure(url, budget, args.scrapers)
                print(
                    f"| {models:,} x {segments} | {budget_name} | {got.series:,} "
                    f"| {got.page_bytes:,} | {got.alone_seconds:.2f} "
                    f"| {got.together_seconds:.2f} | {got.renderings} | {got.peak_rss_mb:.0f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
