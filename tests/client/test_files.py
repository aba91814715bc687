"""Reading prediction files: both CSV readers cut the same chunks (the batch ids depend on it)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from app.client import file_kinds, files, json_lines
from app.client.columns import Chunk, encode_chunk
from app.client.files import FileFormatError, PredictionFile

CSV = "id,timestamp,score,label,segment\n" + "".join(
    f"tx-{i},2026-01-05T10:00:{i % 60:02d}Z,0.{i},{i % 3 if i % 3 < 2 else ''},"
    f"{'web' if i % 2 else ''}\n"
    for i in range(2_500)
)


def test_pyarrow_and_the_csv_module_give_the_same_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "feed.csv"
    path.write_text(CSV)
    feed = PredictionFile.open(path)
    assert feed.rows == 2_500
    with_pyarrow = list(feed.chunks(1_000))
    monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    with_csv_module = list(feed.chunks(1_000))
    # The same requests, byte for byte: the same batch ids.
    assert _bodies(with_pyarrow) == _bodies(with_csv_module)
    assert [(c.first, c.rows) for c in with_pyarrow] == [(0, 1_000), (1_000, 1_000), (2_000, 500)]
    first = with_pyarrow[0].columns
    assert first["label"][:3] == [0, 1, None]
    assert first["segment"][:2] == [None, "web"]
    assert first["score"][1] == 0.1


@pytest.mark.parametrize("reader", ["pyarrow", "csv module"])
def test_unix_seconds_and_a_bad_score_reach_the_server_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    if reader == "csv module":
        monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    path = tmp_path / "feed.csv"
    path.write_text("id,timestamp,score\na,1767607200,0.5\nb,1767607201.5,high\n")
    [chunk] = PredictionFile.open(path).chunks(10)
    body = msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)
    assert body["columns"]["timestamp"] == [1767607200, 1767607201.5]
    assert body["columns"]["score"] == [0.5, "high"]  # refused by the server, naming row 1


def _bodies(chunks: list[Chunk]) -> list[bytes]:
    return [encode_chunk(chunk, "feed.csv", compress=False).body for chunk in chunks]


def test_a_short_line_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "short.csv"
    path.write_text("id,timestamp,score\na,2026-01-05T10:00:00Z,0.5\nb,2026-01-05T10:00:00Z\n")
    monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    with pytest.raises(FileFormatError, match="line 3 has 2 fields, the header 3"):
        list(PredictionFile.open(path).chunks(10))


def test_unknown_columns_are_refused_before_sending(tmp_path: Path) -> None:
    path = tmp_path / "typo.csv"
    path.write_text("id,timestamp,score,lable\n")
    with pytest.raises(FileFormatError, match="unknown columns \\['lable'\\]"):
        list(PredictionFile.open(path).chunks(10))


def test_json_lines_are_parsed_a_block_at_a_time_and_errors_name_their_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "feed.jsonl"
    lines = [f'{{"id": "tx-{i}", "timestamp": 1767607200, "score": 0.5}}' for i in range(5)]
    path.write_text("\n".join([*lines[:2], "", *lines[2:]]) + "\n")  # a blank line is skipped
    feed = PredictionFile.open(path)
    chunks = list(feed.chunks(2))
    assert [(c.first, c.rows) for c in chunks] == [(0, 2), (2, 2), (4, 1)]
    assert chunks[1].columns["id"] == ["tx-2", "tx-3"]
    assert chunks[0].columns["label"] == [None, None]  # a field left out is null
    for bad, message in [
        ('{"id": "a"}, {"id": "b"}', "line 4 is not JSON"),  # two objects on one line
        ("[1, 2]", "line 4 is not a JSON object"),
        ('{"id": "a", "lable": 1}', "line 4: unknown fields \\['lable'\\]"),
        ('{"id": "a"', "line 4 is not JSON"),
    ]:
        path.write_text("\n".join([*lines[:2], "", bad, *lines[2:]]) + "\n")
        with pytest.raises(FileFormatError, match=message):
            list(PredictionFile.open(path).chunks(2))


def _jsonl(rows: int, *, late_number_at: int | None = None) -> str:
    lines = []
    for i in range(rows):
        stamp = "1767607200" if i == late_number_at else '"2026-01-05T10:00:00Z"'
        label = ["0", "1", "null"][i % 3]
        segment = ', "segment": "web"' if i % 2 else ""
        score = f"0.{i + 1}" if i % 5 else "null"
        lines.append(
            f'{{"id": "tx-{i}", "timestamp": {stamp}, "score": {score}, "label": {label}{segment}}}'
        )
    return "\n".join(lines) + "\n"


def test_pyarrow_and_msgspec_read_json_lines_into_the_same_requests(tmp_path: Path) -> None:
    path = tmp_path / "feed.jsonl"
    path.write_text(_jsonl(25))
    with_pyarrow = list(json_lines.arrow_jsonl_chunks(path, 10))
    with_msgspec = list(json_lines.msgspec_jsonl_chunks(path, 10))
    assert _bodies(with_pyarrow) == _bodies(with_msgspec)
    assert [(c.first, c.rows) for c in with_pyarrow] == [(0, 10), (10, 10), (20, 5)]


def test_json_lines_pyarrow_refuses_midway_and_the_rest_goes_line_by_line_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_kinds, "BLOCK_BYTES", 512)  # a few lines per block
    path = tmp_path / "feed.jsonl"
    path.write_text(_jsonl(40, late_number_at=33))  # Unix seconds: not in pyarrow's schema
    read_by_pyarrow: list[Chunk] = []
    with pytest.raises(pa.ArrowInvalid, match="timestamp"):
        read_by_pyarrow.extend(json_lines.arrow_jsonl_chunks(path, 10))
    assert read_by_pyarrow  # the fallback happens midway, not at the start
    chunks = list(PredictionFile.open(path).chunks(10))
    assert [(c.first, c.rows) for c in chunks] == [(0, 10), (10, 10), (20, 10), (30, 10)]
    ids = [i for chunk in chunks for i in chunk.columns["id"]]
    assert ids == [f"tx-{i}" for i in range(40)]  # every row once, in order
    assert chunks[3].columns["timestamp"][3] == 1767607200


LABELS_CSV = "id,label,labelled_at,source\ntx-1,1,2026-02-01T09:00:00Z,chargeback\ntx-2,0,,\n"


@pytest.mark.parametrize("reader", ["pyarrow", "csv module"])
def test_a_file_without_timestamp_and_score_is_a_label_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    if reader == "csv module":
        monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    path = tmp_path / "chargebacks.csv"
    path.write_text(LABELS_CSV)
    feed = PredictionFile.open(path)
    assert (feed.kind, feed.rows) == ("labels", 2)
    [chunk] = feed.chunks(10)
    assert chunk.columns == {
        "id": ["tx-1", "tx-2"],
        "label": [1, 0],
        "labelled_at": ["2026-02-01T09:00:00Z", None],
        "source": ["chargeback", None],
    }
    path.write_text("id,label,score\n")  # a prediction file missing its timestamp
    with pytest.raises(FileFormatError, match="missing columns \\['timestamp'\\]"):
        list(PredictionFile.open(path).chunks(10))
    path.write_text("id,label,segment\n")
    with pytest.raises(FileFormatError, match="a label file: no timestamp and no score"):
        list(PredictionFile.open(path).chunks(10))


def test_label_files_as_json_lines_and_parquet(tmp_path: Path) -> None:
    entries = [
        {"id": "tx-1", "label": 1, "labelled_at": "2026-02-01T09:00:00Z", "source": "feedback"},
        {"id": "tx-2", "label": 0},
    ]
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"\n".join(msgspec.json.encode(entry) for entry in entries) + b"\n")
    feed = PredictionFile.open(path)
    assert feed.kind == "labels"
    [chunk] = feed.chunks(10)
    assert chunk.columns["labelled_at"] == ["2026-02-01T09:00:00Z", None]
    assert set(chunk.columns) == {"id", "label", "labelled_at", "source"}
    parquet = tmp_path / "labels.parquet"
    table = pa.table(
        {
            "id": ["tx-1", "tx-2"],
            "label": [1, 0],
            "labelled_at": pa.array([1_769_936_400_000_000, None], type=pa.timestamp("us", "UTC")),
        }
    )
    pq.write_table(table, parquet)
    feed = PredictionFile.open(parquet)
    assert feed.kind == "labels"
    [chunk] = feed.chunks(10)
    assert chunk.columns["labelled_at"] == ["2026-02-01T09:00:00.000000Z", None]


def test_label_fields_of_a_prediction_file_go_along_and_absent_ones_change_no_batch_id(
    tmp_path: Path,
) -> None:
    path = tmp_path / "feed.jsonl"
    path.write_text(_jsonl(4))
    [plain] = PredictionFile.open(path).chunks(10)
    assert "labelled_at" not in plain.columns  # the request (and its batch id) as before
    row = {"id": "a", "timestamp": "2026-01-05T10:00:00Z", "score": 0.5, "label": 1}
    timed = [row | {"labelled_at": "2026-01-06T00:00:00Z", "source": "chargeback"}, row]
    path.write_bytes(
        b"\n".join(msgspec.json.encode(r | {"id": str(i)}) for i, r in enumerate(timed))
    )
    [chunk] = PredictionFile.open(path).chunks(10)
    assert chunk.columns["labelled_at"] == ["2026-01-06T00:00:00Z", None]
    assert chunk.columns["source"] == ["chargeback", None]


ROW_FIELDS_CSV = (
    "id,timestamp,score,amount,entity\n"
    "a,2026-01-05T10:00:00Z,0.5,12.5,card-1\n"
    "b,2026-01-05T10:00:01Z,0.6,,\n"
    "c,2026-01-05T10:00:02Z,0.7,3,acct 9\n"
)


@pytest.mark.parametrize("reader", ["pyarrow", "csv module"])
def test_amount_and_entity_columns_of_a_csv_go_along(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    if reader == "csv module":
        monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    path = tmp_path / "feed.csv"
    path.write_text(ROW_FIELDS_CSV)
    [chunk] = PredictionFile.open(path).chunks(10)
    body = msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)
    assert body["columns"]["amount"] == [12.5, None, 3.0]
    assert body["columns"]["entity"] == ["card-1", None, "acct 9"]
    # Every field a finite number: one array; odd ones reach the server as written.
    path.write_text("id,timestamp,score,amount\na,1767607200,0.5,1\nb,1767607201,0.5,2\n")
    [chunk] = PredictionFile.open(path).chunks(10)
    assert msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)["columns"][
        "amount"
    ] == [
        1.0,
        2.0,
    ]
    path.write_text("id,timestamp,score,amount\na,1767607200,0.5,nan\nb,1767607201,0.5,12 EUR\n")
    [chunk] = PredictionFile.open(path).chunks(10)
    body = msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)
    assert body["columns"]["amount"] == ["nan", "12 EUR"]  # refused by the server, by row


def test_both_csv_readers_cut_the_same_requests_with_amounts_and_entities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["id,timestamp,score,amount,entity"]
    lines += [
        f"tx-{i},2026-01-05T10:00:{i % 60:02d}Z,0.{i},{'' if i % 7 == 0 else i * 1.25},"
        f"{'' if i % 5 == 0 else f'card-{i % 13}'}"
        for i in range(2_500)
    ]
    path = tmp_path / "feed.csv"
    path.write_text("\n".join(lines) + "\n")
    feed = PredictionFile.open(path)
    with_pyarrow = list(feed.chunks(1_000))
    monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    assert _bodies(with_pyarrow) == _bodies(list(feed.chunks(1_000)))


def test_json_lines_and_parquet_carry_amount_and_entity_and_files_without_keep_their_ids(
    tmp_path: Path,
) -> None:
    path = tmp_path / "feed.jsonl"
    path.write_text(_jsonl(25))
    [before, *_] = PredictionFile.open(path).chunks(10)
    assert not {"amount", "entity"} & set(before.columns)  # the request (and its id) as before
    rows = [
        {"id": f"r{i}", "timestamp": "2026-01-05T10:00:00Z", "score": 0.5}
        | ({"amount": i * 2.5} if i % 2 else {})
        | ({"entity": f"card-{i}"} if i % 3 else {})
        for i in range(25)
    ]
    path.write_bytes(b"\n".join(msgspec.json.encode(row) for row in rows) + b"\n")
    with_pyarrow = list(json_lines.arrow_jsonl_chunks(path, 10))
    with_msgspec = list(json_lines.msgspec_jsonl_chunks(path, 10))
    assert _bodies(with_pyarrow) == _bodies(with_msgspec)
    first = with_pyarrow[0].columns
    assert first["amount"][:4] == [None, 2.5, None, 7.5]
    assert first["entity"][:4] == [None, "card-1", "card-2", None]
    parquet = tmp_path / "feed.parquet"
    table = pa.table(
        {
            "id": ["a", "b", "c"],
            "timestamp": pa.array([1, 2, 3], type=pa.timestamp("s", "UTC")),
            "score": [0.1, 0.2, 0.3],
            "amount": pa.array([12.5, None, float("nan")]),
            "entity": ["card-1", None, "card-3"],
        }
    )
    pq.write_table(table, parquet)
    [chunk] = PredictionFile.open(parquet).chunks(10)
    body = msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)
    assert body["columns"]["amount"] == [12.5, None, None]
    assert body["columns"]["entity"] == ["card-1", None, "card-3"]


@pytest.mark.parametrize("reader", ["pyarrow", "csv module"])
@pytest.mark.parametrize("separator", [",", ";", "\t"])
def test_an_excel_csv_is_read_by_the_apis_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str, separator: str
) -> None:
    """A byte-order mark, semicolons or tabs, capitalised names and a mixed timestamp column:
    read as the API reads a CSV body (app.ingest.csv_text), whichever reader runs."""
    if reader == "csv module":
        monkeypatch.setattr(files, "_arrow_csv_chunks", files._csv_module_chunks)
    lines = [["ID", "Timestamp", "Score"], ["a", "1767607200", "0.5"]]
    lines.append(["b", "2026-01-05T10:00:01Z", "0.25"])
    path = tmp_path / "excel.csv"
    path.write_bytes(("\ufeff" + "\r\n".join(map(separator.join, lines)) + "\r\n").encode())
    feed = PredictionFile.open(path)
    assert (feed.rows, feed.kind) == (2, "predictions")
    [chunk] = feed.chunks(10)
    body = msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)
    assert body["columns"] == {
        "id": ["a", "b"],
        "timestamp": [1767607200.0, "2026-01-05T10:00:01Z"],
        "score": [0.5, 0.25],
    }


def test_a_parquet_timestamp_without_a_zone_is_utc(tmp_path: Path) -> None:
    """The client's one rule for a date-time without a zone (numpy, pandas, datetime, here
    Parquet): UTC."""
    path = tmp_path / "naive.parquet"
    stamps = pa.array([1_767_607_200_000_000], pa.timestamp("us"))
    pq.write_table(pa.table({"id": ["a"], "timestamp": stamps, "score": [0.5]}), path)
    [chunk] = PredictionFile.open(path).chunks(10)
    body = msgspec.json.decode(encode_chunk(chunk, "p", compress=False).body)
    assert body["columns"]["timestamp"] == ["2026-01-05T10:00:00Z"]
