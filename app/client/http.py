"""``CalmonClient``: send predictions and labels to a calmon service and read its series back.

    from app.client import CalmonClient

    with CalmonClient("http://127.0.0.1:8000", token) as calmon:
        calmon.send("card-fraud", ids=ids, timestamps=ts, scores=scores, labels=labels)
        calmon.send_labels("card-fraud", ids=chargeback_ids, labels=[1] * len(chargeback_ids))
        points = calmon.metrics("card-fraud", "average_precision")

Retries are safe by construction: a batch keeps its batch id across attempts, so a batch the
server stored before the connection broke is answered as a replay (200) and written once.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import httpx

from app.client import json_arrays
from app.client.columns import (
    Chunk,
    EncodedBatch,
    array_chunks,
    encode_chunk,
    frame_arrays,
    label_entries,
)
from app.client.errors import CalmonAPIError
from app.client.prefetch import prefetched
from app.client.retry import Retry, sleep_through
from app.client.service_reads import ServiceReads, period_params
from app.client.transport import is_loopback, response_body

# CalmonAPIError is defined in app.client.errors and raised here: importable from both.
__all__ = [
    "DEFAULT_BATCH_ROWS",
    "BatchResult",
    "CalmonAPIError",
    "CalmonClient",
    "LabelResult",
    "Retry",
    "SendResult",
    "sleep_through",
]

DEFAULT_BATCH_ROWS = 50_000  # the size bench/ingest.py measures; the server takes up to 100,000
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

T = TypeVar("T")


@dataclass(frozen=True)
class BatchResult:
    """What the service answered for one batch (for a replay: the stored first answer)."""

    batch_id: str
    first: int
    rows: int
    rows_inserted: int
    rows_updated: int
    replayed: bool
    windows_touched: list[str]
    rows_unchanged: int = 0  # ids already stored with exactly these values


@dataclass
class SendResult:
    """Totals over every batch of a ``send``.

    ``replayed_batches`` were already stored (by an earlier run, or by an attempt whose answer
    was lost): their rows count in ``rows`` but not in ``rows_inserted``/``rows_updated``/
    ``rows_unchanged``, which say what this send wrote (or found already stored as sent).
    """

    batches: int = 0
    rows: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_unchanged: int = 0
    replayed_batches: int = 0
    windows_touched: set[str] = field(default_factory=set)

    def add(self, batch: BatchResult) -> None:
        """Count one batch's answer in."""
        self.batches += 1
        self.rows += batch.rows
        if batch.replayed:
            self.replayed_batches += 1
        else:
            self.rows_inserted += batch.rows_inserted
            self.rows_updated += batch.rows_updated
            self.rows_unchanged += batch.rows_unchanged
        self.windows_touched.update(batch.windows_touched)


@dataclass
class LabelResult:
    """Totals of a label feed: labels changed, already as sent, and ids the model lacks."""

    rows_updated: int = 0
    rows_unchanged: int = 0
    unknown_ids: list[str] = field(default_factory=list)


