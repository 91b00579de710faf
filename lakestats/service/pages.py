"""Server-rendered pages: the table list, a table's columns, one column in depth.

``/`` lists the served tables; ``/tables/{name}`` shows one row per column (type, nulls,
distinct count, min, max, mean, a histogram, top values) for the table or one partition,
100 columns per page (histograms and top values load right after, from
``/tables/{name}/cells``); ``/tables/{name}/columns/{column}`` shows the full histogram (zoom
with ``start``/``stop``), the top 100 values and every partition's min/max/nulls from the
partition index. Data comes from the table handle's answers (their fields, never their
JSON), is memoized per table version (``TableSet``; a table page's HTML too:
``TableSet.cached``), and is laid out by the Jinja2 templates in ``templates/``. Errors
render as a page with the same status the JSON API would give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, cast
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from lakestats import display
from lakestats.answers import Bin, Frequencies, Histogram, column_json, jsonable
from lakestats.errors import LakestatsError
from lakestats.service import views
from lakestats.service.access import granted
from lakestats.service.cache import Answer
from lakestats.service.errors import status_of
from lakestats.service.jsonio import LakestatsJSON
from lakestats.service.sensitive import GuardedTable
from lakestats.service.tables import TableSet

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.globals["views"] = views
templates.env.globals["path"] = lambda *segments: "/" + "/".join(
    quote(str(s), safe="") for s in segments
)
router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)

PER_PAGE = 100
TOP_ON_TABLE_PAGE = 3
TOP_ON_COLUMN_PAGE = 100
COLUMN_PAGE_BARS = 200
PARTITION_BARS = 400  # rows per partition: more partitions than this share bars


def _render(
    request: Request, template: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def _error(request: Request, exc: LakestatsError) -> HTMLResponse:
    context = {"kind": type(exc).__name__, "message": request.app.state.tables.redact(exc.message)}
    return _render(request, "error.html", context, status_of(exc))


@router.get("/")
def index(request: Request) -> HTMLResponse:
    tables: TableSet = request.app.state.tables
    rows = [tables.served(name) for name in granted(request, tables.names())]
    return _render(request, "index.html", {"tables": rows})


@router.get("/tables/{table}")
def table_page(
    request: Request,
    table: str,
    partition: Annotated[str | None, Query(max_length=4096)] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    snapshot: int | None = None,
) -> HTMLResponse:
    tables: TableSet = request.app.state.tables

    def html(handle: object) -> Answer:
        context = tables.memo(
            table,
            ("table_page", partition or None, page, snapshot),
            lambda: table_context(tables, table, partition or None, page, snapshot),
        )
        return Answer(bytes(_render(request, "table.html", context).body), "")

    try:  # rendered once per version and request, as API answers are
        key = (request.scope["path"], request.scope["query_string"])
        found = tables.cached(table, key, html)
    except LakestatsError as exc:
        return _error(request, exc)
    return HTMLResponse(found.body)


def table_context(
    tables: TableSet, name: str, partition: str | None, page: int, snapshot: int | None
) -> dict[str, object]:
    """Everything ``table.html`` shows for one page of columns, except the histogram and
    top-value cells: the page loads those from ``/tables/{name}/cells`` after its first
    paint (``static/app.js``), so the statistics show at once even on wide tables."""
    handle = tables.get(name)
    version = handle.summary()
    columns = [c.name for c in version.columns]
    pages = max(1, -(-len(columns) // PER_PAGE))
    page = min(page, pages)
    names = columns[(page - 1) * PER_PAGE : page * PER_PAGE]
    if partition is None and not version.table_level and version.partitions:
        partition = version.partitions[0] or None  # no table level: first partition
    level = None
    if version.table_level:  # how stale, read with the first column only
        first = [c.name for c in version.columns[:1]]
        level = tables.table_statistics(name, snapshot, first).staleness
    partition_bars = []
    overview_url = None
    if partition is None and version.table_level:
        overview = {"snapshot": snapshot} if snapshot is not None else {}
        overview_url = f"/tables/{quote(name, safe='')}/overview?{urlencode(overview)}"
        if len(version.partitions) > 1:
            rows_of = tables.memo(
                name,
                ("partition_rows",),
                lambda: [(p.name, p.row_count) for p in handle.partitions()],
            )
            partition_bars = views.partition_bars(rows_of, 800, 80, PARTITION_BARS)
    if partition is None:
        answer = tables.table_statistics(name, snapshot, names)
        level = answer.staleness
        rows, row_count, entry_name = answer.columns, answer.row_count, None
    else:
        found = handle.partition_statistics(partition, names)
        rows, row_count, entry_name = found.columns, found.row_count, found.name
    cells = [
        {"row": row, "distinct": views.distinct(row), "nulls": views.null_share(row)}
        for row in map(column_json, rows)
    ]
    query = {"page": page, **({"partition": entry_name} if entry_name else {})}
    if snapshot is not None and entry_name is None:
        query["snapshot"] = snapshot
    return {
        "name": name,
        "version": version,
        "level": level,
        "overview_url": overview_url,
        "partition_bars": partition_bars,
        "partition": entry_name,
        "partitions": list(version.partitions),
        "row_count": row_count,
        "cells": cells,
        "cells_url": f"/tables/{quote(name, safe='')}/cells?{urlencode(query)}",
        "page": page,
        "pages": pages,
        "columns_total": len(columns),
        "first": (page - 1) * PER_PAGE + 1,
        "snapshot": snapshot,
    }


@router.get("/tables/{table}/overview")
def table_overview(request: Request, table: str, snapshot: int | None = None) -> HTMLResponse:
    """The profile's overview and alerts as an HTML fragment, for ``app.js`` to put into
    the table page after its first paint: the profile reads every column's statistics
    (half a second on a 1,000-column table), the page's first screen does not wait."""
    tables: TableSet = request.app.state.tables
    try:
        found = tables.profile(table, snapshot)
    except LakestatsError as exc:
        return _error(request, exc)
    return _render(request, "_overview.html", {"profile": found, "name": table})


