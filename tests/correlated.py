"""A correlated, skewed table and the conjunctions asked of it, shared by the column-group
tests (``tests/query/test_column_groups.py``) and their benchmark
(``bench/column_groups.py``): ``region`` 55/30/10/5 %, ``tier`` always ``gold`` where
``region`` is ``eu``, a Zipf-skewed ``k`` of up to 40 values."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa

REGIONS = ["eu", "us", "asia", "af"]
TIERS = ["gold", "silver", "bronze"]


def correlated(rng: np.random.Generator, n: int) -> pa.Table:
    """``n`` rows of ``region``, ``tier`` and ``k``."""
    region = rng.choice(REGIONS, n, p=[0.55, 0.30, 0.10, 0.05])
    tier = np.where(region == "eu", "gold", rng.choice(TIERS, n, p=[0.2, 0.3, 0.5]))
    k = (rng.zipf(1.4, n) % 40).astype(np.int64)
    return pa.table({"region": region, "tier": tier, "k": k})


def conjunctions() -> list[str]:
    """Equalities, IN lists and ``<>`` over two and three of the columns (29 of them)."""
    out = [f"region = '{r}' AND tier = '{t}'" for r, t in itertools.product(REGIONS, TIERS)]
    out += [f"region IN ('us', 'af') AND tier = '{t}'" for t in TIERS]
    out += [f"region = '{r}' AND tier = 'gold' AND k = {k}" for r in REGIONS for k in (0, 1, 3)]
    out += ["tier = 'gold' AND region IN ('eu', 'asia')", "region = 'eu' AND k = 2",
            "region = 'eu' AND tier <> 'gold'", "region <> 'eu' AND tier = 'gold' AND k < 3"]
    return out


def q_error(estimate: float, true: int) -> float:
    """max(estimate/true, true/estimate), both at least one row."""
    a, b = max(estimate, 1.0), max(float(true), 1.0)
    return max(a, b) / min(a, b)
