"""Files and values as users hold them, sent through the Python client and `calmon send`
(issue 26, points 2 and 4): an Excel "CSV UTF-8" with semicolons and Unix seconds, naive
datetimes beside numpy's, and a refusal whose text says what is wrong. Each test failed on
the code before the issue. A real `calmon serve`, both backends."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from app.client import CalmonAPIError, CalmonClient
from tests.support.server import REPO_ROOT, LiveServer, clean_environment

WHEN = [datetime(2026, 1, 5, 10, 0), datetime(2026, 1, 5, 11, 30, 0, 250_000)]  # naive: UTC


def test_calmon_send_takes_an_excel_csv_with_a_bom_semicolons_and_unix_seconds(
    live_server: LiveServer, make_token: Callable[..., str], tmp_path: Path
) -> None:
    token = make_token("admin", "ingest", "read")
    seconds = [round(when.replace(tzinfo=UTC).timestamp(), 3) for when in WHEN]
    path = tmp_path / "export.csv"
    lines = ["id;timestamp;score;label"] + [
        f"tx-{i};{stamp};0.{i + 1};{i % 2}" for i, stamp in enumerate(seconds)
    ]
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
    with CalmonClient(live_server.base_url, token) as client:
        client.create_model("excel", 0.5)
        command = [sys.executable, "-m", "app.cli", "send", str(path), "--model", "excel"]
        done = subprocess.run(
            [*command, "--url", live_server.base_url],
            cwd=REPO_ROOT,
            env=clean_environment({"CALMON_TOKEN": token}),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "2 inserted" in done.stderr
        # The same rows with naive datetimes (read as UTC): the same instants, so unchanged.
        again = client.send(
            "excel", ids=["tx-0", "tx-1"], timestamps=WHEN, scores=[0.1, 0.2], labels=[0, 1]
        )
    assert again.rows_unchanged == 2


def test_naive_datetimes_are_utc_as_numpy_datetime64_are(
    live_server: LiveServer, make_token: Callable[..., str]
) -> None:
    with CalmonClient(live_server.base_url, make_token("admin", "ingest")) as client:
        client.create_model("naive", 0.5)
        as_numpy = np.array(WHEN, dtype="datetime64[us]")
        first = client.send("naive", ids=["a", "b"], timestamps=as_numpy, scores=[0.1, 0.2])
        assert first.rows_inserted == 2
        second = client.send("naive", ids=["a", "b"], timestamps=WHEN, scores=[0.1, 0.2])
        # The same instants make the same request, byte for byte: a replay of the first.
        assert second.replayed_batches == 1
        # As labelled_at too: the same rule wherever a date-time is given.
        labelled = client.send_labels("naive", ids=["a"], labels=[1], labelled_at=[WHEN[1]])
        assert labelled.rows_updated == 1


def test_a_refusal_says_which_rows_and_fields_in_its_text(
    live_server: LiveServer, make_token: Callable[..., str]
) -> None:
    with CalmonClient(live_server.base_url, make_token("admin", "ingest")) as client:
        client.create_model("refused", 0.5)
        with pytest.raises(CalmonAPIError) as refused:
            client.send(
                "refused",
                ids=[f"t{i}" for i in range(9)],
                timestamps=[WHEN[0]] * 9,
                scores=[0.5] * 9,
                labels=[3] * 8 + [0],
            )
    text = str(refused.value)
    assert text.startswith("HTTP 422 invalid_batch: batch refused, nothing was written: 8 invalid")
    assert "\n  row 0, label: must be 0, 1 or null" in text
    assert "\n  row 4, label:" in text
    assert "row 5" not in text  # the first five, then how many more
    assert text.endswith("\n  ... 3 more in .details")
    assert len(refused.value.details) == 8
