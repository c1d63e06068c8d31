"""`alembic upgrade head` from inside the service, wherever the package was installed."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config


def migrations_dir() -> Path:
    """The Alembic scripts: shipped inside the wheel, or the repository's top-level folder in a checkout."""
    packaged = Path(__file__).resolve().parent.parent / "migrations"
    if (packaged / "env.py").exists():
        return packaged
    return Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(database_url: str) -> Config:
    """An Alembic Config pointing at our scripts and the given database."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str) -> None:
    """Bring the database schema to the newest revision."""
    command.upgrade(alembic_config(database_url), "head")
