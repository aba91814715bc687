"""`calmon send FILE` as a real process against a real `calmon serve`."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.client import CalmonClient
from app.db.tables import Batch, Prediction
from tests.support.server import REPO_ROOT, LiveServer, clean_environment, free_port
from tests.support.waiting import wait_for

START = 1_767_571_200  # 2026-01-05T00:00:00Z


def _rows(n: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(1)
    return [
        {
            "id": f"tx-{i}",
            "timestamp": f"2026-01-0{5 + i % 3}T10:{i % 60:02d}:00Z",
            "score": round(float(rng.random()), 6),
            "label": None if i % 4 == 0 else int(rng.random() < 0.1),
            "segment": "web" if i % 2 else None,
        }
        for i in range(n)
    ]


def _write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "timestamp", "score", "label", "segment"])
        for row in rows:
            writer.writerow(["" if v is None else v for v in row.values()])
    return path


def _send(
    server: LiveServer, token: str, *args: str, wait: bool = True
) -> subprocess.Popen[str] | subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "app.cli", "send", "--url", server.base_url, *args]
    env = clean_environment({"CALMON_TOKEN": token})
    if not wait:
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _count(sf: sessionmaker[Session], table: type[Batch] | type[Prediction]) -> int:
    with sf() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


@pytest.fixture
def token(live_server: LiveServer, make_token: Callable[..., str]) -> str:
    minted = make_token("admin", "ingest", "read")
    with CalmonClient(live_server.base_url, minted) as client:
        client.create_model("cards", 0.5)
    return minted


def test_csv_jsonl_and_parquet_land_the_same_rows(
    live_server: LiveServer, token: str, tmp_path: Path, session_factory: sessionmaker[Session]
) -> None:
    rows = _rows(3_000)
    csv_file = _write_csv(tmp_path / "feed.csv", rows)
    done = _send(live_server, token, str(csv_file), "--model", "cards", "--batch-rows", "1000")
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 0, done.stderr
    assert "sent 3,000 of 3,000 rows (100%)" in done.stderr
    assert "3,000 inserted, 0 updated, 0 unchanged, 0 batches already stored" in done.stderr

    # The same rows as JSON lines and as Parquet: same ids and values, so every row is found
    # unchanged (not rewritten, no window to recompute).
    jsonl = tmp_path / "feed.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    parquet = tmp_path / "feed.parquet"
    table = pa.Table.from_pylist(rows)
    stamps = pa.compute.strptime(table["timestamp"], "%Y-%m-%dT%H:%M:%SZ", "us")
    table = table.set_column(1, "timestamp", stamps.cast(pa.timestamp("us", "UTC")))
    pq.write_table(table, parquet)
    for path in (jsonl, parquet):
        again = _send(live_server, token, str(path), "--model", "cards", "--quiet")
        assert isinstance(again, subprocess.CompletedProcess)
        assert again.returncode == 0, again.stderr
        assert "0 inserted, 0 updated, 3,000 unchanged, 0 batches" in again.stderr
        assert "0 windows touched" in again.stderr
    assert _count(session_factory, Prediction) == 3_000


def test_a_bad_value_is_reported_by_its_row_in_the_file(
    live_server: LiveServer, token: str, tmp_path: Path
) -> None:
    rows = _rows(2_500)
    rows[2_100]["score"] = "high"
    path = _write_csv(tmp_path / "bad.csv", rows)
    done = _send(live_server, token, str(path), "--model", "cards", "--batch-rows", "1000")
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 1
    assert "row 2101" in done.stderr
    assert "score" in done.stderr


def test_amount_and_entity_columns_land_and_a_bad_one_is_named_by_its_row(
    live_server: LiveServer, token: str, tmp_path: Path, session_factory: sessionmaker[Session]
) -> None:
    rows = [
        {**row, "amount": None if i % 5 == 0 else round(i * 1.5, 2), "entity": f"card-{i % 7}"}
        for i, row in enumerate(_rows(1_200))
    ]
    rows[3]["entity"] = None
    path = tmp_path / "valued.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(rows[0]))
        writer.writerows(["" if v is None else v for v in row.values()] for row in rows)
    done = _send(live_server, token, str(path), "--model", "cards", "--batch-rows", "500")
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 0, done.stderr
    assert "1,200 inserted" in done.stderr
    with session_factory() as session:
        stored = {
            row[0]: row[1:]
            for row in session.execute(
                select(Prediction.prediction_id, Prediction.amount, Prediction.entity)
            )
        }
    assert stored == {row["id"]: (row["amount"], row["entity"]) for row in rows}
    rows[1_100]["amount"] = -4
    rows[1_100]["id"] = "tx-new"
    bad = tmp_path / "bad.csv"
    with bad.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(rows[0]))
        writer.writerows(["" if v is None else v for v in row.values()] for row in rows)
    done = _send(live_server, token, str(bad), "--model", "cards", "--batch-rows", "500")
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 1
    assert "row 1101" in done.stderr
    assert "amount" in done.stderr
    assert _count(session_factory, Prediction) == 1_200


def test_a_run_killed_halfway_and_restarted_lands_every_row_exactly_once(
    live_server: LiveServer, token: str, tmp_path: Path, session_factory: sessionmaker[Session]
) -> None:
    total, batch_rows = 60_000, 500
    path = _write_csv(tmp_path / "big.csv", _rows(total))
    args = (str(path), "--model", "cards", "--batch-rows", str(batch_rows), "--quiet")
    first = _send(live_server, token, *args, wait=False)
    assert isinstance(first, subprocess.Popen)

    def a_quarter_landed() -> bool:
        assert first.poll() is None, "finished before it could be killed: use a bigger file"
        return _count(session_factory, Prediction) >= total // 4

    wait_for(a_quarter_landed, "a quarter of the rows stored", timeout=120, poll=0.01)
    first.send_signal(signal.SIGKILL)
    first.wait()
    time.sleep(1.0)  # a request in flight at the kill may still commit on the server
    landed = _count(session_factory, Prediction)
    assert 0 < landed < total

    second = _send(live_server, token, *args)
    assert isinstance(second, subprocess.CompletedProcess)
    assert second.returncode == 0, second.stderr
    assert _count(session_factory, Prediction) == total
    assert _count(session_factory, Batch) == total // batch_rows  # each batch stored once
    # What the first run stored is replayed, not rewritten: no row was updated.
    assert (
        f"{total - landed:,} inserted, 0 updated, 0 unchanged, {landed // batch_rows} batches"
        in (second.stderr)
    )


def test_a_label_file_sets_labels_with_their_times_and_sources(
    live_server: LiveServer, token: str, tmp_path: Path, session_factory: sessionmaker[Session]
) -> None:
    """A chargeback export (id, label, labelled_at, source; no timestamp, no score) goes to
    the label endpoint; sending it again changes nothing; a bad entry names its file row."""
    rows = [row | {"label": None} for row in _rows(1_500)]
    feed = _send(
        live_server, token, str(_write_csv(tmp_path / "feed.csv", rows)), "--model", "cards"
    )
    assert isinstance(feed, subprocess.CompletedProcess)
    assert feed.returncode == 0, feed.stderr
    labels = tmp_path / "chargebacks.csv"
    lines = ["id,label,labelled_at,source"]
    lines += [
        f"tx-{i},1,2026-02-0{1 + i // 3 % 3}T09:00:00Z,chargeback" for i in range(0, 1_500, 3)
    ]
    lines += ["tx-1,0,,", "tx-missing,1,,"]
    labels.write_text("\n".join(lines) + "\n")
    args = (str(labels), "--model", "cards", "--batch-rows", "200")
    done = _send(live_server, token, *args)
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 0, done.stderr
    assert "sent 502 of 502 rows (100%)" in done.stderr
    assert "502 labels: 501 changed, 0 already as sent, 1 ids the model does not have" in (
        done.stderr
    )
    with session_factory() as session:
        stored = {
            row.prediction_id: (row.label, row.labelled_at, row.label_source)
            for row in session.execute(
                select(
                    Prediction.prediction_id,
                    Prediction.label,
                    Prediction.labelled_at,
                    Prediction.label_source,
                )
            )
        }
    assert stored["tx-3"] == (1, datetime(2026, 2, 2, 9, tzinfo=UTC), 2)
    assert stored["tx-6"] == (1, datetime(2026, 2, 3, 9, tzinfo=UTC), 2)
    assert stored["tx-1"][0::2] == (0, 3)  # received now, confirmed
    assert stored["tx-2"] == (None, None, None)
    again = _send(live_server, token, *args, "--quiet")
    assert isinstance(again, subprocess.CompletedProcess)
    assert "0 changed, 501 already as sent" in again.stderr
    labels.write_text("id,label,labelled_at\ntx-4,1,2026-02-01T09:00:00\n")
    refused = _send(live_server, token, str(labels), "--model", "cards")
    assert isinstance(refused, subprocess.CompletedProcess)
    assert refused.returncode == 1
    assert "row 1: labelled_at" in refused.stderr
    assert "no UTC offset" in refused.stderr


def test_an_unreachable_service_is_one_clear_line(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "feed.csv", _rows(3))
    command = [sys.executable, "-m", "app.cli", "send", str(path), "--model", "cards"]
    done = subprocess.run(
        [*command, "--url", f"http://127.0.0.1:{free_port()}", "--retries", "1"],
        cwd=REPO_ROOT,
        env=clean_environment({"CALMON_TOKEN": "t"}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "calmon: cannot reach http://127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr
