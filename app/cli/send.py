"""`calmon send FILE` (or `--labels FILE`): import a CSV, JSON-lines or Parquet file
through the client.

Resumable by construction: each batch's id is the file's name, the batch's first row and a
hash of its rows, so a run that was killed and is started again replays what the service
already stored (nothing written twice) and sends the rest. A label file (``id``, ``label``,
optionally ``labelled_at``, ``source``) goes to the label endpoint, where sending a label
again changes nothing: resumable too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import httpx

from app.cli.commands import add_command
from app.cli.connection import add_client_arguments, open_client
from app.client.files import FileFormatError, PredictionFile
from app.client.http import DEFAULT_BATCH_ROWS, BatchResult, CalmonAPIError, CalmonClient
from app.settings import Settings

LABEL_FILE = "a label file has the columns id, label and optionally labelled_at, source"


class Progress:
    """A progress line on stderr: rewritten in place on a terminal, else one line a second."""

    def __init__(self, total: int, *, quiet: bool = False, stream: TextIO = sys.stderr) -> None:
        self.total = total
        self.quiet = quiet
        self.stream = stream
        self.sent = 0
        self.started = time.monotonic()
        self._shown = 0.0
        self._tty = stream.isatty()

    def update(self, batch: BatchResult) -> None:
        """Count a batch in; show the line if a second passed (or on every batch on a tty)."""
        self.add(batch.rows)

    def add(self, rows: int) -> None:
        """Count ``rows`` more sent (a batch, a label update)."""
        self.sent += rows
        now = time.monotonic()
        if self.quiet:
            return
        if self._tty or now - self._shown >= 1.0 or self.sent >= self.total:
            self._shown = now
            self.show(now)

    def show(self, now: float) -> None:
        elapsed = max(now - self.started, 1e-9)
        share = self.sent / self.total if self.total else 1.0
        line = (
            f"sent {self.sent:,} of {self.total:,} rows ({share:.0%}), "
            f"{self.sent / elapsed:,.0f} rows/s"
        )
        end = "\r" if self._tty and self.sent < self.total else "\n"
        print(line, end=end, file=self.stream, flush=True)


def cmd_send(args: argparse.Namespace, settings: Settings) -> int:
    """Import the file; exit 1 with the service's message (and the file row) on a refusal."""
    try:
        feed = _open_feed(args)
    except (OSError, FileFormatError) as error:
        print(f"calmon: {error}", file=sys.stderr)
        return 1
    progress = Progress(feed.rows, quiet=args.quiet)
    with open_client(args, settings, batch_rows=args.batch_rows, compress=args.gzip) as client:
        try:
            summary = _send(client, args.model, feed, args.batch_rows, progress)
        except FileFormatError as error:
            print(f"calmon: {error}", file=sys.stderr)
            return 1
        except CalmonAPIError as error:
            # The problems' rows as rows of the file, not of the batch (error's own lines).
            where = _rows_in_file(error, progress.sent)
            print(f"calmon: {error.summary if where else error}{where}", file=sys.stderr)
            return 1
        except httpx.TransportError as error:
            # Raised once the retries are spent: the service is down or unreachable.
            print(f"calmon: cannot reach {client.base_url}: {error}", file=sys.stderr)
            return 1
    print(f"{feed.path}: {summary}", file=sys.stderr)
    return 0


def _open_feed(args: argparse.Namespace) -> PredictionFile:
    """The file named, as a label feed when given with --labels (refused if it is not one)."""
    if (args.file is None) == (args.labels is None):
        raise FileFormatError("name one file: `calmon send FILE` or `calmon send --labels FILE`")
    if args.file is not None:
        return PredictionFile.open(Path(args.file), args.format)
    feed = PredictionFile.open(Path(args.labels), args.format)
    if feed.kind != "labels":
        raise FileFormatError(
            f"{feed.path}: --labels, but it has a timestamp or score column: {LABEL_FILE} "
            "(when the label came in is labelled_at); send predictions without --labels"
        )
    return feed


def _send(
    client: CalmonClient, model: str, feed: PredictionFile, batch_rows: int, progress: Progress
) -> str:
    """Send the file's rows (predictions as batches, labels as label updates); the summary."""
    chunks = feed.chunks(batch_rows)
    if feed.kind == "labels":
        labels = client.send_label_chunks(model, chunks, progress.add)
        unknown = labels.unknown_ids
        shown = f" (first: {', '.join(unknown[:5])})" if unknown else ""
        return (
            f"{progress.sent:,} labels: {labels.rows_updated:,} changed, "
            f"{labels.rows_unchanged:,} already as sent, "
            f"{len(unknown):,} ids the model does not have{shown}"
        )
    result = client.send_chunks(model, chunks, feed.path.name, progress.update)
    return (
        f"{result.rows:,} rows in {result.batches} batches: "
        f"{result.rows_inserted:,} inserted, {result.rows_updated:,} updated, "
        f"{result.rows_unchanged:,} unchanged, "
        f"{result.replayed_batches} batches already stored (replayed), "
        f"{len(result.windows_touched)} windows touched"
    )


def _rows_in_file(error: CalmonAPIError, rows_before: int) -> str:
    """The refused batch's row indexes as rows of the file (1 = the first data row)."""
    rows: list[Any] = [d["row"] for d in error.details if isinstance(d.get("row"), int)]
    if not rows:
        return ""
    where = ", ".join(f"row {rows_before + row + 1}" for row in rows[:5] if row >= 0)
    fields = "; ".join(f"{d.get('field')}: {d.get('message')}" for d in error.details[:5])
    return f" (in the file: {where}: {fields})" if where else ""


def add_send(subparsers: Any) -> None:
    """Register `calmon send`."""
    parser = add_command(
        subparsers,
        "send",
        cmd_send,
        help="import a CSV, JSON-lines or Parquet file of predictions or labels (resumable)",
        description="Send a file's predictions to a running service in columnar, gzipped "
        "batches. Killed and started again, it lands every row exactly once. A label file "
        "(columns id, label and optionally labelled_at, source; no timestamp, no score), "
        "such as a chargeback export, sets the labels of predictions already sent.",
    )
    parser.add_argument(
        "file",
        nargs="?",
        help="predictions: columns id, timestamp, score and optionally label, segment, "
        f"labelled_at, source, amount, entity; or labels only ({LABEL_FILE})",
    )
    parser.add_argument(
        "--labels",
        metavar="FILE",
        help=f"a label feed, such as a chargeback export ({LABEL_FILE}), refused if it is not one",
    )
    parser.add_argument("--model", required=True, help="the registered model's name")
    parser.add_argument("--format", choices=["csv", "jsonl", "parquet"], help="default: suffix")
    parser.add_argument("--batch-rows", type=int, default=DEFAULT_BATCH_ROWS)
    parser.add_argument(
        "--gzip",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compress the bodies (default: yes, unless the service is on a loopback address)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    add_client_arguments(parser)
