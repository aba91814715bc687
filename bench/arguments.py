"""The command-line head shared by the benches that write a load into a scratch database."""

from __future__ import annotations

import argparse


def write_load_parser(doc: str | None, *, rows: int) -> argparse.ArgumentParser:
    """``--database-url`` (a scratch PostgreSQL database, emptied by the bench), ``--rows`` and
    ``--batch-rows``; the bench adds its own options."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="a scratch PostgreSQL database")
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--batch-rows", type=int, default=50_000)
    return parser
