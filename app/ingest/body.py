"""Request bodies: Content-Encoding (gzip, size-capped) and Content-Type dispatch."""

from __future__ import annotations

import zlib
from typing import Final

from app.errors import PayloadTooLargeError
from app.ingest.errors import UnsupportedMediaTypeError
from app.ingest.parse import RawBatch, parse_csv, parse_json

JSON_TYPES: Final = frozenset({"application/json"})
CSV_TYPES: Final = frozenset({"text/csv", "application/csv"})
_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS


def decode_body(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    """The body as sent before compression, refused beyond ``max_bytes`` once decompressed.

    Decompression stops one byte past the limit, so a zip bomb costs at most ``max_bytes`` of
    memory before it is refused.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding != "gzip":
        raise UnsupportedMediaTypeError(
            f"Content-Encoding {content_encoding!r} is not supported (use gzip or none)"
        )
    out = bytearray()
    remaining = body
    while remaining:  # a gzip stream may hold several members
        decompressor = zlib.decompressobj(_GZIP_WBITS)
        try:
            out += decompressor.decompress(remaining, max_bytes + 1 - len(out))
        except zlib.error as error:
            raise UnsupportedMediaTypeError(f"body is not valid gzip: {error}") from None
        if len(out) > max_bytes or decompressor.unconsumed_tail:
            raise _too_large(max_bytes)
        if not decompressor.eof:
            raise UnsupportedMediaTypeError("gzip body is truncated")
        remaining = decompressor.unused_data
    return bytes(out)


def parse_body(body: bytes, content_type: str | None, batch_id: str | None) -> RawBatch:
    """Parse a batch in the format its Content-Type names.

    ``batch_id`` comes from the ``X-Batch-Id`` header or the ``batch_id`` query parameter;
    CSV needs it, JSON may carry it in the body instead.
    """
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type in JSON_TYPES:
        return parse_json(body, batch_id)
    if media_type in CSV_TYPES:
        return parse_csv(body, batch_id)
    raise UnsupportedMediaTypeError(
        f"Content-Type {content_type!r} is not supported: send application/json or text/csv"
    )


def _too_large(max_bytes: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"request body exceeds {max_bytes} bytes after decompression (CALMON_MAX_BODY_BYTES)"
    )
