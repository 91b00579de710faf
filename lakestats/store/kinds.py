"""The stored vocabularies, one name each: what a statistics file is (``FileKind``, the
keys of a version's ``files``/``table_files`` and of ``file_sizes``) and what a statistics
version is (``VersionKind``, a manifest's ``kind`` and a ``history`` row's).

``StrEnum``s: a member equals its string, so the manifests' JSON is byte-identical to the
plain strings written before, and a manifest read back (plain strings) compares equal.
A column's kind is ``lakestats.stats.kinds.Kind``; a task's outcome is
``lakestats.compute.outcome.TaskOutcome``; a table format's name is a key of
``lakestats.formats.FORMATS``.
"""

from __future__ import annotations

from enum import StrEnum


class FileKind(StrEnum):
    """A statistics file of a partition or of the table level."""

    STATISTICS = "statistics"
    FREQUENCIES = "frequencies"
    HISTOGRAMS = "histograms"
    VALUES = "values"  # a partition's staged value counts (analyze --exact)
    GROUPS = "groups"  # column groups' joint statistics (analyze --column-groups)


class VersionKind(StrEnum):
    """What a version (or a ``history`` row) holds."""

    FULL = "full"  # column statistics computed from the data
    NOSCAN = "noscan"  # counts from metadata; column statistics carried forward
    SAMPLED = "sampled"  # estimated from the stored sample (analyze --from-sample)
    DERIVED = "derived"  # a history row: the statistics of a predicate (analyze --where)
