"""A body is refused at the row, byte, member and ratio limits while it is decoded, before it
is parsed whole (issue 16, finding 2). No database needed."""

from __future__ import annotations

import gzip
import time

import orjson
import pytest

from app.errors import PayloadTooLargeError
from app.ingest.body import BodyLimits, decode_body
from app.ingest.errors import UnsupportedMediaTypeError

ROW = {"id": "a", "timestamp": "2026-11-02T10:00:00Z", "score": 0.9, "label": 1}
LIMITS = BodyLimits(max_bytes=64 * 1024 * 1024, max_rows=1_000)


def test_many_empty_gzip_members_are_refused_quickly() -> None:
    members = gzip.compress(b"", mtime=0) * 50_000  # 1 MB of empty members
    started = time.process_time()
    with pytest.raises(PayloadTooLargeError, match="members"):
        decode_body(members, "gzip", LIMITS)
    assert time.process_time() - started < 0.5


def test_a_few_gzip_members_are_still_read() -> None:
    body = orjson.dumps({"batch_id": "x", "rows": [ROW] * 10})
    parts = [gzip.compress(body[i : i + 20]) for i in range(0, len(body), 20)]
    assert len(parts) < LIMITS.max_gzip_members
    assert decode_body(b"".join(parts), "gzip", LIMITS) == body


def test_a_compression_ratio_past_the_limit_is_refused() -> None:
    padded = orjson.dumps({"batch_id": "x", "rows": [ROW]}) + b" " * 20_000_000
    bomb = gzip.compress(padded)
    assert len(padded) / len(bomb) > LIMITS.max_gzip_ratio
    with pytest.raises(PayloadTooLargeError, match="GZIP_RATIO"):
        decode_body(bomb, "gzip", LIMITS)


def test_ordinary_data_compresses_under_the_ratio_limit() -> None:
    rows = [
        {"id": f"tx-{i}", "timestamp": 1_793_000_000 + i, "score": (i * 7919 % 1000) / 1000}
        for i in range(20_000)
    ]
    body = orjson.dumps({"batch_id": "x", "rows": rows})
    limits = BodyLimits(max_bytes=LIMITS.max_bytes, max_rows=100_000)
    assert decode_body(gzip.compress(body), "gzip", limits) == body


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_more_separators_than_the_row_limit_can_need_are_refused_before_parsing(
    encoding: str,
) -> None:
    # Not even valid JSON (it never ends): refused for its size, so it was never parsed.
    body = b'{"batch_id": "x", "rows": [' + b"{}," * (20 * LIMITS.max_rows)
    sent = gzip.compress(body) if encoding == "gzip" else body
    with pytest.raises(PayloadTooLargeError, match="CALMON_MAX_ROWS_PER_REQUEST"):
        decode_body(sent, encoding, LIMITS, media="json")


def test_a_csv_with_more_lines_than_the_row_limit_can_need_is_refused() -> None:
    body = b"id,timestamp,score\n" + b"a,1,0\n" * (10 * LIMITS.max_rows)
    with pytest.raises(PayloadTooLargeError, match="CALMON_MAX_ROWS_PER_REQUEST"):
        decode_body(gzip.compress(body), "gzip", LIMITS, media="csv")


def test_a_full_batch_passes_the_separator_budget() -> None:
    rows = [{**ROW, "id": f"tx,{i}", "segment": "FR,DE"} for i in range(LIMITS.max_rows)]
    body = orjson.dumps({"batch_id": "x", "rows": rows})
    assert decode_body(body, None, LIMITS, media="json") == body


def test_garbage_after_a_member_is_not_gzip() -> None:
    body = gzip.compress(b"{}") + b"garbage"
    with pytest.raises(UnsupportedMediaTypeError):
        decode_body(body, "gzip", LIMITS)
    with pytest.raises(UnsupportedMediaTypeError, match="truncated"):
        decode_body(gzip.compress(b"{}" * 1000)[:-20], "gzip", LIMITS)
