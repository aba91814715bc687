"""Request bodies: Content-Encoding (gzip, bounded as it is decoded) and Content-Type dispatch.

A body is gzip when its Content-Encoding says so or when it starts with gzip's magic bytes
(a .gz file sent as it is); either way the limits below apply.

Every limit applies while the body is decoded, before anything is parsed, so the cost of a
hostile body stays near the byte limit however it was built:

- bytes: decompression stops one byte past ``max_bytes``;
- gzip members: a body of many tiny members is refused at ``max_gzip_members`` (each member
  restarts the decoder; 160,000 empty members once cost minutes of CPU);
- ratio: beyond ``max_gzip_ratio`` decoded bytes per compressed byte (past the first MiB) the
  body is refused, so a small request cannot make the server decode megabytes of padding;
- rows: a row needs a few separators (JSON: commas and opening brackets; CSV: line breaks
  and its field separator, a comma, semicolon or tab). Counting them is a C-speed scan of each
  decoded chunk; more of them than ``max_rows`` rows can need means more rows than allowed, or
  a body that is not a batch, and is refused before the parser turns it into millions of
  Python objects;
- wide text: Python stores a string in 1, 2 or 4 bytes a character, by its widest character, so
  a few bytes of UTF-8 (one emoji in a long id) can make a string weigh 4 times its bytes. A
  body holding a character beyond U+00FF may therefore be at most a half of ``max_bytes``, one
  holding a character beyond U+FFFF a quarter (``TextWidth``).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np

from app.errors import PayloadTooLargeError
from app.ingest.csv_text import SEPARATORS
from app.ingest.errors import UnsupportedMediaTypeError
from app.ingest.parse import RawBatch, parse_csv, parse_json

Media = Literal["json", "csv"]
JSON_TYPES: Final = frozenset({"application/json"})
CSV_TYPES: Final = frozenset({"text/csv", "application/csv"})
_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS
_CHUNK: Final = 256 * 1024  # compressed bytes fed to the decoder at a time
_STEP: Final = 1024 * 1024  # decoded bytes produced per decompress call
_RATIO_FLOOR: Final = 1024 * 1024  # small bodies may compress as well as they like
_WIDEST_NARROWER: Final = {2: "U+00FF", 4: "U+FFFF"}

SEPARATORS_PER_ROW: Final = 8
"""Separators a row may use: 5 to 6 in every format, 2 more for commas inside strings.

