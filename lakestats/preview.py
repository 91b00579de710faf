"""Readable previews of statistics in the terminal (rich tables).

Estimates are marked where a person reads them, exact values are not: an HLL distinct count
reads ``≈152,099 ±2.4 %`` (half the stored 2-sigma bounds' spread, relative to the estimate),
a KLL median ``≈42 ±1.7 % rank``, a re-binned table histogram ``≈`` before its sparkline, and
frequencies that are only lower bounds ``≥``. The flags are the stored ones
(``distinct_count_exact``, ``percentiles_exact``, ``histogram_exact``, ``frequencies_exact``):
only an explicit ``False`` marks a value (partition statistics are exact).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

ESTIMATE = "≈"


def _fmt(value: object, width: int = 24) -> str:
    if value is None:
        return ""
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else _fmt(value)


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


def histogram_cell(row: dict[str, object], counts: list[int]) -> str:
    line = sparkline(counts)
    return f"{ESTIMATE} {line}" if line and row.get("histogram_exact") is False else line


def render_statistics(
    rows: list[dict[str, object]],
    title: str = "",
    top: dict[str, list[tuple[object, int]]] | None = None,
    histograms: dict[str, list[int]] | None = None,
    console: Console | None = None,
) -> None:
    """One line per column: type, nulls, distinct, min, max, mean, median, top values,
    histogram; estimates marked ``≈`` (see the module docstring)."""
    console = console or Console()
    view = Table(title=escape(title), show_lines=False)
    widths = {
        "column": (8, 16),
        "type": (6, 14),
        "nulls": (5, 11),
        "distinct": (8, 18),
        "min": (6, 14),
        "max": (6, 14),
        "mean": (8, 10),
        "median": (6, 26),
    }
    for header, (least, most) in widths.items():
        view.add_column(
            header,
            no_wrap=True,
            overflow="ellipsis",
            min_width=least,
            max_width=most,
            justify="right" if header in ("nulls", "distinct") else "left",
        )
    if top is not None:
        view.add_column("top values", no_wrap=True, overflow="ellipsis", max_width=34)
    if histograms is not None:
        view.add_column("histogram", no_wrap=True, min_width=20)
    for row in rows:
        cells = [
            _fmt(row["name"]),
            _fmt(row["type"], 18),
            _count(row.get("null_count")),
            distinct_cell(row),
            _fmt(row.get("min")),
            _fmt(row.get("max")),
            _fmt(row.get("mean")),
            percentile_cell(row),
        ]
        if top is not None:
            cells.append(top_cell(row, top.get(str(row["name"]), [])))
        if histograms is not None:
            cells.append(histogram_cell(row, histograms.get(str(row["name"]), [])))
        view.add_row(*(escape(c) for c in cells))
    console.print(view)


def sparkline(counts: list[int], width: int = 20) -> str:
    """A tiny text histogram: counts regrouped into ``width`` bars."""
    if not counts:
        return ""
    bars = " ▁▂▃▄▅▆▇█"
    step = max(1, -(-len(counts) // width))
    grouped = [sum(counts[i : i + step]) for i in range(0, len(counts), step)]
    peak = max(grouped) or 1
    return "".join(bars[min(8, round(8 * g / peak))] for g in grouped)
