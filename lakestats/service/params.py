"""Query parameters shared by routes: column lists, snapshots, ``as_of`` times.

Each turns request text into what the facade takes, raising ``InvalidArgumentError``
(400) with one line when it cannot.
"""

from __future__ import annotations

import lakestats.api as ls
from lakestats.errors import InvalidArgumentError
from lakestats.service.sensitive import GuardedTable


def column_list(text: str | None) -> list[str] | None:
    """``a,b`` -> ``["a", "b"]``; ``None`` stays ``None`` (all columns). A name listed
    twice is answered once (5,000 copies of one name cost 1.8 s of one worker before)."""
    if text is None:
        return None
    names = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    if not names:
        raise InvalidArgumentError("columns is empty: list column names separated by commas")
    return names


def check_columns(table: GuardedTable, names: list[str] | None) -> None:
    """Unknown columns are a 404 naming them (the facade's table level skips them)."""
    table.check_columns(names)


def snapshot_of(table: GuardedTable, snapshot: int | None, as_of: str | None) -> int | None:
    """The snapshot a request asks for: ``snapshot``, or the one current at ``as_of``."""
    if as_of is None:
        return snapshot
    if snapshot is not None:
        raise InvalidArgumentError("pass snapshot or as_of, not both")
    try:
        moment = ls.parse_as_of(as_of)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"as_of: {exc}") from None
    return table.snapshot_as_of(moment)
