"""Bearer tokens: `pcc_<id>_<secret>`, of which only the SHA-256 of the secret is stored.

The secret is 256 random bits, so a plain SHA-256 is enough (a slow password hash protects guessable
secrets, which these are not) and verifying costs one primary-key lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal, cast, get_args

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.scope import TableScope
from coordinator.errors import InvalidRequest

Role = Literal["reader", "writer", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)
_PREFIX = "pcc"


@dataclass(frozen=True)
class Principal:
    """The caller of one request: a token's name, role and grant.

    A grant (a database, or one table of it) bounds everything the token does: a writer writes and
    reads inside it, a reader with a grant reads inside it. Admins and readers without a grant read
    everything.
    """

    name: str
    role: Role
    database: str | None = None
    table_name: str | None = None
    token_id: str | None = None

    @property
    def scope(self) -> TableScope | None:
        """What the token may read; None for everything."""
        if self.role == "admin" or self.database is None:
            return None
        return TableScope(self.database, self.table_name)

    @property
    def reads_everything(self) -> bool:
        return self.scope is None

    def may_read(self, database: str, table_name: str) -> bool:
        scope = self.scope
        return scope is None or scope.covers_table(database, table_name)

    def may_read_database(self, database: str) -> bool:
        """Whether the token may see `database` at all (its grant's database, or any)."""
        scope = self.scope
        return scope is None or scope.database == database

    def grant(self) -> str:
        """The grant as the CLI spells it, for messages: `a`, `a.t`, or `everything`."""
        if self.database is None:
            return "everything"
        return self.database if self.table_name is None else f"{self.database}.{self.table_name}"

    def may_write(self, database: str, table_name: str) -> bool:
        """Admins write everywhere; a writer only inside its grant (a database, or one table of it)."""
        if self.role == "admin":
            return True
        if self.role != "writer":
            return False
        if self.database is not None and self.database != database:
            return False
        return self.table_name is None or self.table_name == table_name


@dataclass(frozen=True)
class IssuedToken:
    principal: Principal
    token: str
    """The only time the secret is shown."""


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str
    role: Role
    database: str | None
    table_name: str | None
    created_at: float
    revoked_at: float | None


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenStore:
    def __init__(self, engine: Engine, clock: Clock | None = None) -> None:
        self._clock = clock or Clock()
        self._engine = engine

    def create(
        self, name: str, role: str, *, database: str | None = None, table: str | None = None
    ) -> IssuedToken:
        """A new token. A writer must be granted a database or a table (`db.name`); a reader may be,
        and then reads only there (without one it reads everything); an admin takes none.

        Raises:
            InvalidRequest naming the offending argument.
        """
        if role not in ROLES:
            raise InvalidRequest(f"role must be one of {', '.join(ROLES)}", field="role")
        table_name = None
        if table is not None:
            db_part, dot, table_name = table.partition(".")
            if not dot or not db_part or not table_name:
                raise InvalidRequest("table must be <database>.<name>", field="table")
            if database is not None and database != db_part:
                raise InvalidRequest("table is not in the granted database", field="table")
            database = db_part
        if role == "writer" and database is None:
            raise InvalidRequest("a writer token needs --database or --table", field="database")
        if role == "admin" and database is not None:
            raise InvalidRequest("an admin token takes no grant", field="database")
        if not name.strip():
            raise InvalidRequest("name must not be empty", field="name")
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        with self._engine.begin() as conn:
            repo.insert_token(
                conn,
                token_id=token_id,
                name=name,
                role=role,
                database=database,
                table_name=table_name,
                secret_sha256=_digest(secret),
                created_at=self._clock.now(),
            )
        principal = Principal(name, role, database, table_name, token_id)
        return IssuedToken(principal, f"{_PREFIX}_{token_id}_{secret}")

    def verify(self, token: str) -> Principal | None:
        """The principal of a live token, or None (malformed, unknown, wrong secret or revoked)."""
        prefix, _, rest = token.partition("_")
        token_id, _, secret = rest.partition("_")
        if prefix != _PREFIX or not token_id or not secret:
            return None
        with self._engine.connect() as conn:
            row = repo.get_token(conn, token_id)
        if row is None or row.revoked_at is not None:
            return None
        if not hmac.compare_digest(row.secret_sha256, _digest(secret)):
            return None
        return Principal(row.name, cast(Role, row.role), row.database, row.table_name, token_id)

    def list(self) -> list[TokenInfo]:
        with self._engine.connect() as conn:
            rows = repo.list_tokens(conn)
        return [
            TokenInfo(r.id, r.name, cast(Role, r.role), r.database, r.table_name, r.created_at, r.revoked_at)
            for r in rows
        ]

    def revoke(self, token_id: str) -> bool:
        """False when no live token has this id."""
        with self._engine.begin() as conn:
            return repo.revoke_token(conn, token_id, now=self._clock.now())
