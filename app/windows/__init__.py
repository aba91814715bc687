"""A claimed window's computation, as a use case: read its rows, compute in the pure packages,
store the values, judge the mature windows and estimate the immature ones.

Where to look: ``compute.py`` is the one entry point of the computation (:func:`compute_claim`,
called by the worker's loop); ``queue.py`` claims a window, gives a failed one back and records
a worker's heartbeat; ``evaluation.py`` evaluates a segment at pi0 and turns it into rows;
``series.py`` recomputes a model's series when pi0 moves; ``scores.py`` counts scores on the
model's bins; ``judging.py`` freezes references and advances the drop detector (the alert
state); ``nowcasting.py`` estimates windows from their scores. The rules they apply live in
``app.monitoring`` and the numbers in ``app.metrics``; the worker (``app.worker``) only decides
when to claim, retry or park, through these use cases.
"""
