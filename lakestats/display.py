"""How a figure reads to a person, one way in every face (terminal, pages, messages).

Counts carry thousands separators (``600,572``), other numbers six significant digits,
and histogram edges only as many digits as tell neighbouring edges apart (``[1.25, 1.5)``,
not ``[1.2500000000000002, 1.5)``). A histogram's last bin includes its upper edge, so it
reads ``[50, 50]``, never the empty-looking ``[50, 50)``. JSON answers keep full values;
this module only shapes text.
"""

from __future__ import annotations

import itertools
import math

MAX_DIGITS = 17
"""Significant digits that tell any two distinct float64 values apart."""


def count(value: object) -> str:
    """A count as ``600,572``; anything else as ``number`` does."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return number(value)


def number(value: object, digits: int = 6) -> str:
    """A value as text: floats with ``digits`` significant digits, ``None`` as nothing,
    anything else (integers too: a value such as a year or an id is not a count) as
    ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if math.isfinite(value) else str(value)
    return str(value)


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def edge_digits(edges: list[float]) -> int:
    """The fewest significant digits (at least 3) at which the distinct values of
    ``edges`` stay distinct and in order when rounded."""
    distinct = sorted({e for e in edges if isinstance(e, float) and math.isfinite(e)})
    for digits in range(3, MAX_DIGITS + 1):
        shown = [float(f"{e:.{digits}g}") for e in distinct]
        if all(a < b for a, b in itertools.pairwise(shown)):
            return digits
    return MAX_DIGITS


def bin_labels(bins: list[tuple[object, object]], closed_last: bool = True) -> list[str]:
    """``[lower, upper)`` per bin (its edges), edges rounded to what distinguishes them;
    ``closed_last``: the last of ``bins`` is the histogram's last, ``[lower, max]``."""
    digits = edge_digits([e for b in bins for e in b if isinstance(e, float)])
    labels = []
    for i, (lower, upper) in enumerate(bins):
        closing = "]" if closed_last and i == len(bins) - 1 else ")"
        labels.append(f"[{_edge(lower, digits)}, {_edge(upper, digits)}{closing}")
    return labels


def _edge(value: object, digits: int) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.{digits}g}"
    return "" if value is None else str(value)


def size(value: int | None) -> str:
    """Bytes as ``204.1 MB`` (decimal units, as file browsers and cloud consoles show)."""
    if value is None:
        return ""
    amount = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if amount < 1000 or unit == "TB":
            return f"{int(amount)} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{value} B"  # pragma: no cover - the loop always returns
