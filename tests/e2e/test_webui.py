"""The web UI in a real browser (system Chromium) against a real `calmon serve`.

One server on SQLite with its embedded worker, seeded over HTTP with two models: ``shop``, whose
fraud rate swings every day and whose model degrades from day 40 (two segments, ``web`` and
``store``), and ``steady``, whose fraud rate swings and nothing else. Every page is loaded with
requests to any other origin blocked, and must show zero console errors and zero failed
requests; the numbers on screen are compared with the API's for the same window. Screenshots go
to docs/img/, where the docs site's web UI page (docs/web-ui.md) takes them from, only when
``CI=true`` or ``CALMON_WRITE_SCREENSHOTS=1`` (a local run would otherwise rewrite tracked
files); else to a temporary directory.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import numpy as np
import pytest

from app.db.engine import create_db_engine, create_session_factory
from tests.support.browser import Browser, Page, chromium, require_chromium, watched_page
from tests.support.databases import settings_for
from tests.support.server import REPO_ROOT, LiveServer, running_server
from tests.support.streams import Day, StreamSpec, batch_body, day_start, post_batch, stream
from tests.support.waiting import wait_for
from tests.support.webui_pages import (
    SCREENSHOTS,
    make_token,
    number,
    open_page,
    printed_missing_values,
    same,
    screenshot_dir,
    shown_value,
    wait_ready,
)
from tests.support.worker_data import find_model_id, insert_rows

pytestmark = pytest.mark.e2e

ENV = {
    "CALMON_WORKER_POLL_SECONDS": "0.2",
    "CALMON_WORKER_HEARTBEAT_SECONDS": "0.5",
    "CALMON_BOOTSTRAP_REPLICATES": "200",
    "CALMON_WORKER_RETRY_SECONDS": "0.5",  # the broken window parks in 1.5 s, not 15
}
# The end-to-end tests' "both" stream: prior drift throughout, the model sliding from day 40.
SHOP = StreamSpec("both", days=46, rows_per_day=8_000, pi_low=0.01, pi_high=0.04, seed=13)
STEADY = StreamSpec("prior_drift", days=30, rows_per_day=6_000, seed=11)
SEGMENTS = ("web", "store")
PARIS = "Europe/Paris"
PARIS_STREAM = StreamSpec("prior_drift", days=5, rows_per_day=2_000, seed=17)
PARIS_GAP = 2  # the day the Paris model received nothing
UNLABELLED_DAYS = 2  # shop's newest days wait for labels: only the estimate from scores shows
DROPS = {"performance_drop", "both"}
SHOP_ALERT_CAPACITY = 80
SHOP_REVIEW_COST = 2.5
# ui-model.png and ui-window-early.png are taken by test_webui_early.py (a model whose newest
# windows wait for labels, with early estimates).
WEB_UI_IMAGES = (
    "ui-models.png",
    "ui-model.png",
    "ui-window.png",
    "ui-window-early.png",
    "ui-whatif.png",
    "ui-compare.png",
)


@dataclass(frozen=True)
class Seeded:
    """The running server, a read token and an API client holding it."""

    server: LiveServer
    read_token: str
    ingest_only_token: str
    steady_only_token: str
    api: httpx.Client
    database_url: str


def _halves(day: Day) -> list[tuple[str, Day]]:
    """The day's rows split between the two segments."""
    return [
        (segment, dataclasses.replace(day, scores=day.scores[k::2], labels=day.labels[k::2]))
        for k, segment in enumerate(SEGMENTS)
    ]


def _paris_body(day: Day) -> dict[str, Any]:
    """The day's rows stamped at noon UTC: one Paris day each (the window of local midnight)."""
    body = batch_body(day, prefix="paris")
    noon = day.window_start.replace(hour=12).strftime("%Y-%m-%dT%H:%M:%SZ")
    body["columns"]["timestamp"] = [noon] * len(body["columns"]["timestamp"])
    return body


def _settled(client: httpx.Client, windows: dict[str, int]) -> bool:
    for name, count in windows.items():
        status = client.get(f"/v1/models/{name}/status").json()
        assert not status["failing_windows"], status
        if status["windows"] != count or status["dirty_windows"]:
            return False
    return True


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    require_chromium()  # before the seeding's cost
    directory = tmp_path_factory.mktemp("webui")
    database_url = f"sqlite:///{(directory / 'calmon.sqlite3').as_posix()}"
    # Every row is sent before any window is computed: a worker racing the sends judged each
    # window with whatever history had arrived by then, so the verdicts (and the drop the page
    # must show) depended on the machine's load. The worker starts with the second server.
    seeding = {**ENV, "CALMON_WORKER_EMBEDDED": "false"}
    with running_server(database_url, env=seeding, log_dir=directory) as server:
        admin = make_token(database_url, "seed", "admin", "ingest", "read")
        headers = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=server.base_url, timeout=120.0, headers=headers) as client:
            for name in ("shop", "steady", "fresh", "paris"):  # fresh: registered, no rows yet
                spec: dict[str, Any] = {"name": name, "threshold": 1.5}
                if name == "paris":  # windows are Paris days; the third day sent nothing
                    spec["timezone"] = PARIS
                if name == "shop":  # the team checks 80 alerts a day, at 2.5 each
                    spec["alert_capacity"] = SHOP_ALERT_CAPACITY
                    spec["review_cost"] = SHOP_REVIEW_COST
                response = client.post("/v1/models", json=spec)
                assert response.status_code == 201, response.text
            for day in stream(SHOP):
                for segment, half in _halves(day):
                    body = batch_body(half, prefix=f"shop-{segment}", segment=segment)
                    # Transaction amounts: the frauds larger, fixed by the day and segment.
                    rng = np.random.default_rng([day.index, len(segment)])
                    amounts = rng.lognormal(3.0 + half.labels, 1.0).round(2)
                    body["columns"]["amount"] = amounts.tolist()
                    # Cards of three consecutive transactions.
                    cards = [f"{segment}-{day.index}-{i // 3}" for i in range(amounts.size)]
                    body["columns"]["entity"] = cards
                    if day.index >= SHOP.days - UNLABELLED_DAYS:
                        body["columns"]["label"] = [None] * half.scores.size
                    post_batch(client, "shop", body)
            for day in stream(STEADY):
                post_batch(client, "steady", batch_body(day, prefix="steady"))
            for day in stream(PARIS_STREAM):
                if day.index != PARIS_GAP:
                    post_batch(client, "paris", _paris_body(day))
    with running_server(database_url, env=ENV, log_dir=directory) as server:
        with httpx.Client(base_url=server.base_url, timeout=120.0, headers=headers) as client:
            windows = {"shop": SHOP.days, "steady": STEADY.days, "paris": PARIS_STREAM.days - 1}
            wait_for(lambda: _settled(client, windows), "every window computed", timeout=300)
        read = make_token(database_url, "ui", "read")
        ingest_only = make_token(database_url, "no-read", "ingest")
        steady_only = make_token(database_url, "steady-team", "read", models=["steady"])
        with httpx.Client(
            base_url=server.base_url, timeout=60.0, headers={"Authorization": f"Bearer {read}"}
        ) as api:
            yield Seeded(server, read, ingest_only, steady_only, api, database_url)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _open(page: Page, seeded: Seeded, fragment: str) -> float:
    return open_page(page, seeded.server.base_url, seeded.read_token, fragment)


