"""SQL of the workers' heartbeats: who is alive, and what each has done since it started."""

from __future__ import annotations

from sqlalchemy import select

from app.db.metrics_tables import WorkerHeartbeat
from app.db.repositories.base import Repository


class HeartbeatRepository(Repository):
    """Writes and reads ``worker_heartbeats`` inside the caller's transaction."""

    def recent(self, limit: int = 20) -> list[WorkerHeartbeat]:
        """The most recently seen workers first."""
        return list(
            self.session.scalars(
                select(WorkerHeartbeat).order_by(WorkerHeartbeat.last_seen_at.desc()).limit(limit)
            )
        )

    def beat(self, heartbeat: WorkerHeartbeat) -> None:
        """Insert or update a worker's heartbeat row."""
        self.session.merge(heartbeat)
