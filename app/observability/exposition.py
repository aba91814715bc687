"""The /metrics page in Prometheus' text format, rendered in bulk.

prometheus_client's ``generate_latest`` formats every sample on its own: it checks and escapes
each label name and value again, three fifths of a scrape's CPU at 212,000 series (100 models of
ten segments: 1.8 s of rendering after 1.1 s of reading, every scrape). A page holds few
distinct label pairs (the models, segments, metrics, variants and states: a few thousand), so
here each pair and each sample name is escaped once per rendering, by the library's own
escaping functions, and every line is assembled from those pieces. The text is byte for byte
``generate_latest``'s (the tests compare the two on every family calmon exports and on families
built to be awkward: escapes, special numbers, timestamps, every metric type).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import (
    UNDERSCORES,
    escape_label_name,
    escape_metric_name,
)
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# How the text format names OpenMetrics' types (generate_latest's "munging"): the suffix a
# family's name takes in its HELP and TYPE lines, and the type written there.
_TEXT_TYPES: Final = {
    "counter": ("_total", "counter"),
    "info": ("_info", "gauge"),
    "stateset": ("", "gauge"),
    "gaugehistogram": ("", "histogram"),
    "unknown": ("", "untyped"),
}
# A number as Go (and so Prometheus) writes it: the library's own function, typed here.
_go_float: Final[Callable[[float], str]] = floatToGoString
# Samples with these suffixes exist only in OpenMetrics: the text format puts them after their
# family, each suffix as a gauge family of its own.
_OPENMETRICS_SUFFIXES: Final = ("_created", "_gsum", "_gcount")


def render(metrics: Iterable[Metric]) -> bytes:
    """``metrics`` in Prometheus' text format 0.0.4, as ``generate_latest`` writes them."""
    lines = _Lines()
    for metric in metrics:
        lines.add_family(metric)
    return "".join(lines.output).encode("utf-8")


def _escape_label_value(value: str) -> str:
    # The text format's escapes in a label value: backslash, line feed, double quote.
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _escape_help(documentation: str) -> str:
    # The text format's escapes in a HELP line: backslash and line feed.
    return documentation.replace("\\", r"\\").replace("\n", r"\n")


class _Lines:
    """The page's lines, with each sample name and label pair escaped once."""

    def __init__(self) -> None:
        self.output: list[str] = []
        self._names: dict[str, str] = {}
        self._pairs: dict[tuple[str, str], str] = {}

    def add_family(self, metric: Metric) -> None:
        suffix, text_type = _TEXT_TYPES.get(metric.type, ("", metric.type))
        self._header(metric.name + suffix, metric.documentation, text_type)
        # Looked up by sample name, as generate_latest compares each sample's name with these.
        openmetrics_only = {metric.name + s: s for s in _OPENMETRICS_SUFFIXES}
        held: dict[str, list[str]] = {}
        line = self._line
        output = self.output
        for sample in metric.samples:
            kept_for = openmetrics_only.get(sample.name)
            if kept_for is None:
                output.append(line(sample))
            else:
                held.setdefault(kept_for, []).append(line(sample))
        for kept_for, lines in sorted(held.items()):
            self._header(metric.name + kept_for, metric.documentation, "gauge")
            output.extend(lines)

    def _header(self, name: str, documentation: str, text_type: str) -> None:
        escaped = escape_metric_name(name, UNDERSCORES)
        self.output.append(f"# HELP {escaped} {_escape_help(documentation)}\n")
        self.output.append(f"# TYPE {escaped} {text_type}\n")

    def _line(self, sample: Sample) -> str:
        name = self._names.get(sample.name)
        if name is None:
            name = self._names[sample.name] = escape_metric_name(sample.name, UNDERSCORES)
        labels = sample.labels
        if labels:
            pairs, pair = self._pairs, self._pair
            text = ",".join([pairs.get(item) or pair(item) for item in sorted(labels.items())])
            name = f"{name}{{{text}}}"
        if sample.timestamp is None:
            return f"{name} {_go_float(sample.value)}\n"
        return f"{name} {_go_float(sample.value)} {int(float(sample.timestamp) * 1000):d}\n"

    def _pair(self, item: tuple[str, str]) -> str:
        label, value = item
        pair = f'{escape_label_name(label, UNDERSCORES)}="{_escape_label_value(value)}"'
        self._pairs[item] = pair
        return pair