def _series(seeded: Seeded, model: str, segment: str = "all") -> list[dict[str, Any]]:
    response = seeded.api.get(
        f"/v1/models/{model}/metrics", params={"metric": "average_precision", "segment": segment}
    )
    assert response.status_code == 200, response.text
    points: list[dict[str, Any]] = response.json()["points"]
    return points


def test_models_page_lists_worst_first_with_the_api_values(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "")
        rows = page.locator("#models-table tbody tr")
        keys = [
            (row.get_attribute("data-model"), row.get_attribute("data-segment"))
            for row in rows.all()
        ]
        page.screenshot(path=shots / "ui-models.png", full_page=True)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert ("shop", "all") in keys
    assert ("steady", "all") in keys
    assert keys[-1] == ("fresh", "all")  # no windows yet: listed, last
    assert {s for m, s in keys if m == "shop"} == {"all", "web", "store"}
    alerts = seeded.api.get("/v1/models/shop/alerts").json()
    assert alerts["state"] == "drop"
    assert keys[0][0] == "shop"  # the dropping model first
    shop_all = next(s for s in alerts["segments"] if s["segment"] == "all")
    judged = next(
        p for p in _series(seeded, "shop") if p["window_start"] == shop_all["newest_judged_window"]
    )
    with watched_page(browser, seeded.server.base_url) as (page, _):
        _open(page, seeded, "")
        row = 'tr[data-model="shop"][data-segment="all"]'
        assert page.locator(f"{row} td.state").get_attribute("data-state") == "drop"
        calibrated = shown_value(page, f'{row} td[data-field="calibrated"]')
        reference = shown_value(page, f'{row} td[data-field="reference"]')
    assert same(calibrated, judged["calibrated"], 5.1e-5)
    assert same(reference, shop_all["reference_average_precision"], 5.1e-5)


def test_models_page_folds_segments_and_draws_trends(seeded: Seeded, browser: Browser) -> None:
    """A model's segments sit under it (its whole first), folded unless they drop, and open with
    its button; each row draws the trend of its newest mature windows: calibrated AP against
    the reference, and pi."""
    alerts = seeded.api.get("/v1/models/shop/alerts").json()
    dropping = {s["segment"] for s in alerts["segments"] if s["state"] == "drop"} - {"all"}
    steady = [p for p in _series(seeded, "steady") if p["mature"]][-30:]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "")
        keys = [
            (row.get_attribute("data-model"), row.get_attribute("data-segment"))
            for row in page.locator("#models-table tbody tr").all()
        ]
        shown_before = {
            segment: page.locator(f'tr[data-model="shop"][data-segment="{segment}"]').is_visible()
            for segment in SEGMENTS
        }
        page.click('button[data-fold="shop"]')
        shown_after = {
            segment: page.locator(f'tr[data-model="shop"][data-segment="{segment}"]').is_visible()
            for segment in SEGMENTS
        }
        drawn = page.locator('tr[data-model="steady"][data-segment="all"] td[data-field="trend"]')
        points = drawn.get_attribute("data-points")
        lines = drawn.locator("polyline.spark-line").count()
        assert not log.problems(), log.problems()
    shop = [segment for model, segment in keys if model == "shop"]
    assert shop[0] == "all"
    assert keys.index(("shop", "all")) + len(shop) - 1 == keys.index(("shop", shop[-1]))
    assert shown_before == {segment: segment in dropping for segment in SEGMENTS}
    assert all(shown_after.values())
    assert points == str(len([p for p in steady if p["calibrated"] is not None]))
    assert lines == 2