@router.get("/tables/{table}/cells")
def table_cells(
    request: Request,
    table: str,
    partition: Annotated[str | None, Query(max_length=4096)] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    snapshot: int | None = None,
) -> LakestatsJSON:
    """The histogram and top-value cells of one page of columns, as HTML fragments by
    column name (JSON), for ``app.js`` to put into the table page."""
    tables: TableSet = request.app.state.tables
    try:
        cells = tables.memo(
            table,
            ("table_cells", partition or None, page, snapshot),
            lambda: cells_of(tables, table, partition or None, page, snapshot),
        )
    except LakestatsError as exc:
        return LakestatsJSON(
            {"error": {"type": type(exc).__name__, "message": exc.message}},
            status_code=status_of(exc),
        )
    return LakestatsJSON(cells)


def cells_of(
    tables: TableSet, name: str, partition: str | None, page: int, snapshot: int | None
) -> dict[str, dict[str, str]]:
    context = cast("dict[str, Any]", tables.memo(
        name,
        ("table_page", partition, page, snapshot),
        lambda: table_context(tables, name, partition, page, snapshot),
    ))
    handle = tables.get(name)
    macros: Any = templates.env.get_template("_cells.html").module  # the template's macros
    out = {}
    for cell in context["cells"]:
        row = cell["row"]
        if row.get("sensitive"):  # no histogram or top values: they are values
            out[row["name"]] = {"hist": "", "top": '<span class="sensitive">sensitive</span>'}
            continue
        bins: tuple[Bin, ...] = ()
        if row.get("histogram_bins"):
            bins = handle.histogram(row["name"], context["partition"]).bins
        top: tuple[tuple[object, int], ...] = ()
        if not row.get("all_distinct"):
            top = handle.frequencies(row["name"], context["partition"], TOP_ON_TABLE_PAGE).pairs
        out[row["name"]] = {
            "hist": str(macros.sparkline(views.bars(bins, 120, 24, 40), row)),
            "top": str(macros.top(views.top_values(top))),
        }
    return out


@router.get("/tables/{table}/columns/{column:path}")
def column_page(
    request: Request,
    table: str,
    column: str,
    partition: Annotated[str | None, Query(max_length=4096)] = None,
    start: Annotated[int, Query(ge=0, le=2**31)] = 0,
    stop: Annotated[int | None, Query(ge=0, le=2**31)] = None,
    scale: Annotated[Literal["linear", "log"], Query()] = "linear",
    parts: Annotated[int, Query(ge=1, le=2**31)] = 1,
) -> HTMLResponse:
    tables: TableSet = request.app.state.tables
    try:
        context = column_context(
            tables, table, column, partition or None, start, stop, scale, parts
        )
    except LakestatsError as exc:
        return _error(request, exc)
    return _render(request, "column.html", context)


