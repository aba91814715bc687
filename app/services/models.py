"""Registering, listing and reconfiguring monitored models.

The use cases the API calls return schemas (``ModelOut``, ``ModelDeleted``); ``add_model`` and
``get_model`` hand the ORM row to other services, the worker, tests and benches (see
docs/architecture.md, "One pattern per layer").
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db.repositories.models import ModelRepository
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.purges import PurgeRepository
from app.db.tables import MonitoredModel
from app.errors import ConflictError, ModelNotFoundError
from app.schemas.models import (
    SETTINGS_FIELDS,
    ModelCreate,
    ModelDeleted,
    ModelOut,
    ModelPatch,
    pi0_columns,
)


def create_model(session: Session, spec: ModelCreate) -> ModelOut:
    """Register a model; ConflictError (409) if the name is taken."""
    return to_out(add_model(session, spec))


def add_model(session: Session, spec: ModelCreate) -> MonitoredModel:
    """:func:`create_model`, returning the stored row."""
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


def list_models(session: Session) -> list[ModelOut]:
    """Every registered model, by name."""
    return [to_out(model) for model in ModelRepository(session).list_all()]


def read_model(session: Session, name: str) -> ModelOut:
    """The model called ``name``; NotFoundError (404) otherwise."""
    return to_out(get_model(session, name))


def get_model(
    session: Session, name: str, *, lock: bool = False, share: bool = False
) -> MonitoredModel:
    """The model called ``name`` (its row locked if ``lock``, or ``share``d by a writer of its
    predictions: see ModelRepository.get_by_name); NotFoundError (404) otherwise."""
    model = ModelRepository(session).get_by_name(name, lock=lock, share=share)
    if model is None:
        raise ModelNotFoundError(name)
    return model


def delete_model(session: Session, name: str, now: datetime) -> ModelDeleted:
    """Delete the model called ``name`` and all its data (NotFoundError if unknown).

    The model row waits for its batches in progress (they hold it FOR KEY SHARE), then goes
    with its windows, metrics, verdicts and batches at once; the name is free again at commit.
    Its predictions are removed afterwards by the worker, a bounded chunk per transaction
    (:func:`purge_predictions`), so that neither this request nor any one transaction grows
    with the model's size; other models' ingest never waits for any of it.
    ``predictions_purged`` is true when the predictions went in this transaction too (SQLite).
    """
    model = ModelRepository(session).get_by_name(name, delete=True)
    if model is None:
        raise ModelNotFoundError(name)
    purged = PurgeRepository(session).delete_model(model, now)
    return ModelDeleted(name=name, predictions_purged=purged)


def purge_predictions(session_factory: sessionmaker[Session], chunk_rows: int) -> int:
    """One chunk of a deleted model's predictions, in its own transaction; rows deleted (0 when
    no model awaits a purge)."""
    with session_factory.begin() as session:
        repository = PurgeRepository(session)
        model_id = repository.next_purge()
        if model_id is None:
            return 0
        return repository.purge_chunk(model_id, chunk_rows)


def update_model(session: Session, name: str, patch: ModelPatch) -> ModelOut:
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
    return to_out(model)


# Settings that change stored values (the others change only judgements to come).
_RECOMPUTE_ALL = frozenset(
    {"threshold", "pi0_policy", "pi0_lookback_windows", "pi0_reference_start"}
    | {"pi0_reference_end", "pi0_fixed", "pi0_tolerance", "min_label_coverage"}
    | {"label_horizon_days", "alert_capacity", "review_cost"}
)


def to_out(model: MonitoredModel) -> ModelOut:
    """The public representation of a stored model."""
    return ModelOut.model_validate(model)


def _duplicate(name: str) -> ConflictError:
    return ConflictError(f"a model named {name!r} already exists", extra={"model": name})
