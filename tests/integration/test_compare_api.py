"""Champion vs challenger through the API, on shadow traffic a real worker computed.

Every fraud rate at which the two pooled curves' AP order flips (Lampert Algorithm 1) is checked
against a dense brute-force scan of AP(pi) on the same pooled curves, refined by scipy's brentq,
to 1e-6: for two binormal models with different variances, and for curves built to cross 3 times.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient
from scipy.optimize import brentq
from sqlalchemy.orm import Session, sessionmaker

from app import cli
from app.metrics import CurveSketch
from app.metrics.skew import average_precision_at_skew
from app.settings import Settings
from tests.support.analyses import Window, add_windows, grouped, pooled, register
from tests.support.api import AuthHeaders
from tests.support.worker_data import drain

# Built to cross 3 times (100 positives, 6,000 negatives): (score, positives, negatives).
THREE_A = [(0.9, 48, 2), (0.7, 37, 81), (0.1, 15, 5917)]
THREE_B = [(0.9, 66, 5), (0.7, 34, 1071), (0.1, 0, 4924)]


def _brute_force_flips(a: CurveSketch, b: CurveSketch) -> npt.NDArray[np.float64]:
    """Sign changes of AP_a - AP_b on a dense grid of pi in [1e-5, 1 - 1e-5] (uniform in
    logit, 20,000 points), each refined by brentq to 1e-15."""
    tpr_a, fpr_a = a.roc_points()
    tpr_b, fpr_b = b.roc_points()
    grid = 1.0 / (1.0 + np.exp(-np.linspace(-11.5, 11.5, 20_000)))

    def ap(tpr: Any, fpr: Any, pis: Any) -> Any:
        steps = np.diff(tpr, prepend=0.0)
        pis = np.atleast_1d(pis)[:, None]
        return (pis * tpr / (pis * tpr + (1 - pis) * fpr)) @ steps

    values = ap(tpr_a, fpr_a, grid) - ap(tpr_b, fpr_b, grid)
    flips = np.flatnonzero(np.sign(values[1:]) != np.sign(values[:-1]))

    def gap(pi: float) -> float:
        return average_precision_at_skew(a, pi) - average_precision_at_skew(b, pi)

    return np.array([brentq(gap, grid[i], grid[i + 1], xtol=1e-15) for i in flips])


def _shadow_traffic(days: int, rows: int, seed: int) -> tuple[list[Window], list[Window]]:
    """The same rows (labels) scored by two binormal models: positives N(1.5, 2) for the
    champion and N(1.5, 0.7) for the challenger, negatives N(0, 1) for both."""
    rng = np.random.default_rng(seed)
    champion, challenger = [], []
    for day in range(days):
        pi = 0.03 + 0.01 * day
        labels = (rng.random(rows) < pi).astype(np.int8)
        noise = rng.normal(0.0, 1.0, rows)
        base = rng.normal(0.0, 1.0, rows)
        a = np.where(labels == 1, 1.5 + 2.0 * noise, base)
        b = np.where(labels == 1, 1.5 + 0.7 * noise, base)
        champion.append((np.round(a, 3).astype(np.float64), labels))
        challenger.append((np.round(b, 3).astype(np.float64), labels))
    return champion, challenger


def _computed_pair(
    client: TestClient,
    auth_headers: AuthHeaders,
    sf: sessionmaker[Session],
    pair: tuple[list[Window], list[Window]],
    threshold: float = 0.5,
) -> None:
    """Register "champ" and "chall", store their windows (one a day) and compute them all."""
    for name, windows in zip(("champ", "chall"), pair, strict=True):
        register(client, auth_headers, name, threshold=threshold)
        add_windows(sf, name, windows)
    drain(sf)


def _compare(client: TestClient, headers: dict[str, str], **params: Any) -> Any:
    response = client.get("/v1/models/champ/compare", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_binormal_shadow_traffic_flips_match_a_dense_scan(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """Two binormal models with different variances on the same rows: every flip of the pooled
    curves' AP order to 1e-6 of a dense scan, the leaders on either side right, the difference
    at pi0 and the current fraud rate exact with an interval around it, the series side by side."""
    pair = _shadow_traffic(days=4, rows=3000, seed=7)
    _computed_pair(client, auth_headers, session_factory, pair, threshold=1.5)

    out = _compare(client, auth_headers("read"), challenger="chall", replicates=300)
    a, b = pooled(session_factory, "champ"), pooled(session_factory, "chall")
    brute = _brute_force_flips(a, b)
    assert brute.size >= 1
    found = np.array([inv["pi"] for inv in out["inversions"]])
    assert found == pytest.approx(brute, abs=1e-6)
    for inv in out["inversions"]:
        below = average_precision_at_skew(b, inv["pi"] * 0.9) - average_precision_at_skew(
            a, inv["pi"] * 0.9
        )
        assert inv["below"] == ("challenger" if below > 0 else "champion")
        assert inv["above"] != inv["below"]

    for key, pi in (
        ("at_pi0", out["pi0"]),
        ("at_current_pi", out["champion_period"]["current_pi"]),
    ):
        side = out[key]
        assert side["pi"] == pi
        assert side["champion"] == average_precision_at_skew(a, pi)
        assert side["challenger"] == average_precision_at_skew(b, pi)
        low, high = side["ci"]
        assert low <= side["difference"] <= high
        assert side["decided"] == (low > 0 or high < 0)
    ranged = out["over_range"]
    assert ranged["pi_lo"] < out["champion_period"]["pi_mean"] < ranged["pi_hi"]
    assert ranged["flips_inside"] == [p for p in found if ranged["pi_lo"] < p < ranged["pi_hi"]]
    assert len(out["series"]) == 4
    for point in out["series"]:
        assert point["difference"] == pytest.approx(
            point["challenger"]["value"] - point["champion"]["value"], abs=1e-15
        )
        # MOVER from the two stored intervals: around the difference, wider than either.
        low, high = point["difference_ci"]
        assert low < point["difference"] < high
        for side in ("champion", "challenger"):
            side_low, side_high = point[side]["ci"]
            assert high - low > side_high - side_low
        assert point["decided"] == (low > 0 or high < 0)
    assert "leads" in out["summary"]


def test_curves_built_to_cross_three_times(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """Curves that cross 3 times: all three flips (near 0.14%, 1.4% and 21%) to 1e-6 of the
    dense scan, with the leader alternating, and the summary naming the three fraud rates."""
    pair = ([grouped(THREE_A)] * 2, [grouped(THREE_B)] * 2)
    _computed_pair(client, auth_headers, session_factory, pair)

    read = auth_headers("read")
    out = _compare(client, read, challenger="chall", replicates=200)
    brute = _brute_force_flips(pooled(session_factory, "champ"), pooled(session_factory, "chall"))
    assert brute.size == 3
    found = [inv["pi"] for inv in out["inversions"]]
    assert found == pytest.approx(brute, abs=1e-6)
    leaders = [out["inversions"][0]["below"]] + [inv["above"] for inv in out["inversions"]]
    assert leaders in (
        ["champion", "challenger", "champion", "challenger"],
        ["challenger", "champion", "challenger", "champion"],
    )
    assert out["summary"].count("%") >= 4

    unknown = client.get("/v1/models/champ/compare", params={"challenger": "x"}, headers=read)
    assert unknown.status_code == 404
    bad_metric = client.get(
        "/v1/models/champ/compare", params={"challenger": "chall", "metric": "nope"}, headers=read
    )
    assert bad_metric.status_code == 422
    assert "metric" in bad_metric.text


def test_a_tie_reads_as_a_tie(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """Two models scoring the same rows identically: no flip, a zero difference, and a summary
    that says they tie (it once said "The tie has the higher average precision ... the tie leads
    by 0.0000")."""
    same = _shadow_traffic(days=3, rows=1500, seed=5)[0]
    _computed_pair(client, auth_headers, session_factory, (same, same), threshold=1.5)

    out = _compare(client, auth_headers("read"), challenger="chall", replicates=100)
    assert out["inversions"] == []
    assert out["at_current_pi"]["leader"] == "tie"
    summary = out["summary"]
    assert "the two models tie" in summary
    assert "The tie" not in summary
    assert "the tie" not in summary
    assert "leads by" not in summary


def test_cli_whatif_and_compare_print_what_the_api_gives(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`calmon whatif` prints the what-if JSON the API returns; `calmon compare` the summary
    sentence (or the JSON with --json); a bad argument or an unknown model exits 1 with a
    message, not a traceback."""
    pair = _shadow_traffic(days=3, rows=2000, seed=3)
    _computed_pair(client, auth_headers, session_factory, pair, threshold=1.5)
    read = auth_headers("read")

    argv = ["whatif", "champ", "--pi", "0.02", "--range", "0.01", "0.05", "--no-intervals"]
    argv += ["--trajectory", "0:0.01", "10:0.04", "--interpolation", "log"]
    assert cli.run(argv, settings) == 0
    printed = json.loads(capsys.readouterr().out)
    body = {
        "priors": [0.02],
        "range": {"pi_lo": 0.01, "pi_hi": 0.05},
        "intervals": False,
        "trajectory": {"points": [[0, 0.01], [10, 0.04]], "interpolation": "log"},
    }
    response = client.post("/v1/models/champ/whatif", json=body, headers=read)
    assert printed == response.json()

    assert cli.run(["compare", "champ", "chall", "--replicates", "200"], settings) == 0
    summary = capsys.readouterr().out.strip()
    api = _compare(client, read, challenger="chall", replicates=200)
    assert summary == api["summary"]
    assert cli.run(["compare", "champ", "chall", "--replicates", "200", "--json"], settings) == 0
    assert json.loads(capsys.readouterr().out) == api

    assert cli.run(["compare", "champ", "nope"], settings) == 1
    assert "no model named 'nope'" in capsys.readouterr().err
    assert cli.run(["whatif", "champ", "--range", "0.3", "0.1"], settings) == 1
    assert "pi_lo" in capsys.readouterr().err
