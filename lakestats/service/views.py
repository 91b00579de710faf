"""What the pages show, computed from the answers: formatted cells and SVG bars.

Pure functions over statistics rows (``answers.column_json``), histogram bins and
frequency pairs, so the templates only lay things out. Long values are shortened for display
(the full value is in the cell's ``title``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakestats.answers import Bin, jsonable
from lakestats.display import size  # noqa: F401 - the templates' byte sizes (views.size)

CELL_CHARS = 32
SPARK_BARS = 40


def short(value: object, limit: int = CELL_CHARS) -> str:
    """A JSON value as display text, cut at ``limit`` characters."""
    value = jsonable(value)
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def full(value: object) -> str:
    value = jsonable(value)
    return "" if value is None else str(value)


@dataclass
class Distinct:
    text: str
    estimated: bool
    title: str
    share: str = ""
    """Distinct values as a share of the non-null values (``42.0 %``)."""


def distinct(row: Mapping[str, Any]) -> Distinct:
    """The distinct count, marked ``≈`` with its bounds when it is an estimate."""
    count = row.get("distinct_count")
    if count is None:
        return Distinct("", False, "")
    values = (row.get("row_count") or 0) - (row.get("null_count") or 0)
    share = f"{100 * min(1.0, count / values):.1f} %" if values > 0 else ""
    if row.get("distinct_count_exact") is False:
        lower, upper = row.get("distinct_count_lower"), row.get("distinct_count_upper")
        title = f"estimated: between {short(lower)} and {short(upper)}"
        return Distinct(f"≈{short(count)}", True, title, share)
    return Distinct(short(count), False, "exact", share)


def null_share(row: Mapping[str, Any]) -> float:
    rows = row.get("row_count") or 0
    return (row.get("null_count") or 0) / rows if rows else 0.0


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str
    start: int
    stop: int
    count: int = 0
    """The rows of the bar's bins (what its tooltip says)."""


def bars(
    bins: Sequence[Bin],
    width: float,
    height: float,
    max_bars: int,
    first_bin: int = 0,
) -> list[Bar]:
    """Histogram bins as SVG rectangles, neighbouring bins summed down to ``max_bars``;
    each bar knows its bin range ``[start, stop)`` (for zooming) and its tooltip."""
    if not bins:
        return []
    group = -(-len(bins) // max_bars)
    merged = []
    for i in range(0, len(bins), group):
        chunk = bins[i : i + group]
        merged.append((i, i + len(chunk), chunk[0].lower, chunk[-1].upper,
                       sum(b.count for b in chunk)))
    peak = max(m[4] for m in merged) or 1
    step = width / len(merged)
    out = []
    for n, (i, j, lower, upper, count) in enumerate(merged):
        h = height * count / peak
        out.append(
            Bar(
                x=round(n * step, 2),
                y=round(height - h, 2),
                width=round(max(step - 0.5, 0.5), 2),
                height=round(h, 2),
                title=f"[{full(lower)}, {full(upper)}): {count:,}",
                start=first_bin + i,
                stop=first_bin + j,
                count=count,
            )
        )
    return out


def top_values(pairs: Sequence[tuple[object, int]]) -> list[tuple[str, str, str]]:
    """``(short value, full value, count)`` for display."""
    return [(short(value, 20), full(value), short(count)) for value, count in pairs]


def log_bars(bars_: list[Bar], height: float) -> list[Bar]:
    """The same bars on a log scale (``log(1 + count)``): a skewed column's histogram is
    one spike on a linear scale, and every bin shows on this one."""
    import math

    peak = math.log1p(max((b.count for b in bars_), default=0)) or 1.0
    out = []
    for bar in bars_:
        h = height * math.log1p(bar.count) / peak
        out.append(Bar(bar.x, round(height - h, 2), bar.width, round(h, 2), bar.title,
                       bar.start, bar.stop, bar.count))
    return out


@dataclass
class PartitionBar:
    x: float
    y: float
    width: float
    height: float
    name: str
    """The first partition of the bar (the one its link opens)."""
    label: str
    rows: int


def partition_bars(
    partitions: list[tuple[str, int]], width: float, height: float, max_bars: int
) -> list[PartitionBar]:
    """Rows per partition as SVG bars, in the version's (key) order: a timeline when the
    key is temporal. Beyond ``max_bars`` partitions, neighbours share a bar (its label
    names the first and last)."""
    if not partitions:
        return []
    group = -(-len(partitions) // max_bars)
    merged = []
    for i in range(0, len(partitions), group):
        chunk = partitions[i : i + group]
        label = chunk[0][0] if len(chunk) == 1 else f"{chunk[0][0]} … {chunk[-1][0]}"
        merged.append((chunk[0][0], label or "(unpartitioned)", sum(n for _, n in chunk)))
    peak = max(m[2] for m in merged) or 1
    step = width / len(merged)
    out = []
    for n, (name, label, rows) in enumerate(merged):
        h = height * rows / peak
        out.append(PartitionBar(round(n * step, 2), round(height - h, 2),
                                round(max(step - 0.5, 0.5), 2), round(h, 2), name, label, rows))
    return out


def heat(values: list[object]) -> list[float]:
    """Each value's place between the smallest and the largest of ``values`` (0 to 1;
    0 for non-numbers): the shade of a heat-map cell, so drift across partitions shows."""
    numbers = [
        float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
        for v in values
    ]
    known = [v for v in numbers if v is not None and v == v]
    if not known:
        return [0.0] * len(values)
    low, high = min(known), max(known)
    span = high - low
    return [
        0.0 if v is None or v != v or span == 0 else round((v - low) / span, 3) for v in numbers
    ]
