"""How many rows a large window's per-row work handles at once.

A 10^7-row window's per-row temporaries (bin numbers, looks, codes: 8 bytes a row) are 80 MB
each; arrays that large are mapped afresh by the allocator every time, and on the machine this
was measured on a page costs up to ~8 us the first time it is touched (a fresh 80 MB array took
5-180 ms to fill, the same pages again 2.4 ms). Worked in blocks of BLOCK_ROWS, a temporary is
8 MB, which the allocator serves again from pages already touched; counts summed over blocks
are the counts of the whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

BLOCK_ROWS: Final = 1 << 20


def blocks(rows: int) -> Iterator[slice]:
    """The slices that cut ``rows`` rows into blocks of BLOCK_ROWS: at least one (empty when
    there are no rows), so that work summed over the blocks has a block to start from."""
    for start in range(0, max(rows, 1), BLOCK_ROWS):
        yield slice(start, start + BLOCK_ROWS)
