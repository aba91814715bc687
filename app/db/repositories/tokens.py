"""SQL for API tokens."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from app.db.repositories.base import Repository
from app.db.tables import ApiToken


class TokenRepository(Repository):
    """Reads and writes rows of ``api_tokens`` inside the caller's transaction."""

    def get_by_hash(self, token_hash: str) -> ApiToken | None:
        """The token whose secret hashes to ``token_hash`` (revoked or not), or None."""
        return self.session.scalar(select(ApiToken).where(ApiToken.hash == token_hash))

    def get(self, token_id: int) -> ApiToken | None:
        """The token with primary key ``token_id``, or None."""
        return self.session.get(ApiToken, token_id)

    def list_all(self) -> Sequence[ApiToken]:
        """Every token, oldest first."""
        return self.session.scalars(select(ApiToken).order_by(ApiToken.id)).all()

    def add(self, token: ApiToken) -> ApiToken:
        """Insert ``token`` and flush so that its id is known."""
        self.session.add(token)
        self.session.flush()
        return token
