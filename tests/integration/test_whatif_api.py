"""What-if priors through the API, on windows a real worker computed (both backends).

Lampert & Gancarski (2014), "The bane of skew", printed numbers reproduced through
``POST /v1/models/{name}/whatif``: Table 2's precisions moved between skews by eq. (3), the
bacteria example (section 4.2: 0.7273 at a fixed skew, 0.4689 temporal, eq. 4), the minimum
achievable areas of Fig. 9 (eq. 20) and a random classifier's integrated precision (Theorem 10).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.metrics.skew import skew_range_from_history
from tests.support.analyses import add_windows, grouped, register
from tests.support.api import AuthHeaders
from tests.support.streams import day_start, gaussian_window
from tests.support.worker_data import drain

# Lampert Table 2: (tp, fp, fn, tn) of one algorithm at four skews, and the printed precision.
TABLE_2 = {
    "a": ((73, 276, 18, 643), 0.21),
    "b": ((200, 228, 50, 532), 0.47),
    "c": ((408, 150, 102, 350), 0.73),
    "d": ((735, 27, 184, 64), 0.97),
}


def _matrix_window(tp: int, fp: int, fn: int, tn: int) -> Any:
    """Flagged rows at 0.9, the rest at 0.1, threshold 0.5: exactly this confusion matrix."""
    return grouped([(0.9, tp, fp), (0.1, fn, tn)])


def _skew(name: str) -> float:
    tp, fp, fn, tn = TABLE_2[name][0]
    return (tp + fn) / (tp + fp + fn + tn)


def _what_if(client: TestClient, headers: dict[str, str], name: str, **body: Any) -> Any:
    response = client.post(f"/v1/models/{name}/whatif", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _one_day(day: int) -> dict[str, str]:
    """The period of window ``day`` alone."""
    return {"from": day_start(day).isoformat(), "to": day_start(day + 1).isoformat()}


def test_lampert_papers_printed_numbers_through_the_api(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """Lampert Table 2 (eq. 3: 0.21 / 0.47 / 0.73), section 4.2 (0.7273 fixed, 0.4689 temporal),
    Fig. 9 (eq. 20: 0.1424 / 0.2349 / 0.5471) and Theorem 10 ((pi1 + pi2) / 2), via the API."""
    register(client, auth_headers, "table2")
    add_windows(session_factory, "table2", [_matrix_window(*m) for m, _ in TABLE_2.values()])
    register(client, auth_headers, "bacteria")
    # Section 4.2: N = 10,000, Np = 4,000, TPR 0.8, FPR 0.2.
    add_windows(session_factory, "bacteria", [_matrix_window(3200, 1200, 800, 4800)])
    register(client, auth_headers, "random")
    # Every score level holds positives and negatives in the same 1:9 ratio: TPR = FPR everywhere.
    add_windows(session_factory, "random", [grouped([(s, 10, 90) for s in (0.8, 0.6, 0.4, 0.2)])])
    drain(session_factory)
    read = auth_headers("read")

    # Table 2, eq. (3): each matrix's window re-expressed at matrices a, b and c's skews.
    targets = ["a", "b", "c"]
    for day, source in enumerate(TABLE_2):
        body = {**_one_day(day), "priors": [_skew(t) for t in targets], "range": None}
        out = _what_if(client, read, "table2", **body)
        assert out["period"]["windows"] == 1
        for target, prior in zip(targets, out["priors"], strict=True):
            assert round(prior["metrics"]["precision"]["value"], 2) == TABLE_2[target][1], source

    # Section 4.2: 0.7273 at the window's own skew 0.4; eq. (4) along pi(t) = 2^t / 10,000
    # capped at 1, t in [0, 20] (exact at the points, log-linear between them), 0.4689.
    cap = math.log2(10_000)
    points = [[t, 2.0**t / 10_000] for t in range(14)] + [[cap, 1.0], [20.0, 1.0]]
    out = _what_if(
        client,
        read,
        "bacteria",
        priors=[0.4],
        range={"pi_lo": 0.0, "pi_hi": 0.5},
        trajectory={"points": points, "interpolation": "log"},
    )
    assert round(out["priors"][0]["metrics"]["precision"]["value"], 4) == 0.7273
    assert round(out["trajectory"]["precision"], 4) == 0.4689
    # The same trajectory sampled densely and interpolated linearly agrees to 1e-5.
    dense = [[t, min(2.0**t / 10_000, 1.0)] for t in np.linspace(0.0, 20.0, 4001)]
    linear = _what_if(client, read, "bacteria", trajectory={"points": dense}, range=None)
    assert linear["trajectory"]["precision"] == pytest.approx(0.468919, abs=1e-5)

    # Fig. 9, eq. (20): minimum achievable areas; Theorem 10: the random classifier's
    # integrated precision and its integrated P-R area are (pi1 + pi2) / 2.
    for (lo, hi), printed in (((0.0, 0.5), 0.1424), ((0.3, 0.5), 0.2349), ((0.6, 0.9), 0.5471)):
        ranged = {"pi_lo": lo, "pi_hi": hi}
        minimum = _what_if(client, read, "bacteria", range=ranged, priors=[0.4])["range"]
        assert round(minimum["min_average_precision"], 4) == printed
        assert minimum["source"] == "request"
        rand = _what_if(client, read, "random", range=ranged, priors=[0.1])["range"]
        assert rand["precision"] == pytest.approx((lo + hi) / 2, abs=1e-14)
        assert rand["average_precision"] == pytest.approx((lo + hi) / 2, abs=1e-14)
        assert rand["normalised_average_precision"] < 0.5


def _window_detail(client: TestClient, headers: dict[str, str], day: int) -> Any:
    response = client.get(f"/v1/models/drift/windows/{day_start(day).isoformat()}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_what_if_at_a_windows_own_pi_is_its_regular_metrics_and_at_pi0_its_calibrated(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """One window's what-if at its own pi equals every stored regular value bit for bit; at
    pi0 every stored calibrated value; its intervals hold the values; the default range is the
    history's mean +- 3 std of the windows' fraud rates."""
    rng = np.random.default_rng(4)
    register(client, auth_headers, "drift", threshold=1.5, alert_capacity=70)
    windows = [gaussian_window(rng, 3000, pi, 2.0) for pi in (0.02, 0.05, 0.03, 0.04)]
    add_windows(session_factory, "drift", windows)
    drain(session_factory)
    read = auth_headers("read")

    for day in (1, 2):
        detail = _window_detail(client, read, day)
        out = _what_if(
            client, read, "drift", **_one_day(day), priors=[detail["pi"], detail["pi0"]], range=None
        )
        own, at_pi0 = out["priors"]
        assert own["pi"] == detail["pi"]
        for metric, stored in detail["metrics"].items():
            assert own["metrics"][metric]["value"] == stored["regular"], metric
            assert at_pi0["metrics"][metric]["value"] == stored["calibrated"], metric
            if stored["calibrated"] is None:  # the value metrics: these rows carry no amount
                assert at_pi0["metrics"][metric]["ci"] is None, metric
                continue
            low, high = at_pi0["metrics"][metric]["ci"]
            assert low <= at_pi0["metrics"][metric]["value"] <= high, metric

    whole = _what_if(client, read, "drift")
    period = whole["period"]
    assert period["windows"] == 4
    pis = [_window_detail(client, read, d)["pi"] for d in range(4)]
    assert period["current_pi"] == pis[-1]
    assert (whole["range"]["pi_lo"], whole["range"]["pi_hi"]) == skew_range_from_history(pis)
    assert whole["range"]["source"] == "history"
    low, high = whole["range"]["precision_ci"]
    assert low < whole["range"]["precision"] < high
    low, high = whole["range"]["average_precision_ci"]
    assert low < whole["range"]["average_precision"] < high
    # With no priors asked: pi0 and the newest window's fraud rate.
    assert [p["pi"] for p in whole["priors"]] == [period["pi0"], period["current_pi"]]
    # A flat weight is the unweighted mean; a weight on one end pulls the mean towards it.
    lo, hi = whole["range"]["pi_lo"], whole["range"]["pi_hi"]
    flat = _what_if(
        client, read, "drift", range={"pi_lo": lo, "pi_hi": hi, "weight": [[lo, 1.0], [hi, 1.0]]}
    )
    assert flat["range"]["weighted"] is True
    assert flat["range"]["precision"] == pytest.approx(whole["range"]["precision"], abs=1e-12)
    tilted = _what_if(
        client, read, "drift", range={"pi_lo": lo, "pi_hi": hi, "weight": [[lo, 0.0], [hi, 1.0]]}
    )
    assert tilted["range"]["precision"] > whole["range"]["precision"]
    # A trajectory that stays at one fraud rate is that fraud rate's precision and AP.
    still = _what_if(
        client, read, "drift", priors=[0.03], trajectory={"points": [[0, 0.03], [30, 0.03]]}
    )
    metrics = still["priors"][0]["metrics"]
    assert still["trajectory"]["precision"] == pytest.approx(
        metrics["precision"]["value"], abs=1e-12
    )
    assert still["trajectory"]["average_precision"] == pytest.approx(
        metrics["average_precision"]["value"], abs=1e-12
    )
    # Its intervals are the bootstrap's at that rate, from draws of their own: about as wide.
    for name in ("precision", "average_precision"):
        low, high = still["trajectory"][f"{name}_ci"]
        assert low < still["trajectory"][name] < high
        prior_low, prior_high = metrics[name]["ci"]
        assert high - low == pytest.approx(prior_high - prior_low, rel=0.25)
    bare = _what_if(
        client, read, "drift", trajectory={"points": [[0, 0.03], [30, 0.03]]}, intervals=False
    )
    assert bare["trajectory"]["precision_ci"] is None
    assert bare["trajectory"]["average_precision_ci"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"priors": [0.0]}, "priors"),
        ({"priors": [1.5]}, "priors"),
        ({"range": {"pi_lo": 0.3, "pi_hi": 0.1}}, "range"),
        ({"range": {"pi_lo": 0.3}}, "range"),
        ({"range": {"pi_lo": 0.1, "pi_hi": 0.3, "weight": [[0.2, 1.0]]}}, "range"),
        ({"trajectory": {"points": [[1, 0.1], [0, 0.2]]}}, "trajectory"),
        ({"trajectory": {"points": [[0, 0.0], [1, 0.2]], "interpolation": "log"}}, "trajectory"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_what_if_requests_are_4xx_naming_the_field(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    body: dict[str, Any],
    field: str,
) -> None:
    """Bad priors, ranges, weights and trajectories are 422 naming the field; never a 5xx."""
    register(client, auth_headers, "small")
    add_windows(session_factory, "small", [_matrix_window(*TABLE_2["a"][0])] * 2)
    drain(session_factory)
    response = client.post("/v1/models/small/whatif", json=body, headers=auth_headers("read"))
    assert response.status_code == 422, response.text
    assert field in response.text


def test_what_if_without_mature_windows_or_model_is_404(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """An unknown model, or a period without mature windows, is a 404 that says which."""
    read = auth_headers("read")
    assert client.post("/v1/models/nope/whatif", json={}, headers=read).status_code == 404
    register(client, auth_headers, "empty")
    response = client.post("/v1/models/empty/whatif", json={}, headers=read)
    assert response.status_code == 404
    assert "no mature window" in response.json()["error"]["message"]
    unauthenticated = client.post("/v1/models/empty/whatif", json={})
    assert unauthenticated.status_code == 401


def test_openapi_documents_the_analyses(client: TestClient) -> None:
    """The three analyses are in the OpenAPI document, tagged, with their schemas."""
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert paths["/v1/models/{name}/whatif"]["post"]["tags"] == ["analyses"]
    assert paths["/v1/models/{name}/compare"]["get"]["tags"] == ["analyses"]
    assert paths["/v1/models/{name}/metric-catalogue"]["get"]["tags"] == ["analyses"]
    schemas = spec["components"]["schemas"]
    assert {"WhatIfRequest", "WhatIfOut", "CompareOut", "CatalogueOut"} <= set(schemas)
    assert "eq. 7" in schemas["RangeOut"]["properties"]["precision"]["description"]


def test_a_nul_in_the_body_is_a_422_not_a_500(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """The input rules of every request body hold here too (found by schemathesis: a segment
    with a NUL reached PostgreSQL)."""
    register(client, auth_headers, "nul")
    body = {"segment": "a\u0000b", "priors": [0.4]}
    response = client.post("/v1/models/nul/whatif", json=body, headers=auth_headers("read"))
    assert response.status_code == 422, response.text
    assert "segment" in response.text
