"""One typed Settings object for the whole service.

Sources, highest priority first: keyword arguments (tests), environment variables prefixed
``CALMON_``, then an optional TOML file (``CALMON_CONFIG_FILE`` or ``config/calmon.toml``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_CONFIG_FILE = Path("config/calmon.toml")
CONFIG_FILE_ENV = "CALMON_CONFIG_FILE"


class SettingsError(ValueError):
    """The configuration is unusable (for instance unsafe in production mode)."""


def config_file_path() -> Path | None:
    """Return the TOML file to read, or None when there is none.

    An explicitly named file (``CALMON_CONFIG_FILE``) must exist: a typo in a deployment should
    stop the service, not silently fall back to defaults.
    """
    explicit = os.environ.get(CONFIG_FILE_ENV)
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise SettingsError(f"{CONFIG_FILE_ENV}={explicit} does not name a readable file")
        return path
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


class Settings(BaseSettings):
    """calmon's configuration; every field is settable as ``CALMON_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="CALMON_", extra="ignore", frozen=True)

    environment: Literal["development", "production"] = Field(
        default="development",
        description="production refuses unsafe defaults (auth off, SQLite).",
    )
    data_dir: Path = Field(
        default=Path("var"), description="Directory of the embedded SQLite database."
    )
    database_url: str = Field(
        default="",
        validate_default=True,
        description="SQLAlchemy URL; empty means sqlite:///<data_dir>/calmon.sqlite3. "
        "PostgreSQL: postgresql+psycopg://user:password@host:5432/dbname",
    )
    migrate_on_start: bool | None = Field(
        default=None,
        description="`calmon serve` upgrades the schema before listening; "
        "unset means only on SQLite (the embedded default).",
    )
    host: str = Field(default="127.0.0.1", description="`calmon serve` bind address.")
    port: int = Field(default=8000, ge=1, le=65535, description="`calmon serve` port.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Minimum level of the JSON-lines log on stderr."
    )
    auth_disabled: bool = Field(
        default=False,
        description="Accept requests without a token (local experiments only; logs a warning).",
    )
    db_pool_size: int = Field(default=10, ge=1, description="PostgreSQL connection pool size.")
    db_pool_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How long a request waits for a free database connection before it is "
        "answered 503.",
    )
    readiness_timeout_seconds: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="How long /readyz waits for the database (to connect, and for the locks a "
        "write needs) before it answers 503.",
    )
    sqlite_busy_timeout_ms: int = Field(
        default=30_000,
        ge=0,
        description="How long a SQLite writer waits for the database lock before failing.",
    )
    max_rows_per_request: int = Field(
        default=100_000, ge=1, description="Rows accepted in one ingest request (413 beyond)."
    )
    max_body_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="Bytes accepted in one request body, after gzip decompression (413 beyond); "
        "half of it for a body holding characters past U+00FF, a quarter past U+FFFF.",
    )
    max_gzip_members: int = Field(
        default=64,
        ge=1,
        description="gzip members accepted in one request body (413 beyond): a body of many "
        "tiny members costs CPU out of proportion to its size.",
    )
    max_gzip_ratio: int = Field(
        default=200,
        ge=2,
        description="Decompressed bytes per compressed byte accepted past the first MiB (413 "
        "beyond): ordinary batches compress 3 to 20 times, compression bombs 1,000 times.",
    )
    max_concurrent_ingest: int = Field(
        default=4,
        ge=1,
        description="Ingest requests read, parsed and written at once per process; more wait "
        "for a slot (up to CALMON_DB_POOL_TIMEOUT_SECONDS, then 503), which bounds memory.",
    )
    max_segments_per_model: int = Field(
        default=200,
        ge=1,
        le=10_000,
        description="Segments a model may have (a batch bringing more is refused, 422): each "
        "is a set of series in /metrics and in every window's computation.",
    )
    min_timestamp: datetime = Field(
        default=datetime(2000, 1, 1, tzinfo=UTC),
        description="Earliest prediction timestamp accepted (ISO 8601).",
    )
    max_future: timedelta = Field(
        default=timedelta(days=1),
        description="How far past the database's clock a prediction timestamp may lie "
        "(seconds or ISO 8601 duration).",
    )

    worker_lease_seconds: float = Field(
        default=300.0,
        gt=0,
        description="How long a worker owns a claimed window; a crashed worker's window is "
        "claimable again after this.",
    )
    worker_poll_seconds: float = Field(
        default=1.0, gt=0, description="How long an idle worker waits before looking again."
    )
    worker_retry_seconds: float = Field(
        default=5.0,
        gt=0,
        description="How long a worker waits before retrying a window whose computation "
        "failed: this, doubled at each further failure (at most 600 s).",
    )
    worker_heartbeat_seconds: float = Field(
        default=5.0, gt=0, description="How often a worker writes its heartbeat row."
    )
    worker_embedded: bool | None = Field(
        default=None,
        description="`calmon serve` also runs the worker in-process; unset means only on SQLite "
        "(the embedded default), so the one-command start computes metrics.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="If set, GET /metrics needs `Authorization: Bearer <this>` (Prometheus: "
        "`authorization` in its scrape config); unset, /metrics is open like /healthz.",
    )
    metrics_max_series: int = Field(
        default=200_000,
        ge=1_000,
        description="Series budget of /metrics' domain gauges: beyond it, intervals go first, "
        "then per-segment detail, then the newest windows' values; alert states never.",
    )
    bootstrap_replicates: int = Field(
        default=1000, ge=100, description="Bootstrap replicates behind every 95% interval."
    )

    @field_validator("database_url")
    @classmethod
    def _default_to_embedded_sqlite(cls, value: str, info: ValidationInfo) -> str:
        if value:
            return value
        data_dir = info.data.get("data_dir", Path("var"))
        return f"sqlite:///{(Path(data_dir) / 'calmon.sqlite3').as_posix()}"

    @field_validator("min_timestamp")
    @classmethod
    def _naive_means_utc(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

    @model_validator(mode="before")
    @classmethod
    def _production_names_its_database(cls, data: Any) -> Any:
        # Checked on the raw values: an empty CALMON_DATABASE_URL (an unset variable in a
        # compose file) must not become the embedded SQLite default in production.
        if (
            isinstance(data, dict)
            and str(data.get("environment", "")).strip() == "production"
            and not str(data.get("database_url") or "").strip()
        ):
            raise SettingsError(
                "CALMON_ENVIRONMENT=production needs an explicit CALMON_DATABASE_URL "
                "(PostgreSQL); it is unset or empty, and the embedded SQLite default is "
                "refused in production"
            )
        return data

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> Settings:
        if self.environment == "production" and self.auth_disabled:
            raise SettingsError(
                "CALMON_AUTH_DISABLED=true is refused when CALMON_ENVIRONMENT=production"
            )
        if self.environment == "production" and self.is_sqlite:
            raise SettingsError(
                "CALMON_DATABASE_URL is a SQLite URL, refused when CALMON_ENVIRONMENT=production: "
                "production needs PostgreSQL (postgresql+psycopg://user:password@host:5432/db)"
            )
        return self

    @property
    def is_sqlite(self) -> bool:
        """True when the database is the embedded SQLite engine."""
        return self.database_url.startswith("sqlite")

    @property
    def should_embed_worker(self) -> bool:
        """Whether `calmon serve` runs the worker in-process."""
        return self.is_sqlite if self.worker_embedded is None else self.worker_embedded

    @property
    def should_migrate_on_start(self) -> bool:
        """Whether `calmon serve` upgrades the schema before it starts listening."""
        return self.is_sqlite if self.migrate_on_start is None else self.migrate_on_start

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_file = config_file_path()
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)


def describe_invalid(error: ValidationError | SettingsError) -> str:
    """One line naming each refused setting by its environment variable."""
    if isinstance(error, SettingsError):
        return str(error)
    parts = []
    for problem in error.errors():
        message = str(problem["msg"]).removeprefix("Value error, ")
        location = problem.get("loc") or ()
        if location:
            message = f"CALMON_{str(location[0]).upper()}: {message}"
        parts.append(message)
    return "; ".join(parts)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings, read once from the environment and the TOML file."""
    return Settings()
