"""The Python client against a real `calmon serve` (both backends), faults included."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.client import CalmonAPIError, CalmonClient
from app.db.tables import Batch, Prediction
from tests.support.flaky_proxy import FlakyProxy
from tests.support.server import LiveServer, free_port
from tests.support.waiting import wait_for
from tests.support.worker_data import drain

DAY = np.timedelta64(1, "D")
START = np.datetime64("2026-01-05T00:00:00", "us")


def _feed(rows: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    positives = rng.random(rows) < 0.05
    return {
        "ids": np.array([f"tx-{i}" for i in range(rows)]),
        "timestamps": START + (rng.random(rows) * 3 * 86_400e6).astype("timedelta64[us]"),
        "scores": np.where(positives, rng.normal(2.5, 1, rows), rng.normal(0, 1, rows)),
        "labels": positives.astype(float),
        "segments": rng.choice(["web", "pos"], rows),
    }


def _wait_computed(client: CalmonClient, model: str, sf: sessionmaker[Session]) -> None:
    """Drain in this process too (PostgreSQL runs no embedded worker), then wait for the
    server's embedded worker (SQLite) to finish any window it held."""
    drain(sf)
    wait_for(
        lambda: client.status(model)["dirty_windows"] == 0, "every window computed", timeout=60
    )


def _count(sf: sessionmaker[Session], table: type[Batch] | type[Prediction]) -> int:
    with sf() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def test_arrays_go_in_right_sized_batches_replay_as_such_and_read_back(
    live_server: LiveServer,
    make_token: Callable[..., str],
    session_factory: sessionmaker[Session],
) -> None:
    token = make_token("admin", "ingest", "read")
    feed = _feed(12_000)
    with CalmonClient(live_server.base_url, token, batch_rows=5_000, compress=True) as client:
        client.create_model("cards", 1.5, min_label_coverage=0.5)
        seen: list[int] = []
        sent = client.send("cards", **feed, on_batch=lambda batch: seen.append(batch.rows))
        assert seen == [5_000, 5_000, 2_000]
        assert (sent.batches, sent.rows_inserted, sent.rows_updated) == (3, 12_000, 0)
        assert sent.windows_touched == {
            "2026-01-05T00:00:00Z",
            "2026-01-06T00:00:00Z",
            "2026-01-07T00:00:00Z",
        }
        # The same feed again: every batch id is the same, so nothing is written twice.
        again = client.send("cards", **feed)
        assert (again.replayed_batches, again.rows_inserted, again.rows_updated) == (3, 0, 0)
        assert _count(session_factory, Batch) == 3

        labels = client.send_labels("cards", ids=["tx-0", "tx-1", "nope"], labels=[1, 1, 0])
        assert labels.unknown_ids == ["nope"]
        assert labels.rows_updated + labels.rows_unchanged == 2

        _wait_computed(client, "cards", session_factory)
        points = client.metrics("cards", "precision", segment="web")
        assert [p["window_start"] for p in points] == sorted(sent.windows_touched)
        frame = client.metrics_frame("cards", "precision", segment="web")
        assert list(frame.index) == [pd.Timestamp(p["window_start"]) for p in points]
        assert frame["regular"].tolist() == [p["regular"] for p in points]


def test_a_dataframe_with_aware_timestamps_and_missing_labels(
    live_server: LiveServer, make_token: Callable[..., str]
) -> None:
    token = make_token("admin", "ingest", "read")
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "timestamp": pd.to_datetime(
                ["2026-01-05 23:30", "2026-01-06 00:30", "2026-01-06 01:00"]
            ).tz_localize("Europe/Paris"),
            "score": [0.1, 0.9, 0.4],
            "label": pd.array([0, None, 1], dtype="Int8"),
        }
    )
    with CalmonClient(live_server.base_url, token) as client:
        client.create_model("paris", 0.5)
        sent = client.send_frame("paris", frame)
    # 23:30 in Paris is 22:30 UTC of the 5th; the model's windows are UTC days.
    assert sent.rows_inserted == 3
    assert sent.windows_touched == {"2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z"}


def test_label_times_and_sources_round_trip_through_send_and_send_labels(
    live_server: LiveServer, make_token: Callable[..., str], session_factory: sessionmaker[Session]
) -> None:
    token = make_token("admin", "ingest", "read")
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "timestamp": pd.to_datetime(["2026-01-05 10:00"] * 3).tz_localize("UTC"),
            "score": [0.9, 0.2, 0.4],
            "label": pd.array([1, None, None], dtype="Int8"),
            "labelled_at": pd.to_datetime(["2026-01-20 12:00", None, None]).tz_localize(
                "Europe/Paris"
            ),
            "source": ["feedback", None, None],
        }
    )
    with CalmonClient(live_server.base_url, token) as client:
        client.create_model("timed", 0.5)
        assert client.send_frame("timed", frame).rows_inserted == 3
        when = np.array(["2026-02-01T08:00", "NaT"], dtype="datetime64[us]")
        applied = client.send_labels(
            "timed", ids=["b", "c"], labels=[1, 0], labelled_at=when, sources=["chargeback", None]
        )
        assert applied.rows_updated == 2
    with session_factory() as session:
        stored = {
            row[0]: row[1:]
            for row in session.execute(
                select(Prediction.prediction_id, Prediction.labelled_at, Prediction.label_source)
            )
        }
    assert stored["a"] == (datetime(2026, 1, 20, 11, tzinfo=UTC), 1)
    assert stored["b"] == (datetime(2026, 2, 1, 8, tzinfo=UTC), 2)
    received, source = stored["c"]
    assert source == 3  # confirmed; timed when the server received it
    assert received is not None
    assert received > datetime(2026, 2, 1, tzinfo=UTC)


