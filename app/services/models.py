"""Registering, listing and reconfiguring monitored models."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.repositories.models import ModelRepository
from app.db.tables import MonitoredModel
from app.errors import ConflictError, NotFoundError
from app.schemas.models import (
    FixedPi0,
    HistoricalPi0,
    ModelCreate,
    ModelOut,
    ModelPatch,
    Pi0Policy,
    ReferencePi0,
)


def create_model(session: Session, spec: ModelCreate) -> MonitoredModel:
    """Register a model; ConflictError (409) if the name is taken."""
    repository = ModelRepository(session)
    if repository.get_by_name(spec.name) is not None:
        raise _duplicate(spec.name)
    model = MonitoredModel(
        name=spec.name,
        threshold=spec.threshold,
        granularity=spec.granularity,
        timezone=spec.timezone,
        min_positives=spec.min_positives,
        min_label_coverage=spec.min_label_coverage,
        baseline_windows=spec.baseline_windows,
        min_history_windows=spec.min_history_windows,
        min_history_positives=spec.min_history_positives,
        pi0_tolerance=spec.pi0_tolerance,
        alert_floor=spec.alert_floor,
    )
    _apply_pi0(model, spec.pi0)
    try:
        # A savepoint, so that losing a race on the unique name leaves the request's
        # transaction usable for the error path.
        with session.begin_nested():
            repository.add(model)
    except IntegrityError as exc:
        raise _duplicate(spec.name) from exc
    return model


def list_models(session: Session) -> Sequence[MonitoredModel]:
    """Every registered model, by name."""
    return ModelRepository(session).list_all()


def get_model(session: Session, name: str) -> MonitoredModel:
    """The model called ``name``; NotFoundError (404) otherwise."""
    model = ModelRepository(session).get_by_name(name)
    if model is None:
        raise NotFoundError(f"no model named {name!r}", extra={"model": name})
    return model


def update_model(session: Session, name: str, patch: ModelPatch) -> MonitoredModel:
    """Apply the fields present in ``patch``.

    Threshold, pi0 policy, baseline and verdict gates all change what a window's stored metrics
    mean, so every window of the model is marked dirty for the worker to recompute. The alert
    floor is read at scrape time and needs no recomputation.
    """
    model = get_model(session, name)
    changed: set[str] = set()
    for field, value in patch.model_dump(exclude_unset=True, exclude={"pi0"}).items():
        if getattr(model, field) != value:
            setattr(model, field, value)
            changed.add(field)
    if patch.pi0 is not None and to_out(model).pi0 != patch.pi0:
        _apply_pi0(model, patch.pi0)
        changed.add("pi0")
    session.flush()
    if changed - {"alert_floor"}:
        ModelRepository(session).mark_all_windows_dirty(model.id)
    return model


def to_out(model: MonitoredModel) -> ModelOut:
    """The public representation of a stored model."""
    pi0: Pi0Policy
    if model.pi0_policy == "fixed" and model.pi0_fixed is not None:
        pi0 = FixedPi0(policy="fixed", value=model.pi0_fixed)
    elif (
        model.pi0_policy == "reference"
        and model.pi0_reference_start is not None
        and model.pi0_reference_end is not None
    ):
        pi0 = ReferencePi0(
            policy="reference", start=model.pi0_reference_start, end=model.pi0_reference_end
        )
    else:
        pi0 = HistoricalPi0(lookback_windows=model.pi0_lookback_windows)
    return ModelOut(
        name=model.name,
        threshold=model.threshold,
        granularity=model.granularity,
        timezone=model.timezone,
        pi0=pi0,
        min_positives=model.min_positives,
        min_label_coverage=model.min_label_coverage,
        baseline_windows=model.baseline_windows,
        min_history_windows=model.min_history_windows,
        min_history_positives=model.min_history_positives,
        pi0_tolerance=model.pi0_tolerance,
        alert_floor=model.alert_floor,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _apply_pi0(model: MonitoredModel, policy: Pi0Policy) -> None:
    model.pi0_policy = policy.policy
    model.pi0_lookback_windows = (
        policy.lookback_windows if isinstance(policy, HistoricalPi0) else None
    )
    model.pi0_reference_start = policy.start if isinstance(policy, ReferencePi0) else None
    model.pi0_reference_end = policy.end if isinstance(policy, ReferencePi0) else None
    model.pi0_fixed = policy.value if isinstance(policy, FixedPi0) else None


def _duplicate(name: str) -> ConflictError:
    return ConflictError(f"a model named {name!r} already exists", extra={"model": name})
