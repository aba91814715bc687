"""docs/cli.md replayed: the `bash` blocks of its session, in order, against the `calmon serve`
the README's Quick start runs in the same directory, and what the status, metrics, alerts and
analyses blocks print compared with the page's output blocks (the README replay's helpers:
its blocks, its shell, its comparison of printed lines)."""

from __future__ import annotations

import csv
import functools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from tests.support.replay import (
    README_URL,
    assert_printed,
    background_script,
    blocks,
    link_venv,
    needs_curl,
    replaced,
    run_blocks,
    wait_ready,
)
from tests.support.server import REPO_ROOT, free_port
from tests.support.waiting import wait_for

PAGE = (REPO_ROOT / "docs" / "cli.md").read_text()
SIGN_IN = "### Sign in"
SEND = "### Send a file and its labels"
STATUS = "### Is it running: `calmon status`"
METRICS = "### A metric over time: `calmon metrics`"
ALERTS = "### What pages: `calmon alerts`"
ANALYSES = "### The analyses over HTTP"


def page_blocks(heading: str, language: str) -> list[str]:
    """The page's fenced ``language`` blocks under ``heading`` (a heading only this page has)."""
    assert heading in PAGE
    return blocks(heading.lstrip("# "), language)


def write_feeds(directory: Path) -> None:
    """The page's three files: three days of a model's scores, its challenger's scores of the
    same transactions (weaker), and the labels of those transactions."""
    rng = np.random.default_rng(11)
    days, per_day = 3, 400
    n = days * per_day
    frauds = rng.random(n) < 0.05
    noise = rng.normal(size=n)
    first = datetime(2026, 1, 5, tzinfo=UTC)
    times = [first + timedelta(seconds=i * 86_400 * days // n) for i in range(n)]
    for name, separation in (("predictions", 3.0), ("predictions-v2", 2.0)):
        scores = 1 / (1 + np.exp(-(noise + separation * frauds - 2)))
        with (directory / f"{name}.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "timestamp", "score"])
            for i, (at, score) in enumerate(zip(times, scores, strict=True)):
                writer.writerow([f"tx-{i}", at.strftime("%Y-%m-%dT%H:%M:%SZ"), f"{score:.4f}"])
    with (directory / "labels.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "label"])
        writer.writerows([f"tx-{i}", int(fraud)] for i, fraud in enumerate(frauds))


def check_shown_heads(directory: Path) -> None:
    """The files begin as the page shows them."""
    predictions, labels = page_blocks(SEND, "csv")
    assert (directory / "predictions.csv").read_text().startswith(predictions)
    assert (directory / "labels.csv").read_text().startswith(labels)


@pytest.mark.e2e
@needs_curl
def test_the_cli_pages_session_prints_what_the_page_shows(tmp_path: Path) -> None:
    link_venv(tmp_path)
    write_feeds(tmp_path)
    check_shown_heads(tmp_path)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    serve = ".venv/bin/calmon serve"
    with background_script(serve, tmp_path, {"CALMON_PORT": str(port)}, log) as process:
        wait_ready(base_url, process, log, timeout=60)
        [sign_in] = page_blocks(SIGN_IN, "bash")
        [send] = page_blocks(SEND, "bash")
        token = run_blocks([sign_in, send, 'echo "$CALMON_TOKEN"'], base_url, tmp_path)[-1]
        signed_in = f"export CALMON_URL={README_URL}\nexport CALMON_TOKEN={token}"

        def shown(heading: str) -> str:
            """The block under ``heading`` run as the signed-in reader would; its output with
            the service's address as a word (its digits are no number to compare)."""
            [block] = page_blocks(heading, "bash")
            return run_blocks([signed_in, block], base_url, tmp_path)[-1].replace(base_url, "URL")

        def check(heading: str) -> None:
            page = page_blocks(heading, "text")[0].replace(README_URL, "URL")
            assert_printed(page, shown(heading))

        def prints_as_shown(heading: str) -> bool:
            try:
                check(heading)
            except AssertionError:
                return False
            return True

        # The labels came after the predictions: the worker computes the windows again, one
        # model's after the other's (the status, which lists both, may show the second one's
        # still dirty when the first one's metrics already print as the page shows them).
        for heading, what in (
            (METRICS, "the windows computed with their labels, as the page shows them"),
            (STATUS, "every model's windows computed, as the page's status shows"),
        ):
            wait_for(
                functools.partial(prints_as_shown, heading),
                what,
                timeout=90,
                poll=0.5,
                diagnostics=functools.partial(shown, heading),
            )
        for heading in (ALERTS, ANALYSES):
            check(heading)
        whatif = json.loads((tmp_path / "whatif.json").read_text())
        assert whatif["model"] == "card-fraud"
        assert [prior["pi"] for prior in whatif["priors"]] == [0.01]
        # docs/sending-data.md's `calmon send` lines, in the same directory: the predictions
        # again (each batch already stored: nothing written twice) and a chargeback export,
        # a label file told apart by its columns alone.
        write_chargebacks(tmp_path)
        sending = replaced(
            "\n".join(blocks("From a file: `calmon send`", "bash")),
            {"export CALMON_TOKEN=...": f"export CALMON_TOKEN={token}"},
        )
        run_blocks([f"export CALMON_URL={README_URL}", sending], base_url, tmp_path)


def write_chargebacks(directory: Path) -> None:
    """A chargeback export of the labels' frauds: id, label, labelled_at, source."""
    with (directory / "labels.csv").open(newline="") as handle:
        frauds = [row["id"] for row in csv.DictReader(handle) if row["label"] == "1"]
    with (directory / "chargebacks.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "label", "labelled_at", "source"])
        writer.writerows([i, 1, "2026-02-01T00:00:00Z", "chargeback"] for i in frauds)