def column_context(
    tables: TableSet,
    name: str,
    column: str,
    partition: str | None,
    start: int,
    stop: int | None,
    scale: str = "linear",
    parts: int = 1,
) -> dict[str, object]:
    """Everything ``column.html`` shows: statistics, zoomable histogram (linear or log
    scale) with its axes, top values with their shares, and the per-partition summary
    (``stats`` over the partition index) shaded as a heat map, ``PARTITIONS_PER_PAGE``
    partitions a page (page ``parts``; shades span all partitions, so pages compare)."""
    handle = tables.get(name)
    version = handle.summary()
    entry_name = handle.partition(partition).name or None if partition else None
    if entry_name is None and not version.table_level and version.partitions:
        entry_name = version.partitions[0] or None
    [row] = [column_json(r) for r in handle.statistics(entry_name, [column])]
    histogram = None
    if row.get("histogram_bins"):
        histogram = handle.histogram(column, entry_name, start, stop)
    frequencies = None
    if not row.get("all_distinct") and not row.get("sensitive"):
        frequencies = handle.frequencies(column, entry_name, TOP_ON_COLUMN_PAGE)
    bars = []
    if histogram is not None:
        bars = views.bars(histogram.bins, 800, 200, COLUMN_PAGE_BARS, histogram.start)
        if scale == "log":
            bars = views.log_bars(bars, 200)
    per_partition = tables.memo(
        name, ("column_partitions", column), lambda: _partition_rows(handle, column)
    )
    return {
        "name": name,
        "column": column,
        "version": version,
        "partition": entry_name,
        "partitions": list(version.partitions),
        "row": row,
        "distinct": views.distinct(row),
        "nulls": views.null_share(row),
        "histogram": histogram,
        "bars": bars,
        "scale": scale,
        "axis": _axis(histogram, bars),
        "top": views.top_values(frequencies.pairs) if frequencies is not None else [],
        "top_shares": _shares(frequencies, row),
        "frequencies": frequencies,
        **_partition_page(tables, name, column, per_partition, parts),
    }


PARTITIONS_PER_PAGE = 200
"""Rows of a column page's partitions table: 10,000 partitions made a 3 MB page."""


def _partition_page(
    tables: TableSet, name: str, column: str, per_partition: list[dict[str, Any]], page: int
) -> dict[str, object]:
    """One page of the per-partition rows with their heat-map shades (computed once per
    table version over every partition, then sliced)."""
    heat = tables.memo(name, ("column_heat", column), lambda: {
        k: views.heat([p.get(k) for p in per_partition])
        for k in ("row_count", "null_share", "distinct_count", "min", "max", "mean")
    })
    pages = max(1, -(-len(per_partition) // PARTITIONS_PER_PAGE))
    page = min(page, pages)
    first = (page - 1) * PARTITIONS_PER_PAGE
    window = slice(first, first + PARTITIONS_PER_PAGE)
    return {
        "per_partition": per_partition[window],
        "heat": {k: v[window] for k, v in heat.items()},
        "parts_page": page,
        "parts_pages": pages,
        "parts_first": first + 1,
        "parts_total": len(per_partition),
    }


def _axis(histogram: Histogram | None, bars: list[views.Bar]) -> dict[str, str] | None:
    """The histogram's axes: its value range left to right, the tallest bar's count."""
    if histogram is None or not histogram.bins:
        return None
    ends = (jsonable(histogram.bins[0].lower), jsonable(histogram.bins[-1].upper))
    low, high = (views.full(e) for e in ends)
    edges = [e for e in ends if isinstance(e, float)]
    if len(edges) == 2:
        digits = display.edge_digits(edges)
        low, high = (f"{e:.{digits}g}" for e in edges)
    return {"low": low, "high": high, "peak": display.count(max(b.count for b in bars))}


def _shares(frequencies: Frequencies | None, row: dict[str, object]) -> list[str]:
    """Each top value's share of the non-null values, as the column page shows it."""
    if frequencies is None:
        return []
    values = int(row.get("row_count") or 0) - int(row.get("null_count") or 0)  # type: ignore[call-overload]
    return [f"{100 * f / values:.1f} %" if values else "" for _, f in frequencies]


def _partition_rows(handle: GuardedTable, column: str) -> list[dict[str, object]]:
    if not handle.summary().partitions:
        return []
    out: list[dict[str, object]] = []
    for part in handle.stats([column], by_partition=True).partitions or ():
        [stats] = part.columns
        # the partition's name last: the column's statistics carry the column's ``name``
        rows, nulls = part.row_count, stats.get("null_count") or 0
        out.append({**jsonable(stats), "name": part.name, "row_count": rows,  # type: ignore[dict-item]
                    "null_share": nulls / rows if rows else 0.0})
    return out
