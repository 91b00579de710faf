"""Readable previews of statistics in the terminal (rich tables).

Estimates are marked where a person reads them, exact values are not: an HLL distinct count
reads ``≈152,099 ±2.4 %`` (half the stored 2-sigma bounds' spread, relative to the estimate),
a KLL median ``≈42 ±1.7 % rank``, a re-binned table histogram ``≈`` before its sparkline, and
frequencies that are only lower bounds ``≥``. The flags are the stored ones
(``distinct_count_exact``, ``percentiles_exact``, ``histogram_exact``, ``frequencies_exact``):
only an explicit ``False`` marks a value (partition statistics are exact).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lakestats.display import count, cut, number, size

if TYPE_CHECKING:
    from lakestats.answers import TableProfile

ESTIMATE = "≈"


def _fmt(value: object, width: int = 24) -> str:
    return cut(number(value), width)


def _count(value: object) -> str:
    return count(value)


def type_cell(row: dict[str, object]) -> str:
    """The table's own type beside the Arrow type (``timestamptz (timestamp[us, tz=UTC])``),
    or the Arrow type alone where they read the same or the table's is unknown."""
    arrow, native = str(row["type"]), row.get("table_type")
    if not native or str(native).lower() == arrow.lower():
        return arrow
    return f"{native} ({arrow})"


def distinct_cell(row: dict[str, object]) -> str:
    """The distinct count; an estimate as ``≈n ±p %`` from its stored bounds."""
    count = row.get("distinct_count")
    if count is None or row.get("distinct_count_exact") is not False:
        return _count(count)
    lower, upper = row.get("distinct_count_lower"), row.get("distinct_count_upper")
    if lower is None or upper is None or not count:
        return f"{ESTIMATE}{count:,}"
    spread = max(upper - count, count - lower) / count * 100
    return f"{ESTIMATE}{count:,} ±{spread:.1f} %"


def percentile_cell(row: dict[str, object], name: str = "p50") -> str:
    """A percentile; one from the KLL sketch as ``≈v ±r % rank`` (its rank error)."""
    value = row.get(name)
    if value is None or row.get("percentiles_exact") is not False:
        return _fmt(value, 14)
    error = row.get("percentile_rank_error")
    rank = f" ±{float(error) * 100:.1f} % rank" if error is not None else ""
    return f"{ESTIMATE}{_fmt(value, 12)}{rank}"


def top_cell(row: dict[str, object], values: list[tuple[object, int]]) -> str:
    """The most frequent values; counts that are lower bounds as ``≥n``."""
    bound = "≥" if row.get("frequencies_exact") is False else ""
    text = ", ".join(f"{_fmt(v, 12)} ({bound}{f:,})" for v, f in values)
    return text or ("all distinct" if row.get("all_distinct") else "")


def histogram_cell(row: dict[str, object], counts: list[int], width: int = 20) -> str:
    line = sparkline(counts, width)
    return f"{ESTIMATE} {line}" if line and row.get("histogram_exact") is False else line


@dataclass(frozen=True)
class TextColumn:
    """A column of a text table: at least ``least`` characters (a value is never cut
    shorter), at most ``most``; ``rank`` orders what stays when the terminal is narrow
    (0 stays always)."""

    header: str
    least: int
    most: int
    rank: int
    right: bool = False


GAP = 2
"""Characters between two columns of a text table."""


def fitted(columns: list[TextColumn], rows: list[list[str]], width: int) -> dict[int, int]:
    """Which columns show, and how wide: each as wide as its widest cell (within its
    ``least``..``most``); columns of the highest ``rank`` dropped while even their least
    widths do not fit ``width``; then the widest shrunk, never below ``least``, until the
    table fits. Returns {column position: width}."""
    wanted = {
        i: min(c.most, max(c.least, len(c.header), *(len(r[i]) for r in rows)))
        for i, c in enumerate(columns)
    }
    kept = sorted(wanted, key=lambda i: columns[i].rank)

    def least(i: int) -> int:
        return max(columns[i].least, min(len(columns[i].header), wanted[i]))

    while len(kept) > 1 and sum(least(i) for i in kept) + GAP * (len(kept) - 1) > width:
        kept.pop()
    widths = {i: wanted[i] for i in sorted(kept)}
    excess = sum(widths.values()) + GAP * (len(widths) - 1) - width
    while excess > 0:
        room = {i: w - least(i) for i, w in widths.items() if w > least(i)}
        if not room:
            break
        widest = max(room, key=lambda i: (widths[i], -i))
        cut_by = min(excess, room[widest], max(1, widths[widest] - max(
            (w for j, w in widths.items() if j != widest), default=0)))
        widths[widest] -= cut_by
        excess -= cut_by
    return widths


def text_table(
    columns: list[TextColumn],
    rows: list[list[str]],
    title: str = "",
    console: Console | None = None,
) -> None:
    """``rows`` as a table that fits the console (80 columns in a pipe): columns dropped
    by rank when they do not fit, values cut with ``…`` at their column's width, never to
    nothing."""
    console = console or Console()
    widths = fitted(columns, rows, console.width)
    view = Table(
        title=escape(title) if title else None,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, GAP // 2),
        title_justify="left",
        collapse_padding=True,
    )
    for i, w in widths.items():
        c = columns[i]
        view.add_column(
            cut(c.header, w),
            no_wrap=True,
            overflow="ellipsis",
            width=w,
            justify="right" if c.right else "left",
        )
    for row in rows:
        view.add_row(*(escape(cut(row[i], widths[i])) for i in widths))
    dropped = [c.header for i, c in enumerate(columns) if i not in widths]
    console.print(view)
    if dropped:
        console.print(
            escape(f"({', '.join(dropped)} left out at {console.width} columns; --json has all)"),
            style="dim",
        )