def test_model_page_shows_the_drop_in_the_verdict_strip(seeded: Seeded, browser: Browser) -> None:
    points = _series(seeded, "shop")
    with watched_page(browser, seeded.server.base_url) as (page, log):
        render_ms = _open(page, seeded, "#/models/shop")
        verdicts = [
            cell.get_attribute("data-verdict")
            for cell in page.locator("#verdict-strip .cell").all()
        ]
        newest = points[-1]
        summary = "#newest-window"
        shown = {
            field: shown_value(page, f'{summary} td[data-field="{field}"]')
            for field in ("regular", "calibrated", "pi", "pi0", "coverage")
        }
        charts = page.locator(".chart canvas").count()
        page.wait_for_selector("#catalogue-table")  # drawn after the page, when it arrives
        missing = printed_missing_values(page)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    print(f"\nmodel page, {len(points)} windows: drawn in {render_ms:.0f} ms")
    assert verdicts == [p["verdict"] for p in points]
    assert not DROPS & set(verdicts[: SHOP.change_day])
    assert DROPS & set(verdicts[SHOP.change_day :])
    assert charts == 5
    assert not missing, missing
    assert same(shown["regular"], newest["regular"], 5.1e-5)
    assert same(shown["calibrated"], newest["calibrated"], 5.1e-5)
    assert same(shown["pi"], newest["pi"], 5.1e-6)
    assert same(shown["pi0"], newest["pi0"], 5.1e-6)
    assert same(shown["coverage"], newest["label_coverage"], 5.1e-4)
    # The unlabelled days carry only the estimate from scores, drawn as such.
    assert newest["label_coverage"] == 0.0
    assert newest["nowcast"] is not None
    assert newest["nowcast"]["pi"] is not None


def test_model_page_shows_the_alert_budget_and_the_threshold_advice_as_the_api_does(
    seeded: Seeded, browser: Browser
) -> None:
    """shop has an alert budget: its newest judged window's alerts against it and its
    precision at k, as the API serves them, and the threshold advice's table; steady has no
    budget, and no such table."""

    def series(metric: str) -> dict[str, dict[str, Any]]:
        response = seeded.api.get("/v1/models/shop/metrics", params={"metric": metric})
        assert response.status_code == 200, response.text
        return {p["window_start"]: p for p in response.json()["points"]}

    top, alerts, best = series("precision_at_k"), series("alerts"), series("precision_at_k_max")
    cards = series("entity_precision_at_k")
    newest = max(start for start, p in top.items() if p["mature"])
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        table = page.locator("#alert-budget")
        shown_window = table.get_attribute("data-window")
        alerts_text = table.locator('td[data-field="alerts"]').inner_text()
        shown = {
            field: shown_value(page, f'#alert-budget td[data-field="{field}"]')
            for field in (
                "precision_at_k",
                "calibrated_precision_at_k",
                "precision_at_k_max",
                "entity_precision_at_k",
                "calibrated_entity_precision_at_k",
            )
        }
        page.wait_for_selector("#threshold-advice")  # drawn when it arrives
        advice_shown = {
            row: {
                field: shown_value(
                    page, f'#advice-table tr[data-advice="{row}"] td[data-field="{field}"]'
                )
                for field in ("threshold", "precision", "recall", "alerts")
            }
            for row in ("current", "within_capacity", "restoring_precision")
        }
        source = page.locator("#fraud-rate-now").get_attribute("data-source")
        _open(page, seeded, "#/models/steady")
        steady_tables = page.locator("#alert-budget").count()
        assert not log.problems(), log.problems()
    assert shown_window == newest
    count = int(alerts[newest]["regular"])
    assert alerts_text.startswith(f"{count} of {SHOP_ALERT_CAPACITY} ")
    assert same(shown["precision_at_k"], top[newest]["regular"], 5.1e-5)
    assert same(shown["calibrated_precision_at_k"], top[newest]["calibrated"], 5.1e-5)
    assert same(shown["precision_at_k_max"], best[newest]["regular"], 5.1e-5)
    assert cards[newest]["regular"] is not None
    assert same(shown["entity_precision_at_k"], cards[newest]["regular"], 5.1e-5)
    assert same(shown["calibrated_entity_precision_at_k"], cards[newest]["calibrated"], 5.1e-5)
    assert steady_tables == 0
    advice = seeded.api.get("/v1/models/shop/threshold-advice").json()
    assert advice["reason"] is None, advice
    assert source == advice["fraud_rate"]["source"]
    for row, shown_row in advice_shown.items():
        expected = advice[row]
        assert expected is not None, (row, advice[f"{row}_reason"] if row != "current" else "")
        assert same(shown_row["threshold"], expected["threshold"], 5.1e-5)
        assert same(shown_row["precision"], expected["precision"], 5.1e-5)
        assert same(shown_row["recall"], expected["recall"], 5.1e-5)
        assert shown_row["alerts"] == round(expected["alerts"])


def test_model_page_shows_the_money_caught_as_the_api_does(
    seeded: Seeded, browser: Browser
) -> None:
    """shop's rows carry amounts and it has a review cost: the newest judged window's value
    recall, value precision and net savings as the API serves them; steady's rows carry no
    amount, and it gets no such table."""

    def series(metric: str) -> dict[str, dict[str, Any]]:
        response = seeded.api.get("/v1/models/shop/metrics", params={"metric": metric})
        assert response.status_code == 200, response.text
        return {p["window_start"]: p for p in response.json()["points"]}

    recall, precision, savings = (
        series(m) for m in ("value_recall", "value_precision", "net_savings")
    )
    newest = max(start for start, p in recall.items() if p["mature"])
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        table = page.locator("#money-caught")
        shown_window = table.get_attribute("data-window")
        shown = {
            field: shown_value(page, f'#money-caught td[data-field="{field}"]')
            for field in ("value_recall", "value_precision", "net_savings")
        }
        shown_calibrated = shown_value(
            page, '#money-caught td[data-field="calibrated_net_savings"]'
        )
        _open(page, seeded, "#/models/steady")
        steady_tables = page.locator("#money-caught").count()
        assert not log.problems(), log.problems()
    assert shown_window == newest
    assert recall[newest]["regular"] is not None
    assert same(shown["value_recall"], recall[newest]["regular"], 5.1e-4)
    assert same(shown["value_precision"], precision[newest]["regular"], 5.1e-4)
    assert same(shown["net_savings"], savings[newest]["regular"], 0.0051)
    assert same(shown_calibrated, savings[newest]["calibrated"], 0.0051)
    assert steady_tables == 0


