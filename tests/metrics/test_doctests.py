"""The examples in the kernel's docstrings run, as scikit-learn's do: each prints what the
function returns today (numbers from scikit-learn's own examples and Siblini et al. 2020, eq. 5,
where they give them). A module listed here must keep at least one example."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = (
    "app.metrics.result",  # evaluate: AP and ROC AUC as scikit-learn prints them, calibrated
    "app.metrics.skew",  # transform_precision, precision_at_skew: a precision at another prior
    "app.metrics.sketch",  # CurveSketch.to_bytes / from_bytes / to_json: the round trip
    "app.client.json_arrays",  # datetimes_json: ISO text written from numpy arithmetic
    "app.db.rows",  # from_row: a stored row into a dataclass, by field name
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_print_what_they_say(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in finder.find(module, name):
        runner.run(test, out=report.append)
    results = runner.summarize(verbose=False)
    assert results.attempted > 0, f"{name} has no docstring example left"
    assert results.failed == 0, "".join(report)
