"""The web UI's early estimates in a real browser (system Chromium) against a real `calmon serve`.

One server on SQLite with its embedded worker, seeded over HTTP with ``feed``: a fraud-only
label feed (tests/support/fraud_feed.py: investigators' feedback the day after, chargebacks over
days, ``label_horizon_days`` = 7) whose fraud rate swings every day and whose model degrades
sharply a week before the end. Its newest windows are still waiting for labels: they must show
no measured value, only their early estimates drawn and labelled as estimates, and the page that
rests on their early evidence must say so. Pages are watched as in tests/e2e/test_webui.py (no
other origin, no console error, no failed request) and must never print "null" or "NaN".
Screenshots: ui-model.png (this model's page) and ui-window-early.png (a window waiting for its
labels), written to docs/img/ under the same rule as test_webui.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import Browser, Page, chromium, require_chromium, watched_page
from tests.support.fraud_feed import FeedSpec, feed, feed_batch, feed_model
from tests.support.server import LiveServer, running_server
from tests.support.streams import post_batch
from tests.support.waiting import wait_for
from tests.support.webui_pages import (
    DASH,
    make_token,
    number,
    open_page,
    printed_missing_values,
    same,
    screenshot_dir,
    shown_value,
)

pytestmark = pytest.mark.e2e

ENV = {
    "CALMON_WORKER_POLL_SECONDS": "0.2",
    "CALMON_WORKER_HEARTBEAT_SECONDS": "0.5",
    "CALMON_BOOTSTRAP_REPLICATES": "200",
}
# Four weeks: the reference is the first week (7 windows, 150 frauds at least: the defaults'
# 14 windows and 500 frauds would take two months of these small windows), then two weeks
# judged, then the last week waiting for labels, the model degraded from its second day on.
FEED = FeedSpec(days=28, drop_day=21, dropped_mean=1.0, seed=3)
SETTINGS = {"reference_windows": 7, "reference_min_positives": 150}


@dataclass(frozen=True)
class Seeded:
    """The running server, a read token and an API client holding it."""

    server: LiveServer
    read_token: str
    api: httpx.Client

    def open(self, page: Page, fragment: str) -> float:
        return open_page(page, self.server.base_url, self.read_token, fragment)


def _settled(client: httpx.Client) -> bool:
    status = client.get("/v1/models/feed/status").json()
    assert not status["failing_windows"], status
    return bool(status["windows"] == FEED.days and not status["dirty_windows"])


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    require_chromium()  # before the seeding's cost
    directory = tmp_path_factory.mktemp("webui-early")
    database_url = f"sqlite:///{(directory / 'calmon.sqlite3').as_posix()}"
    with running_server(database_url, env=ENV, log_dir=directory) as server:
        admin = make_token(database_url, "seed", "admin", "ingest", "read")
        headers = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=server.base_url, timeout=120.0, headers=headers) as client:
            response = client.post("/v1/models", json=feed_model(FEED, "feed", **SETTINGS))
            assert response.status_code == 201, response.text
            for day in feed(FEED):
                post_batch(client, "feed", feed_batch(day, prefix="feed"))
            wait_for(lambda: _settled(client), "every window computed", timeout=300)
        read = make_token(database_url, "ui", "read")
        with httpx.Client(
            base_url=server.base_url, timeout=60.0, headers={"Authorization": f"Bearer {read}"}
        ) as api:
            yield Seeded(server, read, api)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _points(seeded: Seeded, metric: str = "average_precision") -> list[dict[str, Any]]:
    response = seeded.api.get("/v1/models/feed/metrics", params={"metric": metric})
    assert response.status_code == 200, response.text
    points: list[dict[str, Any]] = response.json()["points"]
    return points


def _estimated(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The windows waiting for labels that have an early estimate of the series' metric."""
    return [p for p in points if not p["mature"] and p["early"] and p["early"]["value"] is not None]