def test_segment_picker_switches_the_series(seeded: Seeded, browser: Browser) -> None:
    web = _series(seeded, "shop", "web")
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        page.select_option("#segment-picker", "web")
        wait_ready(page, "#/models/shop?segment=web")
        verdicts = [
            cell.get_attribute("data-verdict")
            for cell in page.locator("#verdict-strip .cell").all()
        ]
        coverage = shown_value(page, '#newest-window td[data-field="coverage"]')
        assert not log.problems(), log.problems()
    assert verdicts == [p["verdict"] for p in web]
    assert same(coverage, web[-1]["label_coverage"], 5.1e-4)


def test_window_page_shows_every_metric_as_the_api_does(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    points = _series(seeded, "shop")
    drop = next(p for p in points if p["verdict"] in DROPS)
    start = drop["window_start"]
    detail = seeded.api.get(f"/v1/models/shop/windows/{start}").json()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        page.click(f'#verdict-strip .cell[data-window="{start}"]')  # a mark opens its window
        page.wait_for_selector(
            'body[data-ready^="#/models/shop/windows/"]', state="attached", timeout=30_000
        )
        counts = {
            key: int(page.locator(f'#confusion td[data-count="{key}"]').inner_text())
            for key in ("tp", "fp", "fn", "tn")
        }
        shown: dict[str, dict[str, str]] = {}
        for metric in detail["metrics"]:
            row = f'#metrics-table tr[data-metric="{metric}"]'
            shown[metric] = {
                variant: page.locator(f'{row} td[data-variant="{variant}"]').inner_text()
                for variant in ("regular", "calibrated")
            }
        verdict = page.locator("#verdict").get_attribute("data-verdict")
        curves = page.locator("#chart-pr canvas").count()
        roc = page.locator("#chart-roc canvas").count()
        gains = page.locator("#chart-pr-gain canvas").count()
        gain_legend = page.locator("#chart-pr-gain .u-legend .u-series").count()
        missing = printed_missing_values(page)
        page.screenshot(path=shots / "ui-window.png", full_page=True)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert counts == detail["counts"]
    assert verdict == detail["verdict"] in DROPS
    assert curves == 1
    # ROC and PR-Gain (as measured and at pi0: the x series and two curves) beside it.
    assert detail["roc"]["fpr"]
    assert detail["pr_gain"]["calibrated"]["recall_gain"]
    assert roc == gains == 1
    assert gain_legend == 3
    assert not missing, missing
    assert set(shown) == set(detail["metrics"])
    for metric, values in detail["metrics"].items():
        for variant in ("regular", "calibrated"):
            expected = values[variant]
            if expected is None:
                assert shown[metric][variant] == "–", (metric, variant)
            else:
                assert number(shown[metric][variant]) == pytest.approx(expected, abs=5.1e-5), (
                    metric,
                    variant,
                )


def test_pages_of_a_window_without_labels_and_a_model_without_windows(
    seeded: Seeded, browser: Browser
) -> None:
    newest = _series(seeded, "shop")[-1]
    detail = seeded.api.get(f"/v1/models/shop/windows/{newest['window_start']}").json()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, f"#/models/shop/windows/{newest['window_start']}?segment=all")
        estimate = page.locator("#nowcast").inner_text()
        verdict = page.locator("#verdict").get_attribute("data-verdict")
        waiting = page.locator("#maturity").get_attribute("data-mature")
        measured = page.locator("#metrics-table").count()
        missing = printed_missing_values(page)
        assert not log.problems(), log.problems()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/fresh")
        cells = page.locator("#verdict-strip .cell").count()
        assert not log.problems(), log.problems()
    assert detail["n"] == 0
    assert verdict == detail["verdict"] == "insufficient_data"
    # Not mature: its measured values are withheld, said once instead of a table of dashes.
    assert detail["mature"] is False
    assert waiting == "false"
    assert measured == 0
    assert not missing, missing
    assert "Not measured" in estimate
    assert f"{100 * detail['nowcast']['pi']:.3f}%" in estimate
    assert cells == 0


def _cell(page: Page, selector: str) -> tuple[float | None, list[float] | None]:
    """A number and its printed interval ('0.4321 [0.4000, 0.4600]'), dashes as None."""
    text = page.locator(selector).first.inner_text()
    value, _, rest = text.partition(" [")
    ci = [number(part) for part in rest.rstrip("]").split(", ")] if rest else None
    return (None if value.strip() == "–" else number(value)), ci


def _same_ci(shown: list[float] | None, api: list[float] | None, abs_: float) -> bool:
    if api is None or shown is None:
        return shown is None and api is None
    return shown == pytest.approx(api, abs=abs_)


