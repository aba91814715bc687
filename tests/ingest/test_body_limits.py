"""A body is refused at the row, byte, member and ratio limits while it is decoded, before it
is parsed whole (issue 16, finding 2). No database needed."""

from __future__ import annotations

import gzip
import time

import msgspec
import pytest

from app.errors import PayloadTooLargeError
from app.ingest.body import BodyDecoder, BodyLimits, decode_body
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
    body = msgspec.json.encode({"batch_id": "x", "rows": [ROW] * 10})
    parts = [gzip.compress(body[i : i + 20]) for i in range(0, len(body), 20)]
    assert len(parts) < LIMITS.max_gzip_members
    assert decode_body(b"".join(parts), "gzip", LIMITS) == body


def test_a_compression_ratio_past_the_limit_is_refused() -> None:
    padded = msgspec.json.encode({"batch_id": "x", "rows": [ROW]}) + b" " * 20_000_000
    bomb = gzip.compress(padded)
    assert len(padded) / len(bomb) > LIMITS.max_gzip_ratio
    with pytest.raises(PayloadTooLargeError, match="GZIP_RATIO"):
        decode_body(bomb, "gzip", LIMITS)


def test_ordinary_data_compresses_under_the_ratio_limit() -> None:
    rows = [
        {"id": f"tx-{i}", "timestamp": 1_793_000_000 + i, "score": (i * 7919 % 1000) / 1000}
        for i in range(20_000)
    ]
    body = msgspec.json.encode({"batch_id": "x", "rows": rows})
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
    body = msgspec.json.encode({"batch_id": "x", "rows": rows})
    assert decode_body(body, None, LIMITS, media="json") == body


def test_garbage_after_a_member_is_not_gzip() -> None:
    body = gzip.compress(b"{}") + b"garbage"
    with pytest.raises(UnsupportedMediaTypeError):
        decode_body(body, "gzip", LIMITS)
    with pytest.raises(UnsupportedMediaTypeError, match="truncated"):
        decode_body(gzip.compress(b"{}" * 1000)[:-20], "gzip", LIMITS)


WIDE = BodyLimits(max_bytes=4_000, max_rows=1_000)


def _document(text: str, size: int) -> bytes:
    """Row JSON of ``size`` bytes whose first id is ``text``, the rest padding ids."""
    head = msgspec.json.encode({"batch_id": "x", "rows": [{**ROW, "id": text}]})[:-2]
    padding = b',{"id":"' + b"p" * (size - len(head) - 12) + b'"}]}'
    return head + padding


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("caf\u00e9", 1),  # Latin-1: one byte a character in Python
        ("\u0100", 2),  # past U+00FF: two
        ("\u6771\u4eac", 2),
        ("\U0001f600", 4),  # past U+FFFF: four
        ('"\\u0100"', 2),  # JSON escapes of them count the same
        ('"\\ud83d\\ude00"', 4),
    ],
)
def test_a_body_of_wide_characters_may_be_a_fraction_of_the_byte_limit(
    text: str, width: int
) -> None:
    fits = _document(text, WIDE.max_bytes // width)
    assert decode_body(fits, None, WIDE) == fits
    if width > 1:
        too_big = _document(text, WIDE.max_bytes // width + 1)
        with pytest.raises(PayloadTooLargeError, match=f"1/{width} of CALMON_MAX_BODY_BYTES"):
            decode_body(too_big, None, WIDE)


def test_an_escape_cut_between_two_chunks_still_counts() -> None:
    body = _document("\U0001f600", WIDE.max_bytes // 2).replace(
        "\U0001f600".encode(), b"\\ud83d\\ude00"
    )
    start = body.index(b"\\ud83d")
    for cut in range(start, start + 6):
        decoder = BodyDecoder(None, WIDE, "json")
        decoder.feed(body[:cut])  # the escape's first bytes, far under any limit
        with pytest.raises(PayloadTooLargeError, match="1/4"):
            decoder.feed(body[cut:])
