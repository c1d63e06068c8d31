"""Create, register, look up and drop tables."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.models import TableRow
from coordinator.domain.locations import ancestor_keys, contains, is_root, location_key, overlaps
from coordinator.domain.retention import Retention
from coordinator.domain.table_schema import TableShape
from coordinator.domain.table_stats import TableStats
from coordinator.errors import (
    InvalidRequest,
    LocationInUse,
    PurgeRefused,
    TableAlreadyExists,
    TableNotFound,
)
from coordinator.storage.fileio import FileIO
from coordinator.storage.layout import TableLayout
from coordinator.storage.store_uri import table_location
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.snapshots_on_storage import find_latest_snapshot_id, latest_schema_id
from coordinator.usecases.table_stats import stats_on_storage
from coordinator_client.format.schema import SchemaField, TableSchema
from coordinator_client.format.types import parse_type
from coordinator_client.models import CreateTableRequest


@dataclass(frozen=True)
class Table:
    """A table as the commit path sees it; immutable, cached per id."""

    id: str
    database: str
    name: str
    uuid: str
    location: str
    shape: TableShape
    layout: TableLayout

    @property
    def lock_id(self) -> str:
        return f"{TABLE_LOCK_PREFIX}{self.id}"


TABLE_LOCK_PREFIX = "table:"

CREATED = "created"
"""`paimon_tables.origin` of a table whose folder the coordinator made: purge may delete that folder."""
REGISTERED = "registered"
"""`paimon_tables.origin` of a table registered by location: its files were found, never purged."""


def version_of(table: Table) -> repo.TableVersion:
    """Which table and schema `table` was read as: what its row must still say for it to be current."""
    return repo.TableVersion(table.uuid, table.shape.schema.id)


def table_id_of(database: str, name: str) -> str:
    return f"{database}.{name}"


def split_table_id(table_id: str) -> tuple[str, str]:
    """(database, name); database names hold no dot, so the first one separates them."""
    database, _, name = table_id.partition(".")
    return database, name


class Tables:
    """The table catalog: rows in the database, schema files on storage."""

    def __init__(self, engine: Engine, fileio: FileIO, warehouse_root: str, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        self._fileio = fileio
        self._root = warehouse_root
        self._cache: dict[str, Table] = {}
        self._lock = threading.Lock()

    def get(self, table_id: str) -> Table:
        """The table as the database has it now, parsed once per version.

        A cached table is served after one primary-key read of its uuid and schema id, so a table that
        another replica dropped and created again, or whose options it changed, is never served in its
        old shape. (The commit path checks again under the table's lock: see Committer._decide.)

        Raises:
            TableNotFound: no such table.
        """
        cached = self._cache.get(table_id)
        if cached is None:
            return self._load(table_id)
        with read_only(self._engine) as conn:
            current = repo.table_version(conn, table_id)
        if current is None:
            self.evict(table_id)
            raise TableNotFound(f"table {table_id} does not exist")
        if current == version_of(cached):
            return cached
        return self._load(table_id)

    def refresh(self, table_id: str) -> Table:
        """The table as the database has it now, read whole (another process may have changed it).

        Raises:
            TableNotFound: no such table (it is no longer cached either).
        """
        return self._load(table_id)

    def at_version(self, table_id: str, version: repo.TableVersion) -> Table:
        """The table in `version`, which the caller just read from its row: the cached one if it is that
        version, else the row read again (which may by now be a later version).

        Raises:
            TableNotFound: the table was dropped meanwhile.
        """
        cached = self._cache.get(table_id)
        if cached is not None and version_of(cached) == version:
            return cached
        return self._load(table_id)

    def evict(self, table_id: str) -> None:
        """Forget the cached table (it was dropped, or is not the table the database has)."""
        with self._lock:
            self._cache.pop(table_id, None)

    def _load(self, table_id: str) -> Table:
        with read_only(self._engine) as conn:
            row = repo.get_table(conn, table_id)
        if row is None:
            self.evict(table_id)
            raise TableNotFound(f"table {table_id} does not exist")
        table = self._table(row.id, row.database, row.name, row.uuid, row.location, row.schema_json)
        with self._lock:
            self._cache[table_id] = table
        return table

    def page(
        self,
        *,
        limit: int,
        page_token: str | None = None,
        database: str | None = None,
        name_prefix: str | None = None,
    ) -> TablePage:
        """One page of tables in (database, name) order, from the database alone (sizes included).

        Raises:
            InvalidRequest: a page token this service did not give out.
        """
        after = decode_page_token(page_token) if page_token else None
        with self._engine.connect() as conn:
            rows = repo.list_tables(
                conn, limit=limit + 1, after=after, database=database, name_prefix=name_prefix
            )
        entries = [_entry(r) for r in rows[:limit]]
        more = len(rows) > limit
        return TablePage(entries, encode_page_token(entries[-1]) if more else None)

    def entry(self, table_id: str) -> TableEntry:
        """One table as listed: its row with its size.

        Raises:
            TableNotFound: no such table.
        """
        with self._engine.connect() as conn:
            row = repo.get_table(conn, table_id)
        if row is None:
            raise TableNotFound(f"table {table_id} does not exist")
        return _entry(row)

    def latest_snapshot_id(self, table_id: str) -> int:
        with self._engine.connect() as conn:
            latest = repo.latest_snapshot_id(conn, table_id)
        if latest is None:
            raise TableNotFound(f"table {table_id} does not exist")
        return latest

    def create(self, request: CreateTableRequest) -> Table:
        """Create a new table (writes schema/schema-0) or register an existing one by location.

        Raises:
            InvalidRequest, TableAlreadyExists, LocationInUse: another table owns the folder, one inside
                it or one around it; nothing was written.
        """
        table_id = table_id_of(request.database, request.name)
        with self._engine.connect() as conn:
            if repo.get_table(conn, table_id) is not None:
                raise TableAlreadyExists(f"table {table_id} already exists")
        if request.location is not None:
            return self._register(request, table_id)
        schema = build_schema(request, now_millis=self._clock.millis())
        location = f"{self._root}/{request.database}.db/{request.name}"
        key = location_key(location)
        self._check_location_free(location, key, field=None)
        layout = TableLayout(location)
        if self._fileio.list_names(layout.schema_dir):
            raise TableAlreadyExists(
                f'{location} already holds a Paimon table; register it with "location" instead'
            )
        self._fileio.write_new(layout.schema(0), schema.to_json().encode())
        try:
            return self._insert(
                table_id, request, str(uuid.uuid4()), location, key, CREATED, schema, latest=0
            )
        except TableAlreadyExists:
            self._fileio.delete(layout.schema(0))
            raise
        except LocationInUse:
            # A registration of this very folder that won the race read the schema-0 written above:
            # it is that table's schema now. Any other loss leaves schema-0 to nobody.
            if not self._owned_by_another(key, table_id):
                self._fileio.delete(layout.schema(0))
            raise

    def drop(self, table_id: str, *, purge: bool) -> None:
        """Forget the table; its files stay. With purge, also delete the folder the coordinator made for
        it, exactly that folder; a registered table's files were found, not made, and are never purged.

        Raises:
            TableNotFound: no such table.
            PurgeRefused: purge of a registered table, or of a folder that is not only this table's;
                nothing changed.
        """
        with self._engine.begin() as conn:
            row = repo.get_table(conn, table_id)
            if row is None:
                raise TableNotFound(f"table {table_id} does not exist")
            if purge:
                self._check_purge(conn, row)
            if not repo.delete_table(conn, table_id):
                raise TableNotFound(f"table {table_id} does not exist")
        with self._lock:
            self._cache.pop(table_id, None)
        if purge:
            self._fileio.delete_tree(row.location)

    def _check_purge(self, conn: Connection, row: TableRow) -> None:
        """Raises PurgeRefused unless the row's location is the folder this coordinator made for it,
        inside the warehouse, and no other table's folder is, encloses or lies inside it."""
        if row.origin != CREATED:
            raise PurgeRefused(
                f"table {row.id} was registered by location: its files at {row.location} were found, not "
                "made by the coordinator, and are not purged; drop it without purge",
                field="purge",
            )
        made = f"{self._root}/{row.database}.db/{row.name}"
        try:
            key = location_key(row.location)
        except ValueError:
            key = ""
        # The folder create() makes is strictly inside the warehouse; anything else (an empty location,
        # the warehouse itself, a folder of an earlier warehouse setting) is not this purge's to delete.
        if not key or is_root(key) or key != location_key(made) or not contains(self._root, key):
            raise PurgeRefused(
                f"table {row.id}'s location {row.location!r} is not the folder this coordinator makes for "
                f"it ({made}); drop it without purge",
                field="purge",
            )
        owners = repo.location_owners(conn, key, ancestor_keys(key), excluding=row.id)
        clash = next((o for o in owners if overlaps(o.location_key, key)), None)
        if clash is not None:
            raise PurgeRefused(
                f"table {clash.id} at {clash.location} shares the folder of table {row.id}; "
                "drop without purge",
                field="purge",
            )

    def _register(self, request: CreateTableRequest, table_id: str) -> Table:
        if request.fields or request.partition_keys or request.primary_keys or request.options:
            raise InvalidRequest(
                "registering by location takes the schema from the table; send no fields", field="fields"
            )
        given = request.location or ""
        if not given.strip():
            # local_path would take an empty location for the working directory.
            raise InvalidRequest("a table location cannot be empty", field="location")
        try:
            location = table_location(given, self._root)
            key = location_key(location)
        except ValueError as error:
            raise InvalidRequest(str(error), field="location") from None
        if is_root(key):
            raise InvalidRequest(
                f"{location} is the root of a filesystem or bucket, which no table can own", field="location"
            )
        self._check_location_free(location, key, field="location")
        layout = TableLayout(location)
        schema_id = latest_schema_id(self._fileio, layout)
        if schema_id is None:
            raise InvalidRequest(f"no Paimon table at {location} (no schema/ files)", field="location")
        schema = TableSchema.from_json(self._fileio.read(layout.schema(schema_id)).decode())
        _check_supported(schema, field="location")
        latest = find_latest_snapshot_id(self._fileio, layout) or 0
        table = self._insert(
            table_id, request, str(uuid.uuid4()), location, key, REGISTERED, schema, latest=latest
        )
        if latest:
            found = SnapshotFile.read(self._fileio.read(layout.snapshot(latest)).decode())
            # Registration reads the table once, so that no request has to later.
            stats = stats_on_storage(self._fileio, table, found.snapshot)
            with self._engine.begin() as conn:
                repo.insert_snapshots(conn, table_id, [found.row(published=True)])
                repo.set_stats(
                    conn,
                    table_id,
                    total_record_count=stats.total_record_count,
                    file_count=stats.file_count,
                    file_bytes=stats.file_bytes,
                )
        return table

    def _check_location_free(self, location: str, key: str, *, field: str | None) -> None:
        """Raises LocationInUse naming the table whose folder is, encloses or lies inside `location`."""
        with self._engine.connect() as conn:
            owners = repo.location_owners(conn, key, ancestor_keys(key))
        clash = next((o for o in owners if overlaps(o.location_key, key)), None)
        if clash is not None:
            raise LocationInUse(_in_use(location, key, clash), field=field)

    def _owned_by_another(self, key: str, table_id: str) -> bool:
        """True when a table other than `table_id` owns exactly the folder of `key`."""
        with self._engine.connect() as conn:
            owners = repo.location_owners(conn, key, [], excluding=table_id, limit=1)
        return any(o.location_key == key for o in owners)

    def _insert(
        self,
        table_id: str,
        request: CreateTableRequest,
        table_uuid: str,
        location: str,
        key: str,
        origin: str,
        schema: TableSchema,
        *,
        latest: int,
    ) -> Table:
        """Record the table; its folder must be nobody else's.

        The unique index on location_key settles a race for the same folder. A folder inside or around
        another is no index's to catch, so once this row is visible the check runs again and this row
        backs out if it finds one: of two racers at least one sees the other, so both never stay (both
        may back out, each answered 409).

        Raises:
            TableAlreadyExists, LocationInUse.
        """
        field = "location" if origin == REGISTERED else None
        try:
            with self._engine.begin() as conn:
                repo.insert_table(
                    conn,
                    {
                        "id": table_id,
                        "database": request.database,
                        "name": request.name,
                        "uuid": table_uuid,
                        "location": location,
                        "location_key": key,
                        "origin": origin,
                        "schema_id": schema.id,
                        "schema_json": schema.to_json(),
                        "latest_snapshot_id": latest,
                        "created_at": self._clock.now(),
                        # A registered table's size is set from its files right after (_register).
                        **({} if latest else {"total_record_count": 0, "file_count": 0, "file_bytes": 0}),
                    },
                )
        except IntegrityError:
            with self._engine.connect() as conn:
                taken = repo.get_table(conn, table_id) is not None
            if taken:
                raise TableAlreadyExists(f"table {table_id} already exists") from None
            # Not the id, so the folder: another table took it since the check in front.
            self._check_location_free(location, key, field=field)
            raise LocationInUse(
                f"{location} was taken by another table while {table_id} was being recorded", field=field
            ) from None
        with self._engine.connect() as conn:
            owners = repo.location_owners(conn, key, ancestor_keys(key), excluding=table_id)
        clash = next((o for o in owners if overlaps(o.location_key, key)), None)
        if clash is not None:
            with self._engine.begin() as conn:
                repo.delete_table(conn, table_id)
            raise LocationInUse(_in_use(location, key, clash), field=field)
        return self.get(table_id)

    def _table(
        self, table_id: str, database: str, name: str, table_uuid: str, location: str, schema_json: str
    ) -> Table:
        shape = TableShape.of(TableSchema.from_json(schema_json))
        return Table(table_id, database, name, table_uuid, location, shape, TableLayout(location))


@dataclass(frozen=True)
class TableEntry:
    """A table as the table list and the overview show it: its row, its schema and its recorded size."""

    id: str
    database: str
    name: str
    uuid: str
    location: str
    schema: TableSchema
    latest_snapshot_id: int
    stats: TableStats
    last_commit_at: float | None


@dataclass(frozen=True)
class TablePage:
    entries: list[TableEntry]
    next_page_token: str | None


def _in_use(location: str, key: str, owner: repo.LocationOwner) -> str:
    if owner.location_key == key:
        return f"{location} is already the location of table {owner.id}"
    if contains(owner.location_key, key):
        return f"{location} lies inside the folder of table {owner.id} ({owner.location})"
    return f"{location} encloses the folder of table {owner.id} ({owner.location})"


def _entry(row: TableRow) -> TableEntry:
    return TableEntry(
        row.id,
        row.database,
        row.name,
        row.uuid,
        row.location,
        TableSchema.from_json(row.schema_json),
        row.latest_snapshot_id,
        TableStats(row.total_record_count, row.file_count, row.file_bytes),
        row.last_commit_at,
    )


def encode_page_token(last: TableEntry) -> str:
    """Opaque to clients: where the next page starts, (database, name) of the last table listed."""
    raw = json.dumps([last.database, last.name], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> tuple[str, str]:
    """Raises:
    InvalidRequest: naming page_token, when the token is not one `encode_page_token` made.
    """
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        database, name = json.loads(raw)
    except (ValueError, TypeError):
        raise InvalidRequest("not a page token of this service", field="page_token") from None
    if not isinstance(database, str) or not isinstance(name, str):
        raise InvalidRequest("not a page token of this service", field="page_token")
    return database, name


def build_schema(request: CreateTableRequest, *, now_millis: int) -> TableSchema:
    """schema-0 of a new table, validated: Paimon's rules plus what the coordinator supports.

    Raises:
        InvalidRequest: naming the offending field.
    """
    if not request.fields:
        raise InvalidRequest("a new table needs fields (or a location to register)", field="fields")
    names = [f.name for f in request.fields]
    for i, f in enumerate(request.fields):
        if names.index(f.name) != i:
            raise InvalidRequest(f"duplicate field name {f.name!r}", field=f"fields[{i}].name")
    types = []
    for i, f in enumerate(request.fields):
        try:
            t = parse_type(f.type)
        except ValueError as e:
            raise InvalidRequest(str(e), field=f"fields[{i}].type") from None
        types.append(t)
    for key_list, label in ((request.partition_keys, "partitionKeys"), (request.primary_keys, "primaryKeys")):
        for i, key in enumerate(key_list):
            if key not in names:
                raise InvalidRequest(f"{key!r} is not a field of the table", field=f"{label}[{i}]")
            if key_list.index(key) != i:
                raise InvalidRequest(f"{key!r} is listed twice", field=f"{label}[{i}]")
    if request.primary_keys:
        for key in request.partition_keys:
            if key not in request.primary_keys:
                raise InvalidRequest(
                    f"the primary key must include the partition key {key!r}", field="primaryKeys"
                )
    options = {"file.format": "parquet", **request.options}
    try:
        Retention.of(options)
    except ValueError as error:
        named = next((k for k in request.options if k in str(error)), None)
        raise InvalidRequest(str(error), field=f"options.{named}" if named else "options") from None
    if request.primary_keys:
        # Primary-key columns are NOT NULL in Paimon.
        types = [t.not_null() if n in request.primary_keys else t for n, t in zip(names, types, strict=True)]
    fields = tuple(
        SchemaField(i, f.name, str(t), f.description)
        for i, (f, t) in enumerate(zip(request.fields, types, strict=True))
    )
    schema = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=len(fields) - 1,
        partition_keys=tuple(request.partition_keys),
        primary_keys=tuple(request.primary_keys),
        options=options,
        comment=request.comment,
        time_millis=now_millis,
    )
    _check_supported(schema, field="options.bucket")
    return schema


def _check_supported(schema: TableSchema, *, field: str) -> None:
    """The bucket modes the coordinator commits to: fixed buckets, or bucket-unaware append tables."""
    raw = schema.options.get("bucket", "-1")
    try:
        bucket = int(raw)
    except ValueError:
        raise InvalidRequest(f"bucket must be an integer, got {raw!r}", field=field) from None
    if schema.primary_keys and bucket < 1:
        raise InvalidRequest(
            "primary-key tables need a fixed bucket count (bucket >= 1); dynamic and postpone buckets "
            "are not supported",
            field=field,
        )
    if (not schema.primary_keys and bucket == 0) or bucket < -1:
        raise InvalidRequest(f"bucket must be -1 (unaware) or >= 1, got {bucket}", field=field)
    if not schema.primary_keys and bucket >= 1 and not schema.options.get("bucket-key"):
        raise InvalidRequest("an append table with fixed buckets needs the bucket-key option", field=field)
    try:
        TableShape.of(schema)
    except ValueError as e:
        raise InvalidRequest(str(e), field=field) from None