def test_segments_side_by_side_show_the_api_values(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    """The segments page (from the model page's link) shows each segment's calibrated values
    and differences as GET .../segments/compare gives them, and the baseline picker switches
    the comparison to a segment."""
    first, second = sorted(SEGMENTS)
    expected = seeded.api.get("/v1/models/shop/segments/compare").json()
    against = seeded.api.get("/v1/models/shop/segments/compare", params={"baseline": first}).json()

    def read(page: Page) -> dict[str, dict[str, tuple[float | None, float | None]]]:
        """Per segment row and metric: the value, and the difference (None: the baseline)."""
        shown: dict[str, dict[str, tuple[float | None, float | None]]] = {}
        for segment in ("all", first, second):
            shown[segment] = {}
            for metric in ("average_precision", "precision", "recall"):
                cell = f'#segments-table tr[data-segment="{segment}"] td[data-metric="{metric}"]'
                difference = f'{cell} span[data-field="difference"]'
                is_baseline = page.locator(difference).inner_text() == "baseline"
                shown[segment][metric] = (
                    shown_value(page, f'{cell} span[data-field="value"]'),
                    None if is_baseline else shown_value(page, difference),
                )
        return shown

    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        page.click("#segments-link")
        wait_ready(page, "#/models/shop/segments")
        to_whole = read(page)
        page.screenshot(path=shots / "ui-segments.png", full_page=True)
        page.select_option("#baseline-picker", first)
        wait_ready(page, f"#/models/shop/segments?baseline={first}")
        to_first = read(page)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    for shown, answer, baseline in ((to_whole, expected, "all"), (to_first, against, first)):
        sides = {s["segment"]: s for s in [answer["whole"], *answer["segments"]]}
        for segment, metrics in shown.items():
            for metric, (value, difference) in metrics.items():
                api = sides[segment]["metrics"][metric]
                assert same(value, api["value"], 5.1e-5), (segment, metric)
                if segment == baseline:
                    assert difference is None
                else:
                    assert same(difference, api["difference"], 5.1e-5), (segment, metric)


def test_a_paris_model_shows_its_own_days_and_its_gaps(seeded: Seeded, browser: Browser) -> None:
    """A Europe/Paris model's windows read as Paris days everywhere (the strip, the window
    page's title, the charts' axis), with the UTC instant on hover, never as the UTC instant
    "23:00 UTC" of the evening before; the day with no rows is a gap in its lines."""
    points = _series(seeded, "paris")
    local = [datetime.fromisoformat(p["window_start"]).astimezone(ZoneInfo(PARIS)) for p in points]
    assert all((t.hour, t.minute) == (0, 0) for t in local)
    days = [t.date().isoformat() for t in local]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/paris")
        titles = [
            page.locator(f'#verdict-strip .cell[data-window="{p["window_start"]}"]').get_attribute(
                "title"
            )
            or ""
            for p in points
        ]
        axis = page.locator("#chart-ap").inner_text()
        gaps = page.locator("#chart-ap").get_attribute("data-gaps")
        page.click(f'#verdict-strip .cell[data-window="{points[0]["window_start"]}"]')
        page.wait_for_selector(
            'body[data-ready^="#/models/paris/windows/"]', state="attached", timeout=30_000
        )
        heading = page.locator("h1")
        title, hover = heading.inner_text(), heading.get_attribute("title") or ""
        assert not log.problems(), log.problems()
    assert [t.split(":")[0] for t in titles] == days
    assert f"window {days[0]}" in title
    assert "UTC" not in title
    assert "23:00" in hover  # the Paris midnight is 23:00 UTC the evening before (winter)
    assert PARIS in axis
    assert len(points) == PARIS_STREAM.days - 1
    assert gaps == "1"


def test_tables_download_as_csv_and_charts_as_png(seeded: Seeded, browser: Browser) -> None:
    """Every table has a CSV button and every chart a PNG one: the window page's metrics table
    comes back as the rows shown, the PR chart as a PNG image."""
    start = _series(seeded, "shop")[5]["window_start"]
    detail = seeded.api.get(f"/v1/models/shop/windows/{start}").json()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, f"#/models/shop/windows/{start}?segment=all")
        tables = page.locator("#app table:not(.u-legend)").count()
        csv_buttons = page.locator('button[data-export="csv"]').count()
        charts = page.locator("div.chart").count()
        png_buttons = page.locator('button[data-export="png"]').count()
        with page.expect_download() as table_download:
            page.click('button[data-export="csv"][data-for="metrics-table"]')
        table = table_download.value
        rows = list(csv.reader(io.StringIO(Path(table.path()).read_text(encoding="utf-8"))))
        with page.expect_download() as chart_download:
            page.click('button[data-export="png"][data-for="chart-pr"]')
        chart = chart_download.value
        image = Path(chart.path()).read_bytes()
        assert not log.problems(), log.problems()
    assert csv_buttons == tables
    assert png_buttons == charts
    assert table.suggested_filename == f"shop-window-{start[:10]}-metrics-table.csv"
    assert rows[0][:2] == ["metric", "measured"]
    shown = {row[0]: row for row in rows[1:]}
    assert set(shown) == set(detail["metrics"])
    measured = detail["metrics"]["average_precision"]["regular"]
    assert number(shown["average_precision"][1]) == pytest.approx(measured, abs=5.1e-5)
    assert chart.suggested_filename.endswith(".png")
    assert image[:8] == b"\x89PNG\r\n\x1a\n"


# Every table (uPlot's legends are part of their chart) and chart on the page, and whether the
# paragraph right after it holds its one export button.
EXPORTS = """(() => {
  const items = [...document.querySelectorAll("#app table, #app div.chart")]
    .filter((el) => el.matches("div.chart") || !el.closest("div.chart"));
  const kind = (el) => (el.matches("table") ? "csv" : "png");
  return {
    items: items.map((el) => ({
      id: el.id || el.closest("section, figure")?.id || "",
      kind: kind(el),
      ok: !!el.nextElementSibling && el.nextElementSibling.matches("p.exports")
        && el.nextElementSibling.querySelectorAll(`button[data-export="${kind(el)}"]`).length === 1,
    })),
    buttons: document.querySelectorAll("#app button.export").length,
  };
})()"""


