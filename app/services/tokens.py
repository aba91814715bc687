"""Bearer tokens: creation, verification, listing and revocation.

A token looks like ``calmon_<prefix>_<secret>``. The prefix (public, stored in clear) lets an
operator tell tokens apart in ``calmon token list``; only the SHA-256 of the whole token is stored.
A plain fast hash is the right tool here: the secret carries 256 random bits, so a stolen hash
cannot be brute-forced, and slow password hashes (bcrypt, argon2) only defend low-entropy
human passwords while costing every API request tens of milliseconds.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from app.db.repositories.tokens import TokenRepository
from app.db.tables import ApiToken
from app.db.types import utcnow
from app.errors import (
    AuthenticationError,
    ModelNotFoundError,
    NotFoundError,
    PermissionDeniedError,
)
from app.schemas.tokens import SCOPES, Scope, TokenCreated, TokenOut
from app.services.model_access import ModelSet

TOKEN_PREFIX = "calmon"


@dataclass(frozen=True)
class Principal:
    """Who is calling and what they may do, on which models."""

    name: str
    scopes: frozenset[Scope]
    token_id: int | None = None
    models: ModelSet = field(default_factory=ModelSet)

    def require(self, scope: Scope) -> None:
        """PermissionDeniedError (403) unless the principal holds ``scope``."""
        if scope not in self.scopes:
            raise PermissionDeniedError(
                f"this operation needs the {scope!r} scope; token {self.name!r} has "
                f"{sorted(self.scopes)}",
                extra={"required_scope": scope},
            )

    def require_model(self, name: str) -> None:
        """ModelNotFoundError (404, as for a model that does not exist) unless the principal
        may see the model ``name``."""
        if not self.models.sees(name):
            raise ModelNotFoundError(name)

    def require_new_model(self, name: str) -> None:
        """PermissionDeniedError (403) unless a model called ``name`` would be the principal's:
        an admin of some models registers models within them only. Nothing is said about
        whether such a model exists."""
        if not self.models.sees(name):
            raise PermissionDeniedError(
                f"token {self.name!r} may register models matching {self.models.listed()} only"
            )


ANONYMOUS = Principal(name="anonymous (auth disabled)", scopes=frozenset(SCOPES))


def hash_token(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(
    session: Session,
    name: str,
    scopes: Sequence[Scope],
    models: Sequence[str] | None = None,
    *,
    minted_by: Principal | None = None,
) -> TokenCreated:
    """Create a token; the returned object is the only place its secret ever appears.

    ``models`` limits it to those models (None: every model). A token minted by an admin of
    some models (``minted_by``) sees at most that admin's models, theirs if none are named.
    """
    wanted = ModelSet.of(models)
    if minted_by is not None and not minted_by.models.everything:
        if models is None:
            wanted = minted_by.models
        elif not minted_by.models.covers(wanted):
            raise PermissionDeniedError(
                f"token {minted_by.name!r} may mint tokens for models within "
                f"{minted_by.models.listed()} only, not {wanted.listed()}"
            )
    prefix = secrets.token_hex(4)
    token = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    row = TokenRepository(session).add(
        ApiToken(
            name=name,
            prefix=prefix,
            hash=hash_token(token),
            scopes=",".join(s for s in SCOPES if s in set(scopes)),
            models=wanted.column(),
        )
    )
    return TokenCreated(**to_out(row).model_dump(), token=token)


def authenticate(session: Session, token: str) -> Principal:
    """The principal behind ``token``; AuthenticationError (401) if unknown or revoked."""
    row = TokenRepository(session).get_by_hash(hash_token(token))
    if row is None or row.revoked_at is not None:
        # One message for both: telling them apart would confirm that a leaked token existed.
        raise AuthenticationError("invalid or revoked token", invalid_token=True)
    return Principal(
        name=row.name,
        scopes=frozenset(_scopes(row)),
        token_id=row.id,
        models=ModelSet.stored(row.models),
    )


def list_tokens(session: Session, seen_by: Principal | None = None) -> list[TokenOut]:
    """Every token, revoked ones included, without secrets; for an admin of some models
    (``seen_by``), the tokens within its models only."""
    rows = TokenRepository(session).list_all()
    return [to_out(row) for row in rows if _manages(seen_by, row)]


def revoke_token(session: Session, token_id: int, by: Principal | None = None) -> TokenOut:
    """Revoke a token (idempotent); NotFoundError (404) for an unknown id, or one outside the
    models of the admin revoking it (``by``)."""
    row = TokenRepository(session).get(token_id)
    if row is None or not _manages(by, row):
        raise NotFoundError(f"no token with id {token_id}")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        session.flush()
    return to_out(row)


def to_out(row: ApiToken) -> TokenOut:
    """The public representation of a stored token."""
    return TokenOut(
        id=row.id,
        name=row.name,
        prefix=row.prefix,
        scopes=_scopes(row),
        models=ModelSet.stored(row.models).listed(),
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def _scopes(row: ApiToken) -> list[Scope]:
    return [s for s in row.scopes.split(",") if s in SCOPES]


def _manages(admin: Principal | None, row: ApiToken) -> bool:
    """Whether ``admin`` (None: the command line) may list and revoke the token ``row``."""
    return admin is None or admin.models.covers(ModelSet.stored(row.models))
