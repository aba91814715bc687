"""What the API's recurring field names mean, written once for every schema that has them.

The schemas' base classes (app.schemas.base) fill a property's OpenAPI description from here
when the field declares none; a field whose meaning is particular to its schema declares its own
``Field(description=...)``, which wins. A test requires every property of the OpenAPI document
to have a description.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

GLOSSARY: Final[Mapping[str, str]] = MappingProxyType(
    {
        # names and places
        "model": "The model's name.",
        "name": "The name.",
        "segment": "The segment's name; 'all' is the whole window.",
        "segments": "One entry per segment.",
        "window_start": "The window's start, a UTC instant.",
        "first_window": "Start of the first window.",
        "last_window": "Start of the last window.",
        "granularity": "Window length: hour, day or week.",
        "timezone": "IANA zone in which windows are floored.",
        # counts
        "n": "Labelled rows the metrics were computed on.",
        "rows": "Rows (predictions).",
        "rows_total": "Rows in the window, labelled or not.",
        "labelled": "Labelled rows.",
        "positives": "Labelled positive (fraud) rows.",
        "negatives": "Labelled negative rows.",
        "windows": "Number of windows.",
        "label_coverage": "Share of the window's rows that are labelled.",
        # priors and metrics
        "pi": "Positive ratio among the labelled rows.",
        "pi0": "Reference prior at which calibrated values are expressed.",
        "pi0_version": "Version of pi0 the calibrated values use.",
        "pi_ci": "95% interval of pi.",
        "regular": "The metric as measured, at the window's own fraud rate.",
        "calibrated": "The metric at the reference prior pi0 (comparable across fraud rates).",
        "regular_ci": "95% bootstrap interval of the regular value.",
        "calibrated_ci": "95% bootstrap interval of the calibrated value.",
        "prior_effect": "Change against the segment's reference explained by pi.",
        "performance_effect": "Change of the calibrated value against the segment's reference.",
        "reason": "Why a value is null (undefined), or why the state is what it is.",
        "threshold": "A row is predicted positive iff score >= threshold.",
        "metric": "A metric name from the registry.",
        "metrics": "Per metric name: its values.",
        "ci": "95% interval.",
        "value": "The value.",
        "estimate": "Always true: estimated from scores alone, not measured.",
        "score_shift": "The reference's score distributions explain this window's scores at no "
        "fraud rate: the model or its inputs changed.",
        "fit_p_value": "The misfit tests' smaller p-value on this window.",
        "recent_fit_p_value": "The same on this window and up to 6 before it.",
        "adjusted_count_ci": "95% interval of the adjusted count.",
        "dof": "Degrees of freedom of g.",
        "p_value": "p-value of g.",
        "tilt_p_value": "p-value of tilt.",
        # verdicts and references
        "verdict": "The window's verdict (docs/verdicts.md).",
        "verdict_reason": "Why the verdict is what it is.",
        "reference_version": "Version of the reference judged against.",
        "reference_average_precision": "Calibrated average precision of the reference.",
        "signals": "What holds the drop state: cusum and/or floor.",
        "gain_statistic": "The gain detector's statistic after this window.",
        "state": "Alert state: warming_up (no reference yet), ok or drop.",
        "newest_judged_window": "Start of the newest window with an issued verdict.",
        "newest_judged_verdict": "Its verdict.",
        "awaiting_labels": "Recent data whose verdicts are still to come.",
        "ready": "Whether the reference is frozen (windows are judged against it).",
        "kind": "How the reference is chosen: automatic, period or recent.",
        "start": "First day (inclusive), in the model's time zone.",
        "end": "Last day (inclusive), in the model's time zone.",
        "policy": "How pi0 is chosen: historical, reference or fixed.",
        "tolerance": "Relative move of the historical pi0 that starts a new version.",
        "current": "The version in force; null: none yet.",
        "versions": "Every version, oldest first.",
        "version": "Version number, from 1.",
        "history": "The model's windows, oldest first.",
        "used": "Whether the current policy uses this window for pi0.",
        "windows_used": "Windows pi0 was computed from.",
        "rows_used": "Labelled rows pi0 was computed from.",
        "positives_used": "Positives pi0 was computed from.",
        # curves
        "recall": "Recall of each point, ascending.",
        "precision": "Precision of each point.",
        "thresholds": "Score threshold of each point.",
        # the worker's queue
        "workers": "Every worker's last heartbeat.",
        "worker_id": "The worker's id (host and process).",
        "started_at": "When the worker started.",
        "last_seen_at": "The worker's last heartbeat.",
        "windows_computed": "Windows the worker has computed since it started.",
        "failures": "Window computations that failed since it started.",
        "last_duration_seconds": "Seconds its last window computation took.",
        "latest_complete_window": "Start of the newest window that has ended.",
        "latest_computed_at": "When that window was last computed.",
        "dirty_windows": "Windows with changes the worker has not computed yet.",
        "failing_windows": "Windows whose last computation failed.",
        "oldest_dirty_update": "When the oldest uncomputed change arrived.",
        "computed_at": "When this was computed.",
        "duration_seconds": "Seconds the computation took.",
        "counts": "Confusion counts at the threshold (tp, fp, tn, fn).",
        "evidence": "The numbers behind an issued verdict; null until judged.",
        "points": "One entry per window, oldest first.",
        # tokens
        "id": "The token's id.",
        "prefix": "The first characters of the token, to recognise it.",
        "scopes": "What the token may do: ingest, read and/or admin.",
        "token": "The secret: shown only in this response.",
        "created_at": "When it was created.",
        "updated_at": "When it was last changed.",
        "revoked_at": "When it was revoked; null while valid.",
        # errors
        "error": "What went wrong.",
        "field": "The field (or column, or body) at fault.",
        "message": "What is wrong, for a person.",
        "details": "The problems, the first ones by row.",
    }
)


def describe_properties(
    schema: dict[str, Any], own: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Give every property of ``schema`` without a description one: ``own`` first, then the
    glossary. Pydantic's ``json_schema_extra`` hook, applied by the schemas' base classes."""
    for name, prop in schema.get("properties", {}).items():
        if "description" not in prop:
            text = (own or {}).get(name) or GLOSSARY.get(name)
            if text is not None:
                prop["description"] = text
    return schema
