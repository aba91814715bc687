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
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.db.repositories.tokens import TokenRepository
from app.db.tables import ApiToken
from app.db.types import utcnow
from app.errors import AuthenticationError, NotFoundError, PermissionDeniedError
from app.schemas.tokens import SCOPES, Scope, TokenCreated, TokenOut

TOKEN_PREFIX = "calmon"


@dataclass(frozen=True)
class Principal:
    """Who is calling and what they may do."""

    name: str
    scopes: frozenset[Scope]
    token_id: int | None = None

    def require(self, scope: Scope) -> None:
        """PermissionDeniedError (403) unless the principal holds ``scope``."""
        if scope not in self.scopes:
            raise PermissionDeniedError(
                f"this operation needs the {scope!r} scope; token {self.name!r} has "
                f"{sorted(self.scopes)}",
                extra={"required_scope": scope},
            )


ANONYMOUS = Principal(name="anonymous (auth disabled)", scopes=frozenset(SCOPES))


def hash_token(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(session: Session, name: str, scopes: Sequence[Scope]) -> TokenCreated:
    """Create a token; the returned object is the only place its secret ever appears."""
    prefix = secrets.token_hex(4)
    token = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    row = TokenRepository(session).add(
        ApiToken(
            name=name,
            prefix=prefix,
            hash=hash_token(token),
            scopes=",".join(s for s in SCOPES if s in set(scopes)),
        )
    )
    return TokenCreated(**to_out(row).model_dump(), token=token)


def authenticate(session: Session, token: str) -> Principal:
    """The principal behind ``token``; AuthenticationError (401) if unknown or revoked."""
    row = TokenRepository(session).get_by_hash(hash_token(token))
    if row is None or row.revoked_at is not None:
        # One message for both: telling them apart would confirm that a leaked token existed.
        raise AuthenticationError("invalid or revoked token", invalid_token=True)
    return Principal(name=row.name, scopes=frozenset(_scopes(row)), token_id=row.id)


def list_tokens(session: Session) -> list[TokenOut]:
    """Every token, revoked ones included, without secrets."""
    return [to_out(row) for row in TokenRepository(session).list_all()]


def revoke_token(session: Session, token_id: int) -> TokenOut:
    """Revoke a token (idempotent); NotFoundError (404) for an unknown id."""
    row = TokenRepository(session).get(token_id)
    if row is None:
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
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def _scopes(row: ApiToken) -> list[Scope]:
    return [s for s in row.scopes.split(",") if s in SCOPES]