STATISTICS_COLUMNS = [
    TextColumn("column", 16, 32, 0),
    TextColumn("type", 8, 40, 6),
    TextColumn("nulls", 5, 11, 1, right=True),
    TextColumn("distinct", 8, 18, 2, right=True),
    TextColumn("min", 10, 20, 3),
    TextColumn("max", 10, 20, 3),
    TextColumn("mean", 8, 12, 5),
    TextColumn("median", 8, 26, 7),
]
TOP_COLUMN = TextColumn("top values", 12, 34, 8)
HISTOGRAM_COLUMN = TextColumn("histogram", 12, 22, 4)


def render_statistics(
    rows: list[dict[str, object]],
    title: str = "",
    top: dict[str, list[tuple[object, int]]] | None = None,
    histograms: dict[str, list[int]] | None = None,
    console: Console | None = None,
) -> None:
    """One line per column: type, nulls, distinct, min, max, mean, median, top values,
    histogram; estimates marked ``≈`` (see the module docstring); columns of the view
    dropped by priority to fit the terminal."""
    columns = list(STATISTICS_COLUMNS)
    if top is not None:
        columns.append(TOP_COLUMN)
    if histograms is not None:
        columns.append(HISTOGRAM_COLUMN)
    cells = []
    for row in rows:
        line = [
            str(row["name"]),
            type_cell(row),
            _count(row.get("null_count")),
            distinct_cell(row),
            number(row.get("min")),
            number(row.get("max")),
            number(row.get("mean")),
            percentile_cell(row),
        ]
        if top is not None:
            line.append(top_cell(row, top.get(str(row["name"]), [])))
        if histograms is not None:
            line.append(histogram_cell(row, histograms.get(str(row["name"]), []), 20))
        cells.append(line)
    text_table(columns, cells, title, console)


def sparkline(counts: list[int], width: int = 20) -> str:
    """A tiny text histogram: counts regrouped into ``width`` bars."""
    if not counts:
        return ""
    bars = " ▁▂▃▄▅▆▇█"
    step = max(1, -(-len(counts) // width))
    grouped = [sum(counts[i : i + step]) for i in range(0, len(counts), step)]
    peak = max(grouped) or 1
    return "".join(bars[min(8, round(8 * g / peak))] for g in grouped)


ALERT_KIND_WIDTH = 16


def render_profile(
    profile: TableProfile,
    name: str,
    console: Console | None = None,
    partition_rows: list[int] | None = None,
) -> None:
    """``lakestats profile``: the overview in a few lines (with rows per partition as a
    sparkline, in the version's partition order), then one line per alert."""
    console = console or Console()
    info = profile.staleness
    share = (
        f" ({profile.statistics_bytes / profile.data_bytes:.1%} of the data)"
        if profile.data_bytes
        else ""
    )
    behind = [f"{info.snapshots_behind} snapshot(s) behind"] if info.snapshots_behind else []
    behind += [f"{info.partitions_changed} partition(s) changed"] if info.partitions_changed else []
    freshness = "stale: " + ", ".join(behind or ["the table changed"]) if info.stale else "current"
    of_snapshot = (
        f" of snapshot {info.statistics_snapshot_id}"
        if info.statistics_snapshot_id is not None
        else ""
    )
    figures = profile.exact_figures + profile.estimated_figures
    overview = [
        f"{name}: {count(profile.row_count)} rows, {profile.columns} columns, "
        f"{count(profile.partitions)} partitions",
        f"data {size(profile.data_bytes) or 'size unknown'}, statistics "
        f"{size(profile.statistics_bytes)}{share}",
        f"statistics version {profile.version}{of_snapshot}, analyzed {profile.created_at}: "
        f"{freshness}",
        f"figures: {profile.exact_figures} of {figures} exact, "
        f"{profile.estimated_figures} estimated (≈)",
    ]
    if partition_rows:
        width = max(8, min(console.width, 80) - 40)
        low, high = min(partition_rows), max(partition_rows)
        overview.append(f"rows per partition: {sparkline(partition_rows, width)} "
                        f"({count(low)} to {count(high)})")
    lines = [w for line in overview for w in textwrap.wrap(line, console.width) or [line]]
    lines.append(f"alerts: {len(profile.alerts)}" if profile.alerts else "alerts: none")
    indent = " " * (ALERT_KIND_WIDTH + 3)
    for alert in profile.alerts:
        text = f"  {alert.kind:<{ALERT_KIND_WIDTH}} {alert.column or '(table)'}: {alert.message}"
        lines += textwrap.wrap(text, console.width, subsequent_indent=indent) or [text]
    for line in lines:  # wrapped here: a pipe gets the same 80-column lines as a terminal
        console.print(escape(line), soft_wrap=True, highlight=False)
