"""Producing a sequence on a helper thread, a bounded distance ahead of its consumer: the
client encodes the next batch while the current request is in flight."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar, cast

T = TypeVar("T")


_DONE = object()


def prefetched(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """``items`` produced on a helper thread, at most ``depth`` ahead of the consumer.

    An exception in the producer is raised in the consumer; a consumer that stops early (an
    error while sending) tells the producer to stop.
    """
    slots: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        slots.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            slots.put(_DONE)
        except BaseException as exc:  # handed over to the consumer, re-raised there
            slots.put(exc)

    thread = threading.Thread(target=produce, name="calmon-client-encoder", daemon=True)
    thread.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield cast(T, item)
    finally:
        stop.set()
        thread.join(timeout=5)