def test_every_table_and_chart_has_its_exports_even_when_drawn_later(
    seeded: Seeded, browser: Browser
) -> None:
    """Every page's tables and charts have their CSV and PNG buttons, the parts drawn after the
    page too (the threshold advice and the catalogue arrive later, a segment switch draws
    again, the analyses' outlook is drawn on a form's answer), exactly one each; a late
    table's CSV holds the rows shown."""
    start = _series(seeded, "shop")[5]["window_start"]
    late = {
        "#/models/shop": ["#advice-table", "#catalogue-table"],
        f"#/models/shop/windows/{start}?segment=all": [],
        "#/models/shop/segments": [],
        "#/models/steady/trust": [],
        "#/": [],
    }
    seen: dict[str, dict[str, Any]] = {}
    with watched_page(browser, seeded.server.base_url) as (page, log):
        for fragment, parts in late.items():
            _open(page, seeded, fragment)
            for selector in parts:
                page.wait_for_selector(selector)
            seen[fragment] = page.evaluate(EXPORTS)
        _open(page, seeded, "#/models/shop")
        page.select_option("#segment-picker", "web")
        page.wait_for_selector('body[data-ready="#/models/shop?segment=web"]', state="attached")
        page.wait_for_selector("#advice-table")
        page.wait_for_selector("#catalogue-table")
        seen["segment switch"] = page.evaluate(EXPORTS)
        shown = [
            [cell.inner_text().strip() for cell in row.locator("th, td").all()]
            for row in page.locator("#catalogue-table tr").all()
        ]
        with page.expect_download() as download:
            page.click('button[data-export="csv"][data-for="catalogue-table"]')
        rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text("utf-8"))))
        _open(page, seeded, "#/models/shop/analyses")
        page.fill("#trajectory-from", "1")
        page.fill("#trajectory-to", "3")
        page.click("#trajectory-form button[type=submit]")
        page.wait_for_selector('body[data-outlook="trajectory"]', state="attached")
        seen["analyses, trajectory"] = page.evaluate(EXPORTS)
        assert not log.problems(), log.problems()
    for where, found in seen.items():
        assert found["items"], where
        assert [i for i in found["items"] if not i["ok"]] == [], where
        assert found["buttons"] == len(found["items"]), where  # none left from a removed part
    assert {"advice-table", "catalogue-table"} <= {i["id"] for i in seen["segment switch"]["items"]}
    assert any(i["kind"] == "png" for i in seen["segment switch"]["items"])
    assert len(rows) == len(shown) > 1
    assert rows == shown


def test_every_page_says_whether_the_worker_keeps_up(seeded: Seeded, browser: Browser) -> None:
    """The header's worker status, on the models list and on a model page, is GET /v1/status:
    the models the token reads and what waits, fails or is parked."""
    shown = []
    with watched_page(browser, seeded.server.base_url) as (page, log):
        for fragment in ("#/", "#/models/steady"):
            _open(page, seeded, fragment)
            page.wait_for_selector("#worker-status[data-state]", state="attached")
            status = page.locator("#worker-status")
            shown.append((status.get_attribute("data-state"), status.get_attribute("title") or ""))
        assert not log.problems(), log.problems()
    api = seeded.api.get("/v1/status").json()
    expected = (
        f"{api['models']} models; {api['workers_alive']} worker"
        f"{'' if api['workers_alive'] == 1 else 's'} alive; {api['dirty_windows']} waiting, "
        f"{api['failing_windows']} failing, {api['parked_windows']} parked"
    )
    for state, title in shown:
        assert title == expected
        assert state == ("ok" if api["dirty_windows"] + api["parked_windows"] == 0 else state)
    assert api["workers_alive"] >= 1


def test_the_analyses_page_reads_a_trajectory_and_a_weighted_range(
    seeded: Seeded, browser: Browser
) -> None:
    """The analyses page's "what the fraud rate may do": a trajectory and a range weighted by
    how likely each rate is, each as the what-if API answers it, with the random baseline."""
    trajectory = {"points": [[0, 0.01], [30, 0.03]], "interpolation": "log"}
    weight = [[0.005, 0], [0.01, 1], [0.03, 0]]
    along = seeded.api.post(
        "/v1/models/shop/whatif", json={"priors": [], "range": None, "trajectory": trajectory}
    )
    assert along.status_code == 200, along.text
    ranged = seeded.api.post(
        "/v1/models/shop/whatif",
        json={"priors": [], "range": {"pi_lo": 0.005, "pi_hi": 0.03, "weight": weight}},
    ).json()["range"]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop/analyses")
        page.fill("#trajectory-from", "1")
        page.fill("#trajectory-to", "3")
        page.click("#trajectory-form button[type=submit]")
        page.wait_for_selector('body[data-outlook="trajectory"]', state="attached")
        shown_along = {
            field: _cell(page, f'#outlook-trajectory td[data-value="{field}"]')
            for field in ("precision", "average_precision", "random_average_precision")
        }
        page.fill("#range-lo", "0.5")
        page.fill("#range-likely", "1")
        page.fill("#range-hi", "3")
        page.click("#range-form button[type=submit]")
        page.wait_for_selector('body[data-outlook="range"]', state="attached")
        shown_range = {
            field: _cell(page, f'#outlook-range td[data-value="{field}"]')
            for field in ("precision", "average_precision", "random_average_precision")
        }
        assert page.locator("#outlook-error").is_hidden()
        assert not log.problems(), log.problems()
    for shown, api in ((shown_along, along.json()["trajectory"]), (shown_range, ranged)):
        for field, (value, ci) in shown.items():
            assert same(value, api[field], 5.1e-5), field
            assert _same_ci(ci, api.get(f"{field}_ci"), 5.1e-5), field