Each separator can become a Python object of the parsed body; measured with bench.body_memory,
16 let a body under every other limit cost 4.7 times CALMON_MAX_BODY_BYTES of memory."""
SEPARATORS_PER_LABEL: Final = 5
"""Separators a label update's entry may use: 3 (``{``, the comma inside, the one after; CSV 2),
2 more for commas inside the id. With 8, a label body of 266,000 two-string entries cost 3.23
times CALMON_MAX_BODY_BYTES (bench.body_memory)."""
_SEPARATORS: Final[dict[Media, tuple[bytes, ...]]] = {
    "json": (b",", b"{", b"["),
    "csv": (b"\n",),
}
# A CSV's fields are separated by one of these (app.ingest.csv_text): only the most frequent
# counts, so that a semicolon in a comma file's text costs nothing.
_FIELD_SEPARATORS: Final[dict[Media, tuple[bytes, ...]]] = {
    "json": (),
    "csv": tuple(separator.encode() for separator in SEPARATORS),
}
GZIP_MAGIC: Final = b"\x1f\x8b"
"""How every gzip stream starts (RFC 1952): a body starting so is gzip whatever its
Content-Encoding says, since neither JSON nor CSV text can start with these bytes."""


@dataclass(frozen=True)
class BodyLimits:
    """What one request body may cost (from Settings)."""

    max_bytes: int
    max_rows: int
    max_gzip_members: int = 64
    max_gzip_ratio: int = 200
    separators_per_row: int = SEPARATORS_PER_ROW

    @property
    def max_separators(self) -> int:
        """Separators a body of ``max_rows`` rows may hold (plus the envelope's)."""
        return self.separators_per_row * self.max_rows + 64


class TextWidth:
    """The bytes a character of the body's text will take in Python (1, 2 or 4), found as the
    body is decoded: UTF-8 lead bytes of characters past U+00FF (0xC4 and up) or U+FFFF (0xF0
    and up), and JSON escapes of them (``\\u0100`` to ``\\uffff``, surrogate pairs). An escaped
    backslash followed by ``u`` may count as an escape: a body is only ever judged wider than
    it is, never narrower."""

    _ESCAPE_BEYOND_BMP: Final = re.compile(rb"\\u[dD][89abAB]")
    _ESCAPE_BEYOND_LATIN1: Final = re.compile(rb"\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")
    _OVERLAP: Final = 5  # an escape cut between two chunks is found across the cut

    def __init__(self) -> None:
        self.width = 1
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        """Widen ``width`` by what ``chunk`` holds."""
        if self.width == 4:
            return
        boundary = self._tail + chunk[: self._OVERLAP]
        self._tail = chunk[-self._OVERLAP :]
        self.width = max(self.width, self._width_of(chunk), self._width_of(boundary))

    def _width_of(self, text: bytes) -> int:
        if not text:
            return 1
        # The largest byte in one numpy pass (a MiB in ~25 us): no regex over ordinary text.
        widest = int(np.frombuffer(text, np.uint8).max())
        width = 4 if widest >= 0xF0 else 2 if widest >= 0xC4 else 1
        if width < 4 and b"\\" in text:  # escapes are rare: searched for only then
            if self._ESCAPE_BEYOND_BMP.search(text):
                width = 4
            elif width < 2 and self._ESCAPE_BEYOND_LATIN1.search(text):
                width = 2
        return width


class _SeparatorCount:
    """Counts a body's separators chunk by chunk; 413 as soon as they pass the limit."""

    def __init__(self, media: Media, limits: BodyLimits) -> None:
        self.separators = _SEPARATORS[media]
        self.field_separators = _FIELD_SEPARATORS[media]
        self.limits = limits
        self.always = 0
        self.fields = [0] * len(self.field_separators)

    @property
    def seen(self) -> int:
        """Separators that may make objects: every line break or bracket, and the most
        frequent field separator (the one the body uses)."""
        return self.always + max(self.fields, default=0)

    def feed(self, chunk: bytes) -> None:
        self.always += sum(chunk.count(separator) for separator in self.separators)
        for index, separator in enumerate(self.field_separators):
            self.fields[index] += chunk.count(separator)
        if self.seen > self.limits.max_separators:
            raise PayloadTooLargeError(
                f"the body holds more than {self.limits.max_separators} separators (commas, "
                f"brackets, line breaks): more than {self.limits.max_rows} rows need "
                f"(CALMON_MAX_ROWS_PER_REQUEST); split it into several batches",
                extra={"max_rows": self.limits.max_rows},
            )


def media_type(content_type: str | None) -> Media:
    """The batch format a Content-Type names; 415 for any other."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in JSON_TYPES:
        return "json"
    if media in CSV_TYPES:
        return "csv"
    raise UnsupportedMediaTypeError(
        f"Content-Type {content_type!r} is not supported: send application/json or text/csv"
    )


class BodyDecoder:
    """Decodes a body chunk by chunk as it arrives, refusing it at the first limit it passes.

    Fed from the network stream, a refused body is never read to its end, and a gzip body is
    never held compressed and decoded at once. ``finish`` returns the decoded bytes (a
    bytearray grown in place: no second copy of the largest object of the request).
    """

    def __init__(self, content_encoding: str | None, limits: BodyLimits, media: Media) -> None:
        encoding = (content_encoding or "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            raise UnsupportedMediaTypeError(
                f"Content-Encoding {content_encoding!r} is not supported (use gzip or none)"
            )
        self.gzip = encoding == "gzip"
        # Without the header, the first bytes decide (GZIP_MAGIC): a gzipped file sent as it
        # is would otherwise be refused as "not valid JSON: invalid character (byte 0)".
        self.sniffing = not self.gzip
        self.head = b""
        self.limits = limits
        self.count = _SeparatorCount(media, limits)
        self.text_width = TextWidth()
        self.decoded = bytearray()
        self.received = 0
        self.members = 0
        self.decompressor: Any = None  # zlib's Decompress type is not importable

    def feed(self, data: bytes) -> None:
        """Take the next chunk of the body as sent."""
        if self.sniffing:
            data = self.head + data
            if len(data) < len(GZIP_MAGIC):  # a body may arrive a byte at a time
                self.head = data
                return
            self.sniffing = False
            self.gzip = data.startswith(GZIP_MAGIC)
        if not self.gzip:
            self.received += len(data)
            self._accept(data)
            return
        view = memoryview(data)
        position = 0
        while position < len(data):  # a gzip stream may hold several members
            if self.decompressor is None or self.decompressor.eof:
                self._next_member()
            # Fed in bounded pieces, so the rest after a member ends is a small copy.
            piece = view[position : position + _CHUNK]
            position += len(piece)
            pending: bytes | memoryview = piece
            while pending and not self.decompressor.eof:
                # At most _STEP decoded bytes per call: every limit is checked on its way up,
                # never after a bomb has been inflated whole.
                room = self.limits.max_bytes + 1 - len(self.decoded)
                try:
                    out = self.decompressor.decompress(pending, min(_STEP, room))
                except zlib.error as error:
                    raise UnsupportedMediaTypeError(f"body is not valid gzip: {error}") from None
                tail = self.decompressor.unconsumed_tail
                self.received += len(pending) - len(tail) - len(self.decompressor.unused_data)
                pending = tail
                self._accept(out)
                self._check_ratio()
            if self.decompressor.eof:
                position -= len(self.decompressor.unused_data)

    def _check_ratio(self) -> None:
        decoded = len(self.decoded)
        if decoded > _RATIO_FLOOR and decoded > self.limits.max_gzip_ratio * self.received:
            raise PayloadTooLargeError(
                f"gzip body decompresses more than {self.limits.max_gzip_ratio} times "
                "(CALMON_MAX_GZIP_RATIO): refused as a compression bomb"
            )

    def finish(self) -> bytearray:
        """The whole decoded body (the stream has ended)."""
        if self.sniffing and self.head:  # a one-byte body: too short to be gzip
            self.sniffing = False
            self.feed(self.head)
        if self.gzip and self.decompressor is not None and not self.decompressor.eof:
            raise UnsupportedMediaTypeError("gzip body is truncated")
        return self.decoded

    def _next_member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_gzip_members:
            raise PayloadTooLargeError(
                f"gzip body has more than {self.limits.max_gzip_members} members "
                "(CALMON_MAX_GZIP_MEMBERS): compress the batch as one stream"
            )
        self.decompressor = zlib.decompressobj(_GZIP_WBITS)

    def _accept(self, data: bytes) -> None:
        if len(self.decoded) + len(data) > self.limits.max_bytes:
            raise _too_large(self.limits.max_bytes)
        self.count.feed(data)
        self.text_width.feed(data)
        width = self.text_width.width
        if len(self.decoded) + len(data) > self.limits.max_bytes // width:
            raise PayloadTooLargeError(
                f"a body holding characters beyond {_WIDEST_NARROWER[width]} may be at most "
                f"{self.limits.max_bytes // width} bytes, 1/{width} of CALMON_MAX_BODY_BYTES "
                f"(each of its characters takes {width} bytes once parsed): split the batch",
                extra={"max_bytes": self.limits.max_bytes // width},
            )
        self.decoded += data


def decode_body(
    body: bytes, content_encoding: str | None, limits: BodyLimits, media: Media = "json"
) -> bytearray:
    """The body as sent before compression, refused at the first limit it passes."""
    decoder = BodyDecoder(content_encoding, limits, media)
    decoder.feed(body)
    return decoder.finish()


def parse_body(
    body: bytes | bytearray,
    content_type: str | None,
    batch_id: str | None,
    max_rows: int | None = None,
) -> RawBatch:
    """Parse a batch in the format its Content-Type names.

    ``batch_id`` comes from the ``X-Batch-Id`` header or the ``batch_id`` query parameter;
    CSV needs it, JSON may carry it in the body instead. A CSV is refused at its line
    ``max_rows + 1`` (JSON is parsed whole, then counted by the caller).
    """
    if media_type(content_type) == "json":
        return parse_json(body, batch_id)
    return parse_csv(body, batch_id, max_rows)


def _too_large(max_bytes: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"request body exceeds {max_bytes} bytes after decompression (CALMON_MAX_BODY_BYTES)"
    )