def _hover_window(page: Page, chart: str, x: list[float], index: int) -> dict[str, str]:
    """Put the cursor on window ``index`` of a time chart; its legend as {label: value}."""
    over = page.locator(f"{chart} .u-over")
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    assert box is not None
    # A time axis spans the data's first to last window start, without padding.
    left = box["x"] + box["width"] * (x[index] - x[0]) / (x[-1] - x[0])
    page.mouse.move(left, box["y"] + box["height"] / 2)
    legend: dict[str, str] = {}
    for row in page.locator(f"{chart} .u-legend .u-series").all():
        legend[row.locator(".u-label").inner_text()] = row.locator(".u-value").inner_text()
    return legend


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_the_stream_has_windows_waiting_with_estimates_and_an_early_page(seeded: Seeded) -> None:
    """What the other tests stand on: the newest week waits for labels, most of it with
    early estimates, its measured values withheld, and the page rests on early evidence."""
    points = _points(seeded)
    waiting = [p for p in points if not p["mature"]]
    assert 5 <= len(waiting) <= FEED.horizon_days + 1
    assert len(_estimated(points)) >= 5
    for p in waiting:
        assert (p["regular"], p["calibrated"], p["pi"]) == (None, None, None), p
    (state,) = seeded.api.get("/v1/models/feed/alerts").json()["segments"]
    assert state["state"] == "drop"
    assert state["signals"] == ["early"]


