"""Distinct counts from a sample: estimators of the frequency of frequencies, and the rule
that picks one per column (see ``estimators.py``, ``selection.py``, ``profile.py``)."""

from lakestats.stats.ndv.estimators import (
    ESTIMATORS,
    Estimate,
    ae,
    chao,
    chao_katz,
    chao_lee,
    chao_wor,
    duj1,
    duj2,
    duj2a,
    gee,
    haas_stokes,
    hybskew,
    sh3,
    shlosser,
    smoothed_jackknife,
)
from lakestats.stats.ndv.profile import NdvInputError, Profile, frequency_of_frequencies
from lakestats.stats.ndv.selection import select_estimator

__all__ = [
    "ESTIMATORS",
    "Estimate",
    "NdvInputError",
    "Profile",
    "ae",
    "chao",
    "chao_katz",
    "chao_lee",
    "chao_wor",
    "duj1",
    "duj2",
    "duj2a",
    "frequency_of_frequencies",
    "gee",
    "haas_stokes",
    "hybskew",
    "select_estimator",
    "sh3",
    "shlosser",
    "smoothed_jackknife",
]
