"""How a CSV file's text is read, whoever reads it: the API (app.ingest.parse) and the client's
file reader (app.client.files) take these rules from here, so that a file the one accepts the
other accepts too.

- Encoding: UTF-8, with or without a byte-order mark (Excel's "CSV UTF-8" writes one).
- Separator: comma, semicolon or tab, told by the header line (Excel writes semicolons where
  the decimal mark is a comma, tabs for "Text (Tab delimited)"). The decimal mark itself stays
  a point: "0,87" is refused naming its row, never guessed.
- Header: names trimmed and lower-cased.
- Timestamps: a field written as a number is seconds since the Unix epoch (as a JSON number
  is); any other text must be ISO 8601 with an offset.
"""

from __future__ import annotations

from typing import Final

BYTE_ORDER_MARK: Final = "\ufeff"
SEPARATORS: Final = (",", ";", "\t")


def separator_of(header_line: str) -> str:
    """The separator a header line uses: whichever of comma, semicolon and tab it holds most
    (a comma when it holds none: a one-column header)."""
    # max() keeps the first of equal counts: a comma wins a tie.
    return max(SEPARATORS, key=header_line.count)


def without_bom(text: str) -> str:
    """``text`` less a leading byte-order mark."""
    return text.removeprefix(BYTE_ORDER_MARK)


def header_names(fields: list[str]) -> list[str]:
    """A header's column names as the API names them: trimmed, lower-cased, no BOM."""
    return [without_bom(name).strip().lower() for name in fields]


def timestamp_field(text: str) -> object:
    """A CSV timestamp: a number (seconds since the epoch) when the text reads as one, else
    the text (ISO 8601, checked by app.ingest.timestamps, which names a bad row)."""
    try:
        return float(text)
    except ValueError:
        return text


def timestamp_fields(texts: list[str]) -> list[object]:
    """:func:`timestamp_field` over a column, at little more than no cost for the usual
    columns: all numbers (one C-level pass) or all ISO text (a field holding ``:``, as ISO
    with a time does, is no number and is not tried)."""
    try:
        return list(map(float, texts))
    except ValueError:
        pass
    fields: list[object] = list(texts)
    for row in [row for row, text in enumerate(texts) if ":" not in text]:
        fields[row] = timestamp_field(texts[row])
    return fields