def test_model_page_draws_windows_waiting_for_labels_as_estimates(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    points = _points(seeded)
    estimated = _estimated(points)
    newest = estimated[-1]
    target = estimated[len(estimated) // 2]  # a dropped window, its estimate well defined
    index = points.index(target)
    x = [_seconds(p["window_start"]) for p in points]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        seeded.open(page, "#/models/feed")
        cells = page.locator("#verdict-strip .cell")
        mature = [cell.get_attribute("data-mature") for cell in cells.all()]
        title = cells.nth(index).get_attribute("title") or ""
        summary = {
            field: shown_value(page, f'#newest-early td[data-field="{field}"]')
            for field in ("early-calibrated", "early-pi")
        }
        summary_window = page.locator("#newest-early").get_attribute("data-window")
        alert = page.locator("#alert-state")
        signals = alert.get_attribute("data-signals")
        early_alert = page.locator("#early-alert").inner_text()
        ap_legend = _hover_window(page, "#chart-ap", x, index)
        pi_legend = _hover_window(page, "#chart-pi", x, index)
        missing = printed_missing_values(page)
        page.mouse.move(0, 0)
        page.screenshot(path=shots / "ui-model.png", full_page=True)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert mature == [str(p["mature"]).lower() for p in points]
    assert "waiting for labels" in title
    assert "estimated from labels so far" in title
    assert f"calibrated AP {target['early']['value']:.4f}" in title
    # The newest estimate beside the newest window, as the API has it.
    assert summary_window == newest["window_start"]
    assert same(summary["early-calibrated"], newest["early"]["value"], 5.1e-5)
    assert same(summary["early-pi"], newest["early"]["pi"], 5.1e-6)
    # On the charts, a window waiting for labels has no measured value, only the estimate,
    # whose legend names it and says how old its labels are.
    assert ap_legend["measured"] == DASH
    assert ap_legend["calibrated at pi0"] == DASH
    (label,) = (k for k in ap_legend if k.startswith("calibrated AP estimated from labels so far"))
    assert "(as of " in label
    value, _, rest = ap_legend[label].partition(" [")
    assert number(value) == pytest.approx(target["early"]["value"], abs=5.1e-5)
    assert f"{target['early']['look']} days after it ended" in rest
    assert pi_legend["pi (measured)"] == DASH
    (label,) = (k for k in pi_legend if k.startswith("pi estimated from labels so far"))
    assert number(pi_legend[label].split(" [")[0]) == pytest.approx(
        target["early"]["pi"], abs=5.1e-5
    )
    # The page rests on early evidence, said in words.
    assert signals == "early"
    assert "early evidence" in early_alert
    assert "labels are still arriving" in early_alert
    assert not missing, missing


def test_window_page_waiting_for_labels_shows_its_early_estimate(
    seeded: Seeded, browser: Browser, shots: Path
) -> None:
    estimated = _estimated(_points(seeded))
    start = estimated[len(estimated) // 2]["window_start"]
    detail = seeded.api.get(f"/v1/models/feed/windows/{start}").json()
    early = detail["early"]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        seeded.open(page, f"#/models/feed/windows/{start}?segment=all")
        maturity = page.locator("#maturity")
        waiting = (maturity.get_attribute("data-mature"), maturity.inner_text())
        measured = {
            selector: page.locator(selector).count()
            for selector in ("#metrics-table", "#confusion", "#chart-pr")
        }
        withheld = page.locator("#withheld").inner_text()
        pi = page.locator('#window-facts td[data-field="pi"]').inner_text()
        tag = page.locator("#early h2 .estimate-tag").inner_text()
        rows = {
            key: (
                shown_value(page, f'#early-table tr[data-estimate="{key}"] td[data-field="value"]'),
                page.locator(f'#early-table tr[data-estimate="{key}"] td[data-field="ci"]')
                .inner_text()
                .strip(),
            )
            for key in ("pi", "precision", "recall", "average_precision")
        }
        labels = page.locator("#labels-so-far").inner_text()
        feedback = page.locator("#alert-precision-feedback").inner_text()
        evidence = page.locator("#early-evidence").inner_text()
        missing = printed_missing_values(page)
        page.screenshot(path=shots / "ui-window-early.png", full_page=True)
        assert not log.problems(), log.problems()
        assert not log.blocked, log.blocked
    assert detail["mature"] is False
    assert waiting[0] == "false"
    assert "Waiting for labels" in waiting[1]
    assert measured == {"#metrics-table": 0, "#confusion": 0, "#chart-pr": 0}
    assert "No measured values yet" in withheld
    assert pi == DASH
    assert tag.lower() == "estimate from labels so far"
    for key, (value, ci) in rows.items():
        assert same(value, early[key]["value"], 5.1e-5 if key != "pi" else 5.1e-6), key
        assert ci != DASH, key
    so_far = early["labels_so_far"]
    assert f"{so_far['frauds']} frauds" in labels
    assert f"{so_far['by_source']['feedback']} from investigators' feedback" in labels
    fb = early["alert_precision_feedback"]
    assert f"{fb['confirmed']} of the {fb['reviewed']} alerts reviewed" in feedback
    assert f"{early['evidence']['frauds']} frauds reported so far" in evidence
    assert f"{early['evidence']['increment']:+.2f}" in evidence
    assert not missing, missing


def test_models_page_says_the_newest_windows_wait_for_labels(
    seeded: Seeded, browser: Browser
) -> None:
    points = _points(seeded)
    newest = _estimated(points)[-1]
    mature = [p for p in points if p["mature"]][-1]
    with watched_page(browser, seeded.server.base_url) as (page, log):
        seeded.open(page, "")
        row = page.locator('#models-table tr[data-model="feed"][data-segment="all"]')
        state = row.locator("td.state")
        signals, state_text = state.get_attribute("data-signals"), state.inner_text()
        early = row.locator('td[data-field="early"]')
        early_window, early_text = early.get_attribute("data-window"), early.inner_text()
        early_title = early.get_attribute("title") or ""
        newest_cell = row.locator('td[data-field="newest"]')
        newest_window = (newest_cell.get_attribute("data-mature"), newest_cell.inner_text())
        pi = shown_value(page, '#models-table tr[data-model="feed"] td[data-field="pi"]')
        missing = printed_missing_values(page)
        assert not log.problems(), log.problems()
    assert signals == "early"
    assert "on early evidence" in state_text
    assert early_window == newest["window_start"]
    assert early_text.startswith(f"≈ AP {newest['early']['value']:.3f}")
    assert "estimate from labels so far" in early_title
    assert "not measured" in early_title
    assert newest_window[0] == "false"
    assert "waiting for labels" in newest_window[1]
    assert same(pi, mature["pi"], 5.1e-6)  # measured: the newest mature window's
    assert not missing, missing
