"""Create, register, look up and drop tables."""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.repositories.databases import insert_database
from coordinator.db.repositories.events import insert_events
from coordinator.db.scope import TableScope
from coordinator.domain.locations import is_root, location_key
from coordinator.domain.table_schema import TableShape
from coordinator.errors import (
    InvalidRequest,
    LocationInUse,
    TableAlreadyExists,
    TableNotFound,
)
from coordinator.storage.fileio import FileIO
from coordinator.storage.layout import TableLayout
from coordinator.storage.store_uri import table_location
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.snapshots_on_storage import find_latest_snapshot_id, latest_schema_id

# Re-exported: callers name the table and its id helpers through the use case module.
from coordinator.usecases.table import TABLE_LOCK_PREFIX as TABLE_LOCK_PREFIX
from coordinator.usecases.table import Table as Table
from coordinator.usecases.table import split_table_id as split_table_id
from coordinator.usecases.table import table_id_of as table_id_of
from coordinator.usecases.table import version_of as version_of
from coordinator.usecases.table_events import table_event
from coordinator.usecases.table_locations import (
    CREATED,
    REGISTERED,
    in_use,
    overlapping_owner,
    refuse_purge,
)
from coordinator.usecases.table_pages import (
    TableEntry,
    TablePage,
    decode_page_token,
    encode_page_token,
    table_entry,
)
from coordinator.usecases.table_schema_rules import build_schema, check_supported
from coordinator.usecases.table_stats import stats_on_storage
from coordinator_client.models import CreateTableRequest
from paimon_format.schema import TableSchema


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

    def cached(self, table_id: str) -> Table:
        """The table as this process last saw it, without asking the database when it is cached.

        Only for callers that check the version again before it matters: a commit re-reads the table's
        row under its lock (Committer._decide) and resolves its committable again when the version moved.

        Raises:
            TableNotFound: not cached, and no such table.
        """
        return self._cache.get(table_id) or self._load(table_id)

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
        scope: TableScope | None = None,
    ) -> TablePage:
        """One page of tables in (database, name) order, from the database alone (sizes included); of
        the tables inside `scope` only, if given.

        Raises:
            InvalidRequest: a page token this service did not give out.
        """
        after = decode_page_token(page_token) if page_token else None
        with self._engine.connect() as conn:
            rows = repo.list_tables(
                conn, limit=limit + 1, after=after, database=database, name_prefix=name_prefix, scope=scope
            )
        entries = [table_entry(r) for r in rows[:limit]]
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
        return table_entry(row)

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
        # A schema file is what makes a folder a table: not the names of whatever else is listed there
        # (directory entries an object store keeps after a purge, a writer's temporary file).
        if latest_schema_id(self._fileio, layout) is not None:
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
                refuse_purge(conn, row, self._root)
            if not repo.delete_table(conn, table_id):
                raise TableNotFound(f"table {table_id} does not exist")
            drop = table_event(table_id, row.uuid, "table-drop", self._clock.now(), {"purge": purge})
            insert_events(conn, [drop])
        with self._lock:
            self._cache.pop(table_id, None)
        if purge:
            self._fileio.delete_tree(row.location)

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
        check_supported(schema, field="location")
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
            clash = overlapping_owner(conn, key)
        if clash is not None:
            raise LocationInUse(in_use(location, key, clash), field=field)

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
                # Both doors see one catalog: a table's database exists once the table does.
                insert_database(conn, request.database, {}, now=self._clock.now())
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
                details = {"origin": origin, "schemaId": schema.id, "latestSnapshotId": latest}
                created = table_event(table_id, table_uuid, "table-create", self._clock.now(), details)
                insert_events(conn, [created])
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
            clash = overlapping_owner(conn, key, excluding=table_id)
        if clash is not None:
            with self._engine.begin() as conn:
                repo.delete_table(conn, table_id)
                # Its create event was visible: the consumer learns it went again.
                gone = {"purge": False, "locationInUse": True}
                dropped = table_event(table_id, table_uuid, "table-drop", self._clock.now(), gone)
                insert_events(conn, [dropped])
            raise LocationInUse(in_use(location, key, clash), field=field)
        return self.get(table_id)

    def _table(
        self, table_id: str, database: str, name: str, table_uuid: str, location: str, schema_json: str
    ) -> Table:
        shape = TableShape.of(TableSchema.from_json(schema_json))
        return Table(table_id, database, name, table_uuid, location, shape, TableLayout(location))
