"""The JSON API under ``/api``: each route calls the table handle (``LakestatsTable``,
memoized lookups through ``TableSet``) and answers the answer's ``to_json()``.

Answers carry an ``ETag`` from the table, its statistics version and snapshot, and honour
``If-None-Match`` (304). Values follow the CLI's ``--json`` conventions (``jsonio``).
Answers about one table are rendered once per statistics version and request
(``TableSet.cached``), except those that name an ``as_of`` time (which snapshot that is
moves with the table). With tokens configured, ``access.Access`` has admitted the request
before it gets here; what a table's routes answer about its sensitive columns is
``sensitive.GuardedTable``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request, Response, Security
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from lakestats.answers import DerivedStatistics, ServedTable
from lakestats.errors import StatisticsNotFoundError
from lakestats.service.access import granted
from lakestats.service.errors import ERROR_SCHEMA
from lakestats.service.jsonio import answer, cached_answer, etag, rendered
from lakestats.service.params import check_columns, column_list, snapshot_of
from lakestats.service.sensitive import MARK, GuardedTable

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {
        "description": text,
        "content": {"application/json": {"schema": ERROR_SCHEMA}},
    }
    for status, text in [
        (400, "bad parameter, predicate or value"),
        (401, "no valid token (when the service has tokens configured)"),
        (403, "no grant for the table, or a sensitive column's values asked for"),
        (404, "unknown table, column, partition, or no statistics"),
    ]
}
# documents the header (Swagger UI's Authorize); ``access.Access`` checks it, before routing
BEARER = HTTPBearer(
    auto_error=False,
    description="`Authorization: Bearer <token>`, when the service has tokens configured",
)
router = APIRouter(prefix="/api", responses=ERRORS, dependencies=[Security(BEARER)])

TableName = Annotated[str, Path(description="a served table's name (see /api/tables)")]
ColumnName = Annotated[
    str, Path(description="a column name (struct leaves: a.b); may hold /, sent as is or %2F")
]
Columns = Annotated[str | None, Query(description="comma-separated column names")]
Partition = Annotated[
    str | None, Query(description="k=v[,k2=v2]; omit for table level", max_length=4096)
]
Snapshot = Annotated[int | None, Query(description="table snapshot id (default: current)")]
AsOf = Annotated[
    str | None,
    Query(description="the snapshot current at this time (ISO-8601 or epoch ms)", max_length=64),
]
Where = Annotated[str, Query(description="SQL boolean expression", max_length=65536)]
Computed = tuple[object, str]  # an answer's data and its ETag


def _answer(
    request: Request, table: str, compute: Callable[[GuardedTable], Computed]
) -> Response:
    """``compute(handle)``'s data and ETag as a response, rendered once per statistics
    version and request."""
    tables = request.app.state.tables
    if "as_of" in request.query_params:
        data, tag = compute(tables.get(table))
        return answer(request, data, tag)
    key = (request.scope["path"], request.scope["query_string"])
    return cached_answer(request, tables.cached(table, key, lambda h: rendered(*compute(h))))


@router.get("/tables", summary="served tables")
def list_tables(request: Request) -> Response:
    tables = request.app.state.tables
    served = [tables.served(name) for name in granted(request, tables.names())]
    versions = [(t.name, t.summary.version if t.summary else None) for t in served]
    return answer(request, [t.to_json() for t in served], etag("tables", *versions))


@router.get("/tables/{table}", summary="a table: version, snapshot, partitions, columns")
def table_info(request: Request, table: TableName) -> Response:
    tables = request.app.state.tables
    handle = tables.get(table)
    summary = handle.summary()
    data = ServedTable(table, summary, columns=summary.columns).to_json()
    for column in data["columns"]:  # type: ignore[attr-defined]
        if handle.sensitivity.covers(column["name"]):
            column[MARK] = True
    return answer(request, data, etag(table, summary.version, summary.snapshot_id))


@router.get("/tables/{table}/versions", summary="statistics versions, oldest first")
def versions(request: Request, table: TableName) -> Response:
    history = request.app.state.tables.get(table).history()
    tag = etag(table, "versions", [v.version for v in history])
    return answer(request, history.to_json(), tag)


@router.get("/tables/{table}/partitions", summary="partitions with statistics")
def partitions(request: Request, table: TableName) -> Response:

    def compute(handle: GuardedTable) -> Computed:
        found = handle.partitions()
        return found.to_json(), etag(table, found.version, "partitions")

    return _answer(request, table, compute)


@router.get("/tables/{table}/statistics", summary="statistics of the table or one partition")
def statistics(
    request: Request,
    table: TableName,
    columns: Columns = None,
    partition: Partition = None,
    snapshot: Snapshot = None,
    as_of: AsOf = None,
) -> Response:
    """As ``lakestats show --json``: table level (with ``stale``) unless ``partition``."""
    tables = request.app.state.tables
    names = column_list(columns)

    def compute(handle: GuardedTable) -> Computed:
        check_columns(handle, names)
        snapshot_id = snapshot_of(handle, snapshot, as_of)
        if not partition:
            level = tables.table_statistics(table, snapshot_id, names)
            return level.to_json(), etag(
                table, level.version, level.staleness.snapshot_id, names
            )
        found = handle.partition_statistics(partition, names)
        return found.to_json(), etag(table, found.version, found.name, names)

    return _answer(request, table, compute)


@router.get("/tables/{table}/profile", summary="the table at a glance, with its alerts")
def profile(
    request: Request, table: TableName, snapshot: Snapshot = None, as_of: AsOf = None
) -> Response:
    """As ``lakestats profile --json``: size, freshness, exact figures and alerts."""
    tables = request.app.state.tables

    def compute(handle: GuardedTable) -> Computed:
        snapshot_id = snapshot_of(handle, snapshot, as_of)
        found = tables.profile(table, snapshot_id)
        return found.to_json(), etag(table, found.version, found.staleness.snapshot_id, "p")

    return _answer(request, table, compute)


@router.get("/tables/{table}/stats", summary="some columns, table and every partition (batched)")
def stats(
    request: Request,
    table: TableName,
    columns: Annotated[str, Query(description="comma-separated column names")],
    where: Annotated[
        str | None, Query(description="partition filter (= / IN on partition columns)")
    ] = None,
    by_partition: bool = True,
    snapshot: Snapshot = None,
    as_of: AsOf = None,
) -> Response:
    """As ``lakestats stats --json`` (``by_partition`` defaults to true here)."""
    names = column_list(columns)
    assert names is not None  # a required parameter: a list, or a 400 saying it is empty

    def compute(handle: GuardedTable) -> Computed:
        snapshot_id = snapshot_of(handle, snapshot, as_of)
        found = handle.stats(
            names, where=where, by_partition=by_partition, snapshot_id=snapshot_id
        )
        return found.to_json(), etag(table, found.version, found.snapshot_id, request.url.query)

    return _answer(request, table, compute)


@router.get(
    "/tables/{table}/columns/{column:path}/frequencies", summary="top-k value frequencies"
)
def frequencies(
    request: Request,
    table: TableName,
    column: ColumnName,
    partition: Partition = None,
    top: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
) -> Response:

    def compute(handle: GuardedTable) -> Computed:
        found = handle.frequencies(column, partition, top)
        return found.to_json(), etag(table, found.version, column, partition, top)

    return _answer(request, table, compute)


@router.get(
    "/tables/{table}/columns/{column:path}/histogram", summary="histogram bins [start, stop)"
)
def histogram(
    request: Request,
    table: TableName,
    column: ColumnName,
    partition: Partition = None,
    start: Annotated[int, Query(ge=0, le=2**31)] = 0,
    stop: Annotated[int | None, Query(ge=0, le=2**31)] = None,
) -> Response:

    def compute(handle: GuardedTable) -> Computed:
        found = handle.histogram(column, partition, start, stop)
        return found.to_json(), etag(table, found.version, column, partition, start, stop)

    return _answer(request, table, compute)


@router.get(
    "/tables/{table}/columns/{column:path}/partitions-containing",
    summary="partitions that hold a value (table-level frequencies)",
)
def partitions_containing(
    request: Request,
    table: TableName,
    column: ColumnName,
    value: Annotated[str, Query(description="the value, as text", max_length=65536)],
) -> Response:

    def compute(handle: GuardedTable) -> Computed:
        holders = handle.partitions_containing(column, value)
        return holders.to_json(), etag(table, holders.version, column, value)

    return _answer(request, table, compute)


@router.get("/tables/{table}/estimate", summary="rows a predicate keeps, with sound bounds")
def estimate(
    request: Request,
    table: TableName,
    where: Where,
    table_level: bool = False,
    snapshot: Snapshot = None,
    as_of: AsOf = None,
) -> Response:
    """As ``lakestats estimate --json``."""

    def compute(handle: GuardedTable) -> Computed:
        snapshot_id = snapshot_of(handle, snapshot, as_of)
        found = handle.estimate(where, snapshot_id, table_level=table_level)
        return found.to_json(), etag(table, found.version, found.snapshot_id, where, table_level)

    return _answer(request, table, compute)


@router.get(
    "/tables/{table}/group-distinct",
    summary="distinct value combinations of some columns, with sound bounds",
)
def group_distinct(
    request: Request,
    table: TableName,
    columns: Annotated[
        str, Query(description="two or more comma-separated column names", max_length=65536)
    ],
    snapshot: Snapshot = None,
    as_of: AsOf = None,
) -> Response:
    """As ``lakestats estimate --group-by a,b --json``: from a column group that holds the
    columns (``analyze --column-groups``), else bounded by their own distinct counts."""
    names = [c.strip() for c in columns.split(",") if c.strip()]

    def compute(handle: GuardedTable) -> Computed:
        snapshot_id = snapshot_of(handle, snapshot, as_of)
        found = handle.group_distinct(names, snapshot_id)
        return found.to_json(), etag(table, found.version, found.snapshot_id, *names)

    return _answer(request, table, compute)


MAX_BATCH = 1000
"""Predicates one ``POST /estimate`` may ask about."""
MAX_BODY_WHERE = 16 * 1024 * 1024
"""Characters of one predicate in a ``POST /estimate`` body: an IN list of a million
values (a URL holds 64 KiB, so a long list is sent in the body)."""


class EstimateRequest(BaseModel):
    """``POST /tables/{table}/estimate``'s body: predicates estimated against one
    statistics version (``LakestatsTable.estimate_many``)."""

    model_config = ConfigDict(extra="forbid")
    where: list[Annotated[str, Field(min_length=1, max_length=MAX_BODY_WHERE)]] = Field(
        min_length=1, max_length=MAX_BATCH, description="SQL boolean expressions"
    )
    snapshot_id: int | None = Field(None, description="table snapshot id (default: current)")
    table_level: bool = Field(False, description="estimate from the table-level files only")
    by_partition: bool = Field(True, description="each matching partition's estimate too")


@router.post(
    "/tables/{table}/estimate", summary="rows each of several predicates keeps (a batch)"
)
def estimate_batch(
    request: Request, table: TableName, body: Annotated[EstimateRequest, Body()]
) -> Response:
    """``LakestatsTable.estimate_many``: ``{"estimates": [...], "version", "snapshot_id"}``,
    each estimate as ``GET /estimate`` answers it, in the order asked."""
    return estimate_many_answer(request, table, body)


def estimate_many_answer(request: Request, table: str, body: EstimateRequest) -> Response:
    """The batch estimate of ``body`` on ``table``, rendered once per version and body."""
    tables = request.app.state.tables
    wheres = tuple(body.where)

    def compute(handle: GuardedTable) -> Computed:
        found = handle.estimate_many(wheres, body.snapshot_id, table_level=body.table_level)
        tag = etag(table, found.version, found.snapshot_id, "batch", wheres, body.table_level,
                   body.by_partition)
        return found.to_json() if body.by_partition else found.totals_json(), tag

    key = ("estimate-batch", wheres, body.snapshot_id, body.table_level, body.by_partition)
    return cached_answer(request, tables.cached(table, key, lambda h: rendered(*compute(h))))


@router.get(
    "/tables/{table}/predicate-statistics",
    summary="statistics of the rows a predicate keeps (a derived entry), if computed",
)
def predicate_statistics(
    request: Request,
    table: TableName,
    where: Where,
    snapshot: Snapshot = None,
    as_of: AsOf = None,
) -> Response:
    """A derived entry computed by ``lakestats analyze TABLE --where PRED``; 404 saying so
    when there is none (the service never starts Spark)."""
    tables = request.app.state.tables

    def compute(handle: GuardedTable) -> Computed:
        snapshot_id = snapshot_of(handle, snapshot, as_of)
        names = handle.derived_columns(where, snapshot_id)  # a bad predicate: 400, not 404
        if names is None:
            quoted = where.replace('"', '\\"')
            raise StatisticsNotFoundError(
                f"no statistics computed for {where!r}; compute them with "
                f'`lakestats analyze {tables.configs[table].table} --where "{quoted}"` '
                "(this service never starts Spark)"
            )
        found = handle.stats(names, where=where, by_partition=False, snapshot_id=snapshot_id)
        data = DerivedStatistics(found, found.version).to_json()
        return data, etag(table, found.version, where, snapshot_id)

    return _answer(request, table, compute)
