"""Metric names referenced by PromQL expressions, and the names calmon promises to export.

A deliberately small lexer: it is enough for the dashboard's and the alert rules' expressions
(selectors, aggregations, binary operators, functions), and it errs towards reporting a token as
a metric name, so an unknown identifier fails a test instead of slipping through.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.tools import REPO_ROOT

# Names Prometheus itself creates: alert state and scrape health.
PROMETHEUS_BUILTINS = frozenset({"ALERTS", "ALERTS_FOR_STATE", "up"})

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right"}
    | {"and", "or", "unless", "bool", "offset", "inf", "nan"}
)
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def metric_names(expr: str) -> set[str]:
    """Return the metric names an expression selects (functions and keywords excluded)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values and format strings
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range selectors ([5m], [$__rate_interval])
    text = _GROUPING.sub(" ", text)  # label lists of by/on/group_left...
    text = re.sub(r"\$\w+", " ", text)  # Grafana variables outside selectors
    names: set[str] = set()
    for match in _IDENTIFIER.finditer(text):
        token = match.group()
        following = text[match.end() :].lstrip()
        if following.startswith("("):  # a function call or an aggregation
            continue
        if token.lower() in _KEYWORDS or re.fullmatch(r"\d.*", token):
            continue
        names.add(token)
    return names


def documented_metric_names(interfaces: Path = REPO_ROOT / "docs" / "interfaces.md") -> set[str]:
    """The Prometheus names listed in docs/interfaces.md section 3 (the contract)."""
    text = interfaces.read_text()
    start = text.index("## 3. Prometheus names")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    names: set[str] = set()
    for code in re.findall(r"`(calmon_[^`]+)`", section):
        # `calmon_window_verdict_{stable,prior_shift}` is a family; `name{model}` names labels.
        family = re.fullmatch(r"(calmon_\w+_)\{([a-z_,]+)\}", code)
        if family:
            prefix, options = family.groups()
            names.update(prefix + option for option in options.split(","))
        else:
            names.add(code.split("{", 1)[0])
    return names


def exportable_names(exported: set[str], histograms: set[str]) -> set[str]:
    """Exported names plus the series names Prometheus derives from histograms."""
    derived = {h + suffix for h in histograms for suffix in _HISTOGRAM_SUFFIXES}
    return exported | derived | PROMETHEUS_BUILTINS