def test_amounts_and_entities_round_trip_through_send_and_send_frame(
    live_server: LiveServer, make_token: Callable[..., str], session_factory: sessionmaker[Session]
) -> None:
    """Arrays and a DataFrame carry them (integers as text, NaN as none); a feed sent again
    without them replays nothing and erases nothing; a bad one is the server's 422 by row."""
    token = make_token("admin", "ingest", "read")
    when = np.array(["2026-01-05T10:00"] * 3, dtype="datetime64[us]")
    frame = pd.DataFrame(
        {
            "id": ["d", "e"],
            "timestamp": pd.to_datetime(["2026-01-05 11:00"] * 2).tz_localize("UTC"),
            "score": [0.3, 0.6],
            "amount": [np.nan, 75.25],
            "entity": pd.array([4_111_111_111_111_111, None], dtype="Int64"),
        }
    )
    with CalmonClient(live_server.base_url, token) as client:
        client.create_model("valued", 0.5)
        sent = client.send(
            "valued",
            ids=["a", "b", "c"],
            timestamps=when,
            scores=[0.9, 0.2, 0.4],
            amounts=np.array([120.5, 0.0, np.nan]),
            entities=["card-1", "card-1", None],
        )
        assert sent.rows_inserted == 3
        assert client.send_frame("valued", frame).rows_inserted == 2
        without = client.send("valued", ids=["a"], timestamps=when[:1], scores=[0.9], prefix="x")
        assert (without.rows_inserted, without.rows_updated, without.rows_unchanged) == (0, 0, 1)
        with pytest.raises(CalmonAPIError) as refused:
            client.send("valued", ids=["z"], timestamps=when[:1], scores=[0.5], amounts=[-1])
    assert refused.value.status_code == 422
    assert (refused.value.details[0]["row"], refused.value.details[0]["field"]) == (0, "amount")
    with session_factory() as session:
        stored = {
            row[0]: row[1:]
            for row in session.execute(
                select(Prediction.prediction_id, Prediction.amount, Prediction.entity)
            )
        }
    assert stored == {
        "a": (120.5, "card-1"),
        "b": (0.0, "card-1"),
        "c": (None, None),
        "d": (None, "4111111111111111"),
        "e": (75.25, None),
    }


def test_a_refused_batch_raises_with_the_servers_row_and_field(
    live_server: LiveServer, make_token: Callable[..., str]
) -> None:
    with CalmonClient(live_server.base_url, make_token("admin", "ingest")) as client:
        client.create_model("bad", 0.5)
        when = [datetime(2026, 1, 5, tzinfo=UTC)] * 2
        with pytest.raises(CalmonAPIError) as refused:
            client.send("bad", ids=["a", "b"], timestamps=when, scores=[0.5, 0.5], labels=[0, 3])
    assert refused.value.status_code == 422
    assert refused.value.details[0]["row"] == 1
    assert refused.value.details[0]["field"] == "label"


@pytest.mark.parametrize("fault", ["lose_response", "unavailable"])
def test_retries_keep_the_batch_id_so_a_lost_answer_writes_once(
    live_server: LiveServer,
    make_token: Callable[..., str],
    session_factory: sessionmaker[Session],
    fault: str,
) -> None:
    token = make_token("admin", "ingest", "read")
    with CalmonClient(live_server.base_url, token) as admin:
        admin.create_model("flaky", 1.5)
    with (
        FlakyProxy(live_server.port, fault) as proxy,  # type: ignore[arg-type]
        CalmonClient(proxy.base_url, token, backoff=0.05) as client,
    ):
        sent = client.send("flaky", **_feed(1_000))
    assert proxy.faults == 1
    assert proxy.requests == 2
    assert _count(session_factory, Prediction) == 1_000
    assert _count(session_factory, Batch) == 1
    if fault == "lose_response":
        # The first attempt was stored; the retry is answered as its replay.
        assert (sent.replayed_batches, sent.rows_inserted) == (1, 0)
    else:
        assert (sent.replayed_batches, sent.rows_inserted) == (0, 1_000)


def test_retries_give_up_with_the_last_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with (
        CalmonClient(url, "t", retries=1, backoff=0.01) as client,
        pytest.raises(httpx.ConnectError),
    ):
        client.models()
