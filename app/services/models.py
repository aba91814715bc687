"""Registering, listing and reconfiguring monitored models."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.repositories.models import ModelRepository
from app.db.repositories.monitoring import MonitoringRepository
from app.db.tables import MonitoredModel
from app.errors import ConflictError, NotFoundError
from app.schemas.models import SETTINGS_FIELDS, ModelCreate, ModelOut, ModelPatch, pi0_columns


def create_model(session: Session, spec: ModelCreate) -> MonitoredModel:
    """Register a model; ConflictError (409) if the name is taken."""
    repository = ModelRepository(session)
    if repository.get_by_name(spec.name) is not None:
        raise _duplicate(spec.name)
    model = MonitoredModel(
        **spec.model_dump(include={"name", "granularity", "timezone", *SETTINGS_FIELDS}),
        **pi0_columns(spec.pi0),
    )
    try:
        # A savepoint, so that losing a race on the unique name leaves the request's
        # transaction usable for the error path.
        with session.begin_nested():
            repository.add(model)
    except IntegrityError as exc:
        raise _duplicate(spec.name) from exc
    # Reference version 1: every segment's first usable windows.
    MonitoringRepository(session).add_spec(model.id, "automatic")
    return model


def list_models(session: Session) -> Sequence[MonitoredModel]:
    """Every registered model, by name."""
    return ModelRepository(session).list_all()


def get_model(session: Session, name: str, *, lock: bool = False) -> MonitoredModel:
    """The model called ``name`` (its row locked if ``lock``); NotFoundError (404) otherwise."""
    model = ModelRepository(session).get_by_name(name, lock=lock)
    if model is None:
        raise NotFoundError(f"no model named {name!r}", extra={"model": name})
    return model


def update_model(session: Session, name: str, patch: ModelPatch) -> MonitoredModel:
    """Apply the fields present in ``patch``.

    Threshold and pi0 policy change what a window's stored values mean, so every window of the
    model is marked dirty for the worker to recompute (verdicts already issued are kept). The
    detector's settings apply to the windows judged from now on; the newest window is re-dirtied
    so that the worker applies them to the alert state soon.
    """
    model = get_model(session, name)
    changed: set[str] = set()
    columns = patch.model_dump(exclude_unset=True, exclude={"pi0"})
    if patch.pi0 is not None and to_out(model).pi0 != patch.pi0:
        columns.update(pi0_columns(patch.pi0))
    for field, value in columns.items():
        if getattr(model, field) != value:
            setattr(model, field, value)
            changed.add(field)
    session.flush()
    if changed & _RECOMPUTE_ALL:
        ModelRepository(session).mark_all_windows_dirty(model.id)
    elif changed:
        MonitoringRepository(session).touch_newest_window(model.id)
    return model


# Settings that change stored values (the others change only judgements to come).
_RECOMPUTE_ALL = frozenset(
    {"threshold", "pi0_policy", "pi0_lookback_windows", "pi0_reference_start"}
    | {"pi0_reference_end", "pi0_fixed", "pi0_tolerance", "min_label_coverage"}
)


def to_out(model: MonitoredModel) -> ModelOut:
    """The public representation of a stored model."""
    return ModelOut.model_validate(model)


def _duplicate(name: str) -> ConflictError:
    return ConflictError(f"a model named {name!r} already exists", extra={"model": name})
