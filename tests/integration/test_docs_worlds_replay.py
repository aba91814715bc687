"""The docs' longer examples replayed on the streams they describe (tests/support/docs_worlds.py):
what-if, champion vs challenger, segments side by side and the metric catalogue on 30 days of a
champion and its challenger, the reference re-anchoring on the same model, and the early
estimates on the fraud-only stream read on 2026-02-03. Each block runs as written (curl and the
CLI) against a real `calmon serve` and its worker; each answer the page prints (shortened,
rounded) is what the server answers: every key it shows is there, every number it shows is the
answer's rounded to the digits shown, every string and flag the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.api.analysis_examples import ANALYSIS_REQUESTS, ANALYSIS_RESPONSES
from app.client.http import CalmonClient
from tests.support.docs_worlds import CHALLENGER, CHAMPION, send_analyses_world, send_early_world
from tests.support.replay import (
    blocks,
    json_documents,
    link_venv,
    readme_json,
    run_blocks,
    section,
)
from tests.support.server import LiveServer, bearer_client, running_server
from tests.support.waiting import wait_for
from tests.support.webui_pages import make_token

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WHAT_IF = "What-if: metrics at another fraud rate"
CHAMPION_VS_CHALLENGER = "Champion vs challenger"
SIDE_BY_SIDE = "Segments side by side"
TRUST = "Which metric to trust"
REFERENCE = "2. Against a frozen reference"
EARLY = "Early estimates"
WORKER_ENV = {
    # The pages say so: "the demo's worker drew 100 replicates a window" (the stored intervals
    # the comparison's series reads); the analyses draw their own 1,000, seeded.
    "CALMON_BOOTSTRAP_REPLICATES": "100",
    "CALMON_WORKER_POLL_SECONDS": "0.2",
}


def assert_shown(shown: Any, answer: Any, where: str = "$") -> None:
    """``answer`` holds what the page shows: ``"..."`` (a key, a list item, or inside a string)
    stands for what the page left out."""
    if isinstance(shown, dict):
        assert isinstance(answer, dict), (where, answer)
        for key, value in shown.items():
            if key == "...":
                continue
            assert key in answer, f"{where}.{key} is not in the answer: {sorted(answer)}"
            assert_shown(value, answer[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(answer, list), (where, answer)
        kept = [item for item in shown if item != "..."]
        assert len(answer) >= len(kept), (where, answer)
        for index, (item, got) in enumerate(zip(kept, answer, strict=False)):
            assert_shown(item, got, f"{where}[{index}]")
    elif isinstance(shown, float):
        assert isinstance(answer, int | float), (where, answer)
        assert abs(answer - shown) <= _half_unit(shown), f"{where}: page {shown}, answer {answer}"
    elif isinstance(shown, str) and "..." in shown:  # a sentence the page shortened
        pattern = ".*?".join(re.escape(part) for part in shown.split("..."))
        assert re.fullmatch(pattern, answer, flags=re.DOTALL), f"{where}: {answer!r}"
    else:
        assert answer == shown, f"{where}: page {shown!r}, answer {answer!r}"


def _half_unit(number: float) -> float:
    """Half a unit in the last digit the page prints (``repr`` keeps the page's digits)."""
    text = repr(number)
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0)) * (1 + 1e-9)


@contextmanager
def served_world(
    workdir: Path, send: Callable[[CalmonClient, httpx.Client], None], models: tuple[str, ...]
) -> Iterator[tuple[LiveServer, str]]:
    """A server holding a docs' stream, every window computed and every reference frozen; and
    a token with every scope. The stream goes in before a worker starts, so that the worker
    sees the same rows in the same order on every run (pi0 follows the windows as they are
    computed) and the pages' numbers come out again."""
    database_url = f"sqlite:///{workdir / 'calmon.sqlite3'}"
    alone = {**WORKER_ENV, "CALMON_WORKER_EMBEDDED": "false"}
    with running_server(database_url, env=alone, log_dir=workdir) as server:
        token = make_token(database_url, "docs", "admin", "ingest", "read")
        with (
            CalmonClient(server.base_url, token=token) as client,
            bearer_client(server.base_url, token) as http,
        ):
            send(client, http)
    with running_server(database_url, env=WORKER_ENV, log_dir=workdir) as server:
        _wait_for_worker(server, token, models)
        yield server, token


