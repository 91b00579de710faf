"""Where things live under a statistics root (default ``<table location>/_lakestats``).

::

    <root>/
      latest.json                         pointer to the newest published version
      versions/v00000001.json             one manifest per published version
      partitions/<partition>/<run-id>/    the three files of one partition, one analyze run
      table/<run-id>/                     the three table-level files of one analyze run
        statistics.parquet
        frequencies.parquet
        histograms.parquet
      _staging/<run-id>/                  partial states of sliced partitions (deleted after)

A partition directory is its hive-style path (``year=1992/month=3``) with each value
percent-escaped as Hive does; an unpartitioned table has one partition, ``_all``.
Files of a run are never overwritten: a version becomes visible only when its
manifest and then ``latest.json`` are written, so a failed or killed analyze leaves
unreferenced files, never a half-written result.
"""

from __future__ import annotations

from urllib.parse import quote

from lakestats import fs

STATISTICS_FILE = "statistics.parquet"
FREQUENCIES_FILE = "frequencies.parquet"
HISTOGRAMS_FILE = "histograms.parquet"
FILE_NAMES = {
    "statistics": STATISTICS_FILE,
    "frequencies": FREQUENCIES_FILE,
    "histograms": HISTOGRAMS_FILE,
}
UNPARTITIONED = "_all"
LATEST = "latest.json"
STATS_DIR_NAME = "_lakestats"


def escape(value: str) -> str:
    """Percent-escape a partition value or name the way Hive escapes path parts."""
    return quote(value, safe=" -_.~!$&'()*+,;@")


def partition_dir(key_parts: list[tuple[str, str]]) -> str:
    if not key_parts:
        return UNPARTITIONED
    return "/".join(f"{escape(name)}={escape(value)}" for name, value in key_parts)


def partition_files(partition_path: str, run_id: str) -> dict[str, str]:
    """Relative paths of the three files of one partition written by one run."""
    return {
        kind: f"partitions/{partition_path}/{run_id}/{name}" for kind, name in FILE_NAMES.items()
    }


def table_files(run_id: str) -> dict[str, str]:
    """Relative paths of the table-level files written by one run."""
    return {kind: f"table/{run_id}/{name}" for kind, name in FILE_NAMES.items()}


def version_path(version: int) -> str:
    return f"versions/v{version:08d}.json"


def staging_dir(root: str, run_id: str) -> str:
    return fs.join(root, "_staging", run_id)


def absolute(root: str, relative: str) -> str:
    return fs.join(root, *relative.split("/"))