class CalmonClient(ServiceReads):
    """A typed client of calmon's HTTP API (httpx underneath, one connection kept alive).

    ``retries`` is how many times a request is re-sent after a connection error, a timeout or
    a 429/5xx answer, waiting ``backoff * 2**attempt`` seconds (at most 30, or the server's
    ``Retry-After``) in between. ``compress`` (gzip) defaults to on, except for a service
    on a loopback address. ``wait`` is called with each :class:`Retry` instead of sleeping
    and must take its ``delay`` (the command line shows a countdown meanwhile).
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 300.0,
        retries: int = 5,
        backoff: float = 0.5,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        compress: bool | None = None,
        transport: httpx.BaseTransport | None = None,
        wait: Callable[[Retry], None] = sleep_through,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self.retries = retries
        self.backoff = backoff
        self.batch_rows = batch_rows
        self.wait = wait
        # Default: gzip unless the service is on this machine, where the bytes cross no
        # network and compressing (and decompressing) them only costs CPU on both sides.
        self.compress = not is_loopback(self._http.base_url.host) if compress is None else compress

    @property
    def base_url(self) -> str:
        """The service's address."""
        return str(self._http.base_url)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> CalmonClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- models --------------------------------------------------------------------------
    def create_model(self, name: str, threshold: float, **fields: Any) -> dict[str, Any]:
        """Register a model (admin scope); ``fields`` are the other model fields (README)."""
        return self._json(
            "POST", "/v1/models", json={"name": name, "threshold": threshold, **fields}
        )

    def model(self, name: str) -> dict[str, Any]:
        """One model's settings."""
        return self._json("GET", f"/v1/models/{name}")

    def models(self) -> list[dict[str, Any]]:
        """Every model."""
        result: list[dict[str, Any]] = self._request("GET", "/v1/models").json()
        return result

    # --- sending -------------------------------------------------------------------------
    def send(
        self,
        model: str,
        *,
        ids: Any,
        timestamps: Any,
        scores: Any,
        labels: Any = None,
        segments: Any = None,
        labelled_at: Any = None,
        sources: Any = None,
        amounts: Any = None,
        entities: Any = None,
        prefix: str = "client",
        on_batch: Callable[[BatchResult], None] | None = None,
    ) -> SendResult:
        """Send predictions given as array-likes (numpy arrays, lists, pandas Series).

        Timestamps: numpy ``datetime64`` (read as UTC), aware datetimes or pandas datetimes,
        ISO strings with an offset, or Unix seconds. Labels: 0, 1, or None/NaN (not known yet).
        ``labelled_at``: when each label arrived (datetimes as timestamps, or ISO strings; None
        or NaT: when the server receives it); ``sources``: feedback, chargeback or confirmed
        (None: confirmed). Both only for rows with a label. ``amounts``: each transaction's
        value, a number from 0 to 1e15 (None/NaN: not known); ``entities``: the card or account
        of each (strings, or integers sent as their text; None: not known).
        The rows go in chunks of ``batch_rows``; each chunk's batch id is derived from
        ``prefix``, its position and its content, so re-sending the same feed writes nothing.
        """
        arrays = {
            "id": ids,
            "timestamp": timestamps,
            "score": scores,
            "label": labels,
            "segment": segments,
            "labelled_at": labelled_at,
            "source": sources,
            "amount": amounts,
            "entity": entities,
        }
        return self.send_chunks(model, array_chunks(arrays, self.batch_rows), prefix, on_batch)

    def send_frame(
        self,
        model: str,
        frame: Any,
        *,
        prefix: str = "client",
        on_batch: Callable[[BatchResult], None] | None = None,
    ) -> SendResult:
        """Send a pandas DataFrame with columns id, timestamp, score and optionally label,
        segment, labelled_at, source, amount, entity (pandas itself is not a dependency of
        calmon: pass a frame you have)."""
        chunks = array_chunks(frame_arrays(frame), self.batch_rows)
        return self.send_chunks(model, chunks, prefix, on_batch)

    def send_chunks(
        self,
        model: str,
        chunks: Iterable[Chunk],
        prefix: str,
        on_batch: Callable[[BatchResult], None] | None = None,
    ) -> SendResult:
        """Send prepared chunks, one request each, in order.

        The next batch is read and encoded on a helper thread while the current request is in
        flight, so the client's own CPU work hides behind the server's.
        """
        encoded = (encode_chunk(chunk, prefix, compress=self.compress) for chunk in chunks)
        total = SendResult()
        for batch in prefetched(encoded):
            result = self.send_batch(model, batch)
            total.add(result)
            if on_batch is not None:
                on_batch(result)
        return total

    def send_batch(self, model: str, batch: EncodedBatch) -> BatchResult:
        """Post one encoded batch (retried with the same batch id)."""
        headers = {"Content-Type": "application/json"}
        if batch.gzipped:
            headers["Content-Encoding"] = "gzip"
        response = self._request(
            "POST", f"/v1/models/{model}/batches", content=batch.body, headers=headers
        )
        answer = response.json()
        return BatchResult(
            batch_id=batch.batch_id,
            first=batch.first,
            rows=batch.rows,
            rows_inserted=answer["rows_inserted"],
            rows_updated=answer["rows_updated"],
            replayed=response.status_code == 200,
            windows_touched=answer["windows_touched"],
            # A batch stored before rows_unchanged existed replays an answer without it.
            rows_unchanged=answer.get("rows_unchanged", 0),
        )

    def send_labels(
        self, model: str, *, ids: Any, labels: Any, labelled_at: Any = None, sources: Any = None
    ) -> LabelResult:
        """Set the labels (0 or 1) of predictions already sent, e.g. a chargeback feed, with
        when each arrived (``labelled_at``: datetimes or ISO strings; None: when the server
        receives it) and where from (``sources``: feedback, chargeback or confirmed, the
        default).

        Replaying a label feed changes nothing (the first arrival of a label value keeps its
        time and source), so retries need no batch id.
        """
        arrays = {"id": ids, "label": labels, "labelled_at": labelled_at, "source": sources}
        return self.send_label_chunks(model, array_chunks(arrays, self.batch_rows))

    def send_label_chunks(
        self, model: str, chunks: Iterable[Chunk], on_chunk: Callable[[int], None] | None = None
    ) -> LabelResult:
        """Send chunks of label columns (id, label, optionally labelled_at, source), one label
        update each, in order; ``on_chunk`` is told each chunk's rows once it is applied."""
        total = LabelResult()
        for chunk in chunks:
            body = json_arrays.dumps({"labels": label_entries(chunk)})
            headers = {"Content-Type": "application/json"}
            if self.compress:
                body = gzip.compress(body, compresslevel=1, mtime=0)
                headers["Content-Encoding"] = "gzip"
            answer = self._request(
                "POST", f"/v1/models/{model}/labels", content=body, headers=headers
            ).json()
            total.rows_updated += answer["rows_updated"]
            total.rows_unchanged += answer["rows_unchanged"]
            total.unknown_ids.extend(answer["unknown_ids"])
            if on_chunk is not None:
                on_chunk(chunk.rows)
        return total

    # --- reading -------------------------------------------------------------------------
    def metrics(
        self,
        model: str,
        metric: str,
        *,
        segment: str = "all",
        start: datetime | str | None = None,
        end: datetime | str | None = None,
    ) -> list[dict[str, Any]]:
        """One metric's series as records, oldest window first (``GET .../metrics``).

        ``start`` is inclusive and ``end`` exclusive; both are window starts.
        """
        params = {"metric": metric, "segment": segment, **period_params(start, end)}
        answer = self._json("GET", f"/v1/models/{model}/metrics", params=params)
        points: list[dict[str, Any]] = answer["points"]
        return points

    def metrics_frame(self, model: str, metric: str, **query: Any) -> Any:
        """``metrics`` as a pandas DataFrame indexed by window start (pandas must be
        installed: ``pip install 'calmon[pandas]'``; calmon does not depend on it)."""
        try:
            import pandas as pd  # noqa: PLC0415 - optional, only for this method
        except ImportError as error:
            raise ImportError(
                "metrics_frame() needs pandas: pip install 'calmon[pandas]' "
                "(or use metrics(), which returns plain records)",
                name=error.name,
            ) from None

        frame = pd.DataFrame.from_records(self.metrics(model, metric, **query))
        if frame.empty:
            return frame
        frame["window_start"] = pd.to_datetime(frame["window_start"], utc=True)
        return frame.set_index("window_start")

    def window(self, model: str, window_start: str, *, segment: str = "all") -> dict[str, Any]:
        """Every metric, curve and the verdict of one window and segment."""
        return self._json(
            "GET", f"/v1/models/{model}/windows/{window_start}", params={"segment": segment}
        )

    def status(self, model: str) -> dict[str, Any]:
        """The worker queue's state for a model (dirty windows, lag, heartbeats)."""
        return self._json("GET", f"/v1/models/{model}/status")

    def alerts(self, model: str) -> dict[str, Any]:
        """The alert state of every segment."""
        return self._json("GET", f"/v1/models/{model}/alerts")

    def threshold_advice(self, model: str, *, segment: str = "all") -> dict[str, Any]:
        """Which threshold to set now (within the alert budget, restoring precision)."""
        return self._json(
            "GET", f"/v1/models/{model}/threshold-advice", params={"segment": segment}
        )

    # --- transport -----------------------------------------------------------------------
    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._request(method, path, **kwargs).json()
        return answer

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as error:
                # Connection refused or reset, a timeout: the server may or may not have
                # stored the batch; the same batch id makes the retry safe either way.
                if attempt >= self.retries:
                    raise
                reason = f"cannot reach {self.base_url} ({error or type(error).__name__})"
            else:
                if response.status_code < 400:
                    return response
                if response.status_code not in RETRY_STATUSES or attempt >= self.retries:
                    raise CalmonAPIError(response.status_code, response_body(response))
                reason = f"{self.base_url} answered HTTP {response.status_code}"
            attempt += 1
            self.wait(Retry(attempt, self.retries, self._delay(attempt - 1, response), reason))

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        retry_after = response.headers.get("retry-after", "") if response is not None else ""
        if retry_after.isdigit():
            return min(float(retry_after), 30.0)
        return float(min(self.backoff * 2**attempt, 30.0))