@pytest.fixture(scope="module")
def analyses_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """The analyses' 30 days, champion and challenger."""
    workdir = tmp_path_factory.mktemp("analyses")
    with served_world(
        workdir, lambda client, _http: send_analyses_world(client), (CHAMPION, CHALLENGER)
    ) as world:
        yield world


def _wait_for_worker(server: LiveServer, token: str, models: tuple[str, ...]) -> None:
    """Every window computed and every model's reference frozen."""
    headers = {"Authorization": f"Bearer {token}"}

    def done() -> bool:
        status = httpx.get(f"{server.base_url}/v1/status", headers=headers).json()
        if status["dirty_windows"]:
            return False
        return all(
            httpx.get(f"{server.base_url}/v1/models/{m}/alerts", headers=headers).json()["state"]
            != "warming_up"
            for m in models
        )

    wait_for(done, "the worker through the docs' stream", timeout=600, poll=1.0,
             diagnostics=lambda: server.log_path.read_text()[-4000:])  # fmt: skip


def _run(heading: str, server: LiveServer, token: str, workdir: Path) -> list[str]:
    """The section's bash blocks, run as written with ``$READ``/``$ADMIN`` and the CLI's
    ``CALMON_URL``/``CALMON_TOKEN`` set to the server and a token."""
    if not (workdir / ".venv").exists():
        link_venv(workdir)
    env = {"CALMON_URL": server.base_url, "CALMON_TOKEN": token}
    tokens = f"READ={token}\nADMIN={token}\n"
    return run_blocks([tokens, *blocks(heading, "bash")], server.base_url, workdir, env)[1:]


def test_what_if_answers_what_the_page_prints(
    analyses_world: tuple[LiveServer, str], tmp_path: Path
) -> None:
    server, token = analyses_world
    curl, cli = _run(WHAT_IF, server, token, tmp_path)
    [answer] = json_documents(curl)
    assert_shown(readme_json(WHAT_IF), answer)
    assert "error" not in json.loads(cli)


def test_champion_vs_challenger_answers_what_the_page_prints(
    analyses_world: tuple[LiveServer, str], tmp_path: Path
) -> None:
    server, token = analyses_world
    [output] = _run(CHAMPION_VS_CHALLENGER, server, token, tmp_path)
    answer, summary, everything = _split_compare(output)
    shown = readme_json(CHAMPION_VS_CHALLENGER)
    assert_shown(shown, answer)
    assert summary == shown["summary"]
    assert everything == answer


