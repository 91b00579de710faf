"""A planner's questions, the table named by its location as the engine knows it (``file:/t``,
``s3a://b/t``) rather than by its served name: ``POST /api/estimate`` (rows predicates keep)
and ``POST /api/group-distinct`` (distinct combinations of grouping columns), what lakestats'
Spark component asks for a Filter or an aggregate over a scan. The location is matched
against the served tables' own (``TableSet.named_at``): a 404 when none is there, a 403 when
the token has no grant for it; the answers are the named routes'."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request, Response, Security
from pydantic import BaseModel, ConfigDict, Field

from lakestats.errors import PermissionDeniedError
from lakestats.service.access import granted
from lakestats.service.api_routes import (
    BEARER,
    ERRORS,
    Computed,
    EstimateRequest,
    estimate_many_answer,
)
from lakestats.service.jsonio import cached_answer, etag, rendered
from lakestats.service.sensitive import GuardedTable

router = APIRouter(prefix="/api", responses=ERRORS, dependencies=[Security(BEARER)])


def _named_at(request: Request, location: str) -> str:
    table: str = request.app.state.tables.named_at(location)
    if not granted(request, [table]):
        raise PermissionDeniedError(f"this token has no grant for table {table!r}")
    return table


class LocatedEstimateRequest(EstimateRequest):
    """``POST /estimate``'s body: the table named by its location, as a planner knows it."""

    location: str = Field(
        min_length=1, max_length=4096, description="the table's location (a path or URI)"
    )
    by_partition: bool = Field(
        False, description="each matching partition's estimate too (a planner needs the totals)"
    )


@router.post(
    "/estimate", summary="rows predicates keep in the served table at a location (a planner's)"
)
def estimate_at(request: Request, body: Annotated[LocatedEstimateRequest, Body()]) -> Response:
    """``POST /tables/{table}/estimate`` for the served table whose location this is: what
    lakestats' Spark component asks for a Filter over a scan (404 when no served table is
    there, 403 without a grant for it)."""
    return estimate_many_answer(request, _named_at(request, body.location), body)


class LocatedGroupRequest(BaseModel):
    """``POST /group-distinct``'s body: the table named by its location, as a planner knows
    it (an aggregate's grouping columns)."""

    model_config = ConfigDict(extra="forbid")
    location: str = Field(
        min_length=1, max_length=4096, description="the table's location (a path or URI)"
    )
    columns: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        min_length=2, max_length=64, description="two or more column names"
    )
    snapshot_id: int | None = Field(None, description="table snapshot id (default: current)")


@router.post(
    "/group-distinct",
    summary="distinct value combinations in the served table at a location (a planner's)",
)
def group_distinct_at(
    request: Request, body: Annotated[LocatedGroupRequest, Body()]
) -> Response:
    """``GET /tables/{table}/group-distinct`` for the served table whose location this is:
    what lakestats' Spark component asks for an aggregate over a scan."""
    tables = request.app.state.tables
    table = _named_at(request, body.location)
    names = tuple(body.columns)

    def compute(handle: GuardedTable) -> Computed:
        found = handle.group_distinct(list(names), body.snapshot_id)
        return found.to_json(), etag(table, found.version, found.snapshot_id, *names)

    key = ("group-distinct", names, body.snapshot_id)
    return cached_answer(request, tables.cached(table, key, lambda h: rendered(*compute(h))))