def test_which_metric_to_trust_draws_the_curves_and_the_windows(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    """The "which metric to trust" page (from the model page's link): the metrics ranked by
    their sensitivity at the model's ratio as the API gives them, the s(r) chart, and the
    picked metric's surface with one point per mature window."""
    out = seeded.api.get("/v1/models/steady/metric-trust", params={"metric": "precision"}).json()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/steady")
        page.click("#trust-link")
        wait_ready(page, "#/models/steady/trust")
        page.select_option("#surface-picker", "precision")
        wait_ready(page, "#/models/steady/trust?metric=precision")
        ranked = [
            row.get_attribute("data-metric") for row in page.locator("#trust-table tbody tr").all()
        ]
        shown = shown_value(page, '#trust-table tr[data-metric="f1"] td[data-field="at_ratio"]')
        curves = page.locator("#chart-sensitivity canvas").count()
        points = page.locator("#chart-surface").get_attribute("data-points")
        page.screenshot(path=shots / "ui-trust.png", full_page=True)
        assert not log.problems(), log.problems()
    at = out["ratios"].index(out["ratio"])
    by_metric = {c["metric"]: c["sensitivity"][at] for c in out["curves"]}
    assert ranked == sorted(by_metric, key=lambda m: by_metric[m])
    assert same(shown, by_metric["f1"], 5.1e-4)
    assert curves == 1
    assert points == str(len(out["windows"]))
    assert len(out["windows"]) > 10


def test_the_model_page_shows_a_chosen_period_and_refreshes_in_place(
    seeded: Seeded, browser: Browser
) -> None:
    """The model page's period: the last N windows, or days from .. to, in its address (so a
    reload keeps it); Refresh draws the page again with the same period."""
    starts = [p["window_start"] for p in _series(seeded, "shop")]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        page.select_option("#period-last", "30")
        page.click("#period-form button[type=submit]")
        wait_ready(page, "#/models/shop?last=30")
        last = [c.get_attribute("data-window") for c in page.locator("#verdict-strip .cell").all()]
        page.fill("#period-from", starts[4][:10])
        page.fill("#period-to", starts[8][:10])
        page.select_option("#period-last", "")
        page.click("#period-form button[type=submit]")
        fragment = f"#/models/shop?from={starts[4][:10]}&to={starts[8][:10]}"
        wait_ready(page, fragment)
        days = page.locator("#verdict-strip .cell").count()
        page.click("#refresh")
        wait_ready(page, fragment)
        again = page.locator("#verdict-strip .cell").count()
        assert not log.problems(), log.problems()
    assert last == starts[-30:]
    assert days == again == 5


def test_an_unknown_address_says_so(seeded: Seeded, browser: Browser) -> None:
    """A mistyped address gets a "no such page" with a way back, not the models list as if it
    had been asked for."""
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/modles/shop")
        shown = page.locator("#not-found").inner_text()
        listed = page.locator("#models-table").count()
        page.click("#not-found a")
        page.wait_for_selector('body[data-ready="#/"]', state="attached", timeout=30_000)
        assert not log.problems(), log.problems()
    assert "No such page" in shown
    assert "#/modles/shop" in shown
    assert listed == 0


def test_model_page_lists_the_metric_catalogue(seeded: Seeded, browser: Browser) -> None:
    catalogue = seeded.api.get("/v1/models/shop/metric-catalogue").json()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        page.wait_for_selector("#catalogue-table")  # drawn after the page, when it arrives
        shown = {}
        for row in page.locator("#catalogue-table tbody tr").all():
            key = f'#catalogue-table tr[data-metric="{row.get_attribute("data-metric")}"]'
            shown[row.get_attribute("data-metric")] = (
                row.locator('td[data-field="invariant"]').inner_text(),
                shown_value(page, f'{key} td[data-variant="regular"]'),
                shown_value(page, f'{key} td[data-variant="calibrated"]'),
            )
        why = page.locator("#why-calibrated-ap").inner_text()
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert set(shown) == {m["name"] for m in catalogue["metrics"]}
    for metric in catalogue["metrics"]:
        invariant, regular, calibrated = shown[metric["name"]]
        assert invariant.startswith("yes" if metric["prior_invariant"] else "no"), metric["name"]
        assert same(regular, metric["sensitivity"]["regular"], 5.1e-4), metric["name"]
        assert same(calibrated, metric["sensitivity"]["calibrated"], 5.1e-4), metric["name"]
    assert "calibrated AP" in why


def test_what_if_view_shows_the_api_values(seeded: Seeded, browser: Browser, shots: Path) -> None:
    default = seeded.api.post("/v1/models/shop/whatif", json={}).json()
    asked = seeded.api.post("/v1/models/shop/whatif", json={"priors": [0.05], "range": None}).json()
    period, rng = default["period"], default["range"]
    expected = {
        "pi0": next(p for p in default["priors"] if p["pi"] == period["pi0"]),
        "current": next(p for p in default["priors"] if p["pi"] == period["current_pi"]),
        "input": asked["priors"][0],
    }
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop")
        page.click("#analyses-link")
        wait_ready(page, "#/models/shop/analyses")
        page.fill("#whatif-pi", "5")
        page.click("#whatif-form button[type=submit]")
        page.wait_for_selector('body[data-whatif="5"]', state="attached", timeout=30_000)
        rows = {
            key: {
                metric: _cell(
                    page, f'#whatif-priors tr[data-prior="{key}"] td[data-metric="{metric}"]'
                )
                for metric in ("precision", "recall", "f1", "average_precision")
            }
            for key in expected
        }
        pis = {
            key: shown_value(page, f'#whatif-priors tr[data-prior="{key}"] td[data-field="pi"]')
            for key in expected
        }
        ranged = {
            field: _cell(page, f'#whatif-range tr[data-field="{field}"] td[data-value="{field}"]')
            for field in ("precision", "average_precision", "random_average_precision")
        }
        charts = page.locator("#chart-whatif canvas").count()
        error_hidden = page.locator("#whatif-error").is_hidden()
        page.screenshot(path=shots / "ui-whatif.png", full_page=True)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert error_hidden
    assert charts == 1
    for key, prior in expected.items():
        assert same(pis[key], prior["pi"], 5.1e-6), key
        for metric, (value, ci) in rows[key].items():
            api = prior["metrics"][metric]
            assert same(value, api["value"], 5.1e-5), (key, metric)
            assert _same_ci(ci, api["ci"], 5.1e-5), (key, metric)
    for field, (value, ci) in ranged.items():
        assert same(value, rng[field], 5.1e-5), field
        assert _same_ci(ci, rng.get(f"{field}_ci"), 5.1e-5), field


def test_champion_vs_challenger_view_shows_the_api_values(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    compare = seeded.api.get("/v1/models/shop/compare", params={"challenger": "steady"}).json()
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/shop/analyses")
        page.select_option("#challenger-picker", "steady")
        wait_ready(page, "#/models/shop/analyses?challenger=steady")
        summary = page.locator("#compare-summary").inner_text()
        rows = {
            key: {
                field: _cell(
                    page, f'#compare-table tr[data-comparison="{key}"] td[data-field="{field}"]'
                )
                for field in ("champion", "challenger", "difference")
            }
            for key in ("at_pi0", "at_current_pi", "over_range")
        }
        flips = [
            float(item.get_attribute("data-pi") or "nan")
            for item in page.locator("#compare-flips li[data-pi]").all()
        ]
        charts = page.locator("#chart-compare canvas").count()
        page.locator("#compare").screenshot(path=shots / "ui-compare.png")
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert summary == compare["summary"]
    assert charts == 1
    assert flips == [f["pi"] for f in compare["inversions"]]
    for key, fields in rows.items():
        api = compare[key]
        assert api is not None, key
        for field, (value, _ci) in fields.items():
            assert same(value, api[field], 5.1e-5), (key, field)
        assert _same_ci(fields["difference"][1], api["ci"], 5.1e-5), key


def test_a_wrong_token_gets_a_clear_message(seeded: Seeded, browser: Browser) -> None:
    with watched_page(browser, seeded.server.base_url) as (page, log):
        page.goto(f"{seeded.server.base_url}/ui/#/models/shop")
        page.fill("#token-input", "calmon_not-a-real-token")
        page.click("#token-form button[type=submit]")
        refused = page.locator("#token-error").inner_text()
        page.fill("#token-input", seeded.ingest_only_token)
        page.click("#token-form button[type=submit]")
        page.wait_for_selector("#token-error:has-text('403')")
        forbidden = page.locator("#token-error").inner_text()
        page.fill("#token-input", seeded.read_token)
        page.click("#token-form button[type=submit]")
        wait_ready(page, "#/models/shop")
        assert page.locator("#verdict-strip .cell").count() == SHOP.days
        assert not log.page_errors, log.page_errors
        assert not log.blocked, log.blocked
    assert "refused this token (401" in refused
    assert "read scope" in forbidden


def test_a_token_limited_to_one_model_shows_that_model_only(
    seeded: Seeded, browser: Browser
) -> None:
    base_url = seeded.server.base_url
    with watched_page(browser, base_url) as (page, log):
        open_page(page, base_url, seeded.steady_only_token, "")
        rows = page.locator("#models-table tbody tr")
        models = {row.get_attribute("data-model") for row in rows.all()}
        assert not log.problems(), log.problems()
    assert models == {"steady"}
    with watched_page(browser, base_url) as (page, log):
        token = seeded.steady_only_token
        page.add_init_script(f"sessionStorage.setItem('calmon.readToken', {token!r})")
        page.goto(f"{base_url}/ui/#/models/shop")
        shown = page.locator("#app p.error[role=alert]").inner_text()
        assert not log.page_errors, log.page_errors
    # As for a model that does not exist: nothing on the page says that shop is there.
    assert "no model named 'shop'" in shown


def test_a_window_that_cannot_be_computed_is_said_on_its_models_page(
    seeded: Seeded, browser: Browser
) -> None:
    """A row the worker cannot compute with (a non-finite score, written past the API's checks)
    parks its window after three tries; the model's page says so, with the error."""
    admin = make_token(seeded.database_url, "broken-admin", "admin")
    registered = seeded.api.post(
        "/v1/models",
        json={"name": "broken", "threshold": 1.5},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert registered.status_code == 201, registered.text
    engine = create_db_engine(settings_for(seeded.database_url))
    try:
        factory = create_session_factory(engine)
        model_id = find_model_id(factory, "broken")
        scores = np.linspace(-1.0, 3.0, 200)
        scores[7] = np.inf
        labels = (scores > 2.0).astype(np.int8)
        insert_rows(factory, model_id, day_start(0), scores, labels, prefix="broken")
    finally:
        engine.dispose()

    def parked() -> bool:
        return bool(seeded.api.get("/v1/models/broken/status").json()["parked_windows"])

    wait_for(
        parked, "the broken window parked (three tries, backing off 0.5 s then 1 s)", timeout=90
    )
    with watched_page(browser, seeded.server.base_url) as (page, log):
        _open(page, seeded, "#/models/broken")
        shown = page.locator("#parked-windows").inner_text()
        assert not log.page_errors, log.page_errors
    assert "1 window could not be computed" in shown
    assert "finite" in shown


def test_api_reference_works_offline(seeded: Seeded, browser: Browser) -> None:
    with watched_page(browser, seeded.server.base_url) as (page, log):
        page.goto(f"{seeded.server.base_url}/docs")
        page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
        title = page.locator(".swagger-ui .info .title").inner_text()
        page.get_by_text("/v1/models/{name}/metrics", exact=True).first.wait_for()
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert "calmon" in title


def test_screenshots_are_where_the_web_ui_page_takes_them(seeded: Seeded) -> None:
    page = (REPO_ROOT / "docs" / "web-ui.md").read_text()
    for name in WEB_UI_IMAGES:
        assert f"](img/{name})" in page
        assert (SCREENSHOTS / name).stat().st_size > 10_000