def _split_compare(output: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The block's three outputs: curl's JSON, the CLI's sentence, the CLI's --json."""
    first = json.JSONDecoder().raw_decode(output)[1]
    curl = json.loads(output[:first])
    rest = output[first:].strip()
    sentence, _, everything = rest.partition("\n")
    return curl, sentence.strip(), json.loads(everything)


def test_segments_side_by_side_and_the_catalogue_answer(
    analyses_world: tuple[LiveServer, str], tmp_path: Path
) -> None:
    server, token = analyses_world
    [side_by_side] = _run(SIDE_BY_SIDE, server, token, tmp_path)
    answer = json.loads(side_by_side)
    assert {s["segment"] for s in answer["segments"]} == {"FR", "DE", "ES"}, answer
    catalogue = json.loads(_run(TRUST, server, token, tmp_path)[0])
    page = section(TRUST)
    assert f"(1:{round(catalogue['ratio'])})" in page, catalogue["ratio"]
    low, high = (100 * pi for pi in catalogue["range"])
    assert f"swing over pi {low:.3g}% to {high:.3g}%" in page, catalogue["range"]
    entries = {entry["name"]: entry for entry in catalogue["metrics"]}
    rows = {row[0]: row[1:] for row in _table(page)}
    for metric, label in (("precision", "precision"), ("f1", "F1")):
        sensitivity, _calibrated, swing = rows[label]
        assert_shown(float(sensitivity), entries[metric]["sensitivity"]["regular"], metric)
        lo, _, hi = swing.partition(" to ")
        shown_swing = {"at_pi_lo": float(lo), "at_pi_hi": float(hi)}
        assert_shown(shown_swing, entries[metric]["swing"], metric)
    for metric, label in (("accuracy", "accuracy (reference)"), ("hss", "HSS (reference)")):
        assert_shown(float(rows[label][0]), entries[metric]["sensitivity"]["regular"], metric)
    lo, _, hi = rows["average precision"][2].partition(" to ")
    assert_shown(
        {"at_pi_lo": float(lo), "at_pi_hi": float(hi)}, entries["average_precision"]["swing"]
    )
    auc = float(rows["ROC AUC"][2].removeprefix("none (").removesuffix(")"))
    assert_shown({"at_pi_lo": auc, "at_pi_hi": auc}, entries["roc_auc"]["swing"])


def _table(text: str) -> list[list[str]]:
    """The cells of a Markdown table's body rows."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_the_reference_is_re_anchored_as_the_page_says(
    analyses_world: tuple[LiveServer, str], tmp_path: Path
) -> None:
    server, token = analyses_world
    [outputs] = _run(REFERENCE, server, token, tmp_path)
    current, *versions = json_documents(outputs)
    assert current["current"]["version"] == 1, current
    kinds = [v["current"]["kind"] for v in versions]
    assert kinds == ["automatic", "recent", "period"], versions
    assert [v["current"]["version"] for v in versions] == [2, 3, 4], versions


def test_early_estimates_answer_what_the_page_prints(tmp_path: Path) -> None:
    shown = readme_json(EARLY)
    with served_world(tmp_path, send_early_world, (CHAMPION,)) as (server, token):

        def estimated() -> dict[str, Any] | None:
            window: dict[str, Any] = json.loads(_run(EARLY, server, token, tmp_path)[0])
            early = window.get("early") or {}
            return window if early.get("look") == shown["early"]["look"] else None

        answer = wait_for(estimated, "the early estimate of 2026-01-31", timeout=300, poll=1.0)
        headers = {"Authorization": f"Bearer {token}"}
        alerts = httpx.get(f"{server.base_url}/v1/models/card-fraud/alerts", headers=headers)
    assert_shown(shown, answer)
    # "The model pages on that evidence:"
    assert_shown(readme_json(EARLY, 1), alerts.json())


ANALYSIS_PATHS = {
    ("post", "/v1/models/{name}/whatif"): "/v1/models/card-fraud/whatif",
    ("get", "/v1/models/{name}/compare"): "/v1/models/card-fraud/compare?challenger=card-fraud-v2",
    ("get", "/v1/models/{name}/metric-catalogue"): "/v1/models/card-fraud/metric-catalogue",
    ("get", "/v1/models/{name}/segments/compare"): "/v1/models/card-fraud/segments/compare",
    ("get", "/v1/models/{name}/metric-trust"): "/v1/models/card-fraud/metric-trust",
}


def test_the_analyses_openapi_examples_are_real_answers(
    analyses_world: tuple[LiveServer, str],
) -> None:
    """The examples /docs shows for the analyses are this stream's answers, shortened."""
    server, token = analyses_world
    assert set(ANALYSIS_RESPONSES) - set(ANALYSIS_PATHS) == {
        ("get", "/v1/models/{name}/threshold-advice")  # a stream with an alert budget
    }
    with bearer_client(server.base_url, token) as http:
        for (method, route), path in ANALYSIS_PATHS.items():
            body = ANALYSIS_REQUESTS.get((method, route))
            answer = http.request(method.upper(), path, json=body)
            assert answer.status_code == 200, answer.text
            assert_shown(ANALYSIS_RESPONSES[(method, route)], answer.json(), route)
