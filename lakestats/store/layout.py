"""Where things live under a statistics root (default ``<table location>/_lakestats``).

::

    <root>/
      latest.json                         hint: the newest version when written (never trusted)
      versions/v00000001.json             one manifest per published version
      versions/snapshots/v00000001_<snapshot id>_<snapshot time ms>
                                          empty marker: which snapshot a version describes
      partitions/<partition>/<run-id>/    the three files of one partition, one analyze run
      table/<run-id>/                     the three table-level files of one analyze run
        statistics.parquet
        frequencies.parquet
        histograms.parquet
        groups.parquet                    column groups' joint statistics (--column-groups;
                                          partitions too)
        partition_index.parquet           every partition's scalar statistics, by column
        partition_histogram_parts.parquet the parts (below) of every partition's histograms
                                          and numeric frequencies, and their partitions
        groups/<key>                      cached results of a group of partitions; ``phist-``
                                          entries are those parts, shared by later versions
      _staging/<run-id>/states/           partial states of sliced partitions (deleted after)
      _staging/<run-id>/rows/<k=v/...>/   a partition's frequency and histogram rows handed
                                          to the reduction, Arrow IPC (deleted once published)

A partition directory is its hive-style path (``year=1992/month=3``) with each value
percent-escaped (``/``, ``=`` and ``%`` always; null as ``__HIVE_DEFAULT_PARTITION__``), so
the path decodes back to the exact values; an unpartitioned table has one partition,
``_all``. Files of a run are never overwritten: a version becomes visible only when its
manifest exists (see ``manifest.py``), so a failed or killed analyze leaves unreferenced
files, never a half-written result.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from lakestats import fs
from lakestats.errors import CorruptStatisticsError
from lakestats.store.kinds import FileKind

STATISTICS_FILE = "statistics.parquet"
FREQUENCIES_FILE = "frequencies.parquet"
HISTOGRAMS_FILE = "histograms.parquet"
FILE_NAMES = {
    FileKind.STATISTICS: STATISTICS_FILE,
    FileKind.FREQUENCIES: FREQUENCIES_FILE,
    FileKind.HISTOGRAMS: HISTOGRAMS_FILE,
}
HANDOFF_SUFFIX = ".arrow"
"""Hand-off files are Arrow IPC (LZ4): read back once, by the same run, and deleted at
publish, they are written and read several times faster than Parquet (lineitem sf1 by
month: 1.4 ms to write and 0.5-0.8 ms to read a partition's two, against 7-8 and 4-6)."""
UNPARTITIONED = "_all"
LATEST = "latest.json"
STATS_DIR_NAME = "_lakestats"
SPARK_DIR = "spark"
"""Per-version statistics for lakestats' Spark component: ``spark/v<version>_<snapshot>.json``
(``lakestats.interop.spark_statistics``); ``expire`` removes those of removed versions."""


def spark_file(version: int, snapshot_id: int) -> str:
    return f"{SPARK_DIR}/v{version:08d}_{snapshot_id}.json"


def spark_file_version(name: str) -> int | None:
    """The version number a ``spark/`` file's name carries (None: not such a file)."""
    head, _, rest = name.partition("_")
    return int(head[1:]) if head[:1] == "v" and head[1:].isdigit() and rest else None


def escape(value: str) -> str:
    """Percent-escape a partition value or name the way Hive escapes path parts."""
    return quote(value, safe=" -_.~!$&'()*+,;@")


def partition_dir(key_parts: list[tuple[str, str]]) -> str:
    if not key_parts:
        return UNPARTITIONED
    return "/".join(f"{escape(name)}={escape(value)}" for name, value in key_parts)


NULL_VALUE = "__HIVE_DEFAULT_PARTITION__"  # Hive's directory name for a null value


def partition_dir_of(key: list[tuple[str, str]], values: dict[str, object]) -> str:
    """A plan's partition directory: its key with null values written as Hive writes
    them, so a null and the string ``"null"`` never share a directory."""
    return partition_dir(
        [(name, NULL_VALUE if values.get(name, text) is None else text) for name, text in key]
    )


def partition_name_of(key: list[tuple[str, str]], values: dict[str, object]) -> str:
    """A plan's display name ``k=v,k2=v2``, with null written as Hive writes it (for every
    format alike), so a null is never named like the string ``"null"``."""
    return ",".join(
        f"{name}={NULL_VALUE if values.get(name, text) is None else text}" for name, text in key
    )


def parse_partition_dir(path: str) -> list[tuple[str, str]]:
    """The (field, value) pairs of a partition directory (the inverse of
    ``partition_dir``): ``/`` separates fields and every value's ``/``, ``=`` and ``%``
    are escaped, so any value comes back exactly."""
    if path == UNPARTITIONED or not path:
        return []
    pairs = []
    for part in path.split("/"):
        name, _, value = part.partition("=")
        pairs.append((unquote(name), unquote(value)))
    return pairs


def partition_files(partition_path: str, run_id: str) -> dict[str, str]:
    """Relative paths of the three files of one partition written by one run."""
    return {
        kind: f"partitions/{partition_path}/{run_id}/{name}" for kind, name in FILE_NAMES.items()
    }


def handoff_files(partition_path: str, run_id: str) -> dict[str, str]:
    """Where a run's partition task hands its frequency and histogram rows to the
    reduction (relative to the root): under the run's staging directory, deleted once the
    version (whose parts hold the rows) is published; Arrow IPC (``HANDOFF_SUFFIX``)."""
    return {
        kind: f"_staging/{run_id}/rows/{partition_path}/{kind}{HANDOFF_SUFFIX}"
        for kind in (FileKind.FREQUENCIES, FileKind.HISTOGRAMS)
    }


def table_files(run_id: str) -> dict[str, str]:
    """Relative paths of the table-level files written by one run."""
    return {kind: f"table/{run_id}/{name}" for kind, name in FILE_NAMES.items()}


GROUPS_FILE = "groups.parquet"
"""Column groups' joint statistics (``analyze --column-groups``, ``stats/column_groups.py``)."""


def groups_file(partition_path: str, run_id: str) -> str:
    """Relative path of a partition's column-group statistics written by one run."""
    return f"partitions/{partition_path}/{run_id}/{GROUPS_FILE}"


def table_groups_file(run_id: str) -> str:
    """Relative path of the table-level column-group statistics written by one run."""
    return f"table/{run_id}/{GROUPS_FILE}"


VALUES_FILE = "values.parquet"
"""A partition's staged full value counts (``analyze --exact``, ``stats/value_counts.py``)."""


def values_file(partition_path: str, run_id: str) -> str:
    """Relative path of a partition's staged value counts written by one run."""
    return f"partitions/{partition_path}/{run_id}/{VALUES_FILE}"


def ranks_dir(run_id: str) -> str:
    """Relative directory of the table-level exact ranks (``compute/exact``)."""
    return f"table/{run_id}/ranks"


PARTITION_INDEX_FILE = "partition_index.parquet"


def partition_index_file(run_id: str) -> str:
    """Relative path of the table-level partition index written by one run."""
    return f"table/{run_id}/{PARTITION_INDEX_FILE}"


PARTITION_HISTOGRAM_PARTS_FILE = "partition_histogram_parts.parquet"


def partition_histogram_parts_file(run_id: str) -> str:
    """Relative path of the directory of partition histogram parts written by one run
    (the parts themselves are group cache entries, ``compute/reduce/cache.py``)."""
    return f"table/{run_id}/{PARTITION_HISTOGRAM_PARTS_FILE}"


def version_path(version: int) -> str:
    return f"versions/v{version:08d}.json"


SNAPSHOT_MARKERS = "versions/snapshots"


def snapshot_marker(version: int, snapshot_id: int | None, timestamp_ms: int | None) -> str:
    """An empty file whose name says which snapshot (and its time) a version describes, so
    one listing answers "which version is for snapshot S" without reading every manifest."""
    return f"{SNAPSHOT_MARKERS}/v{version:08d}_{snapshot_id}_{timestamp_ms}"


def parse_snapshot_marker(name: str) -> tuple[int, int | None, int | None] | None:
    parts = name.split("_")
    if len(parts) != 3 or not parts[0].startswith("v") or not parts[0][1:].isdigit():
        return None
    try:
        snapshot, stamp = (None if p == "None" else int(p) for p in parts[1:])
    except ValueError:
        return None
    return int(parts[0][1:]), snapshot, stamp


def staging_dir(root: str, run_id: str) -> str:
    return fs.join(root, "_staging", run_id)


def outside_root(relative: object) -> bool:
    """Whether a path a manifest names would leave its statistics root: absolute, a URI,
    ``..`` or an empty part (files of a root are only ever named relative to it)."""
    if not isinstance(relative, str) or not relative:
        return True
    parts = relative.split("/")
    return (
        relative.startswith(("/", "~"))
        or "\\" in relative
        or "://" in relative
        or ":" in parts[0]  # a drive (C:) or a scheme without slashes
        or any(part in ("", ".", "..") for part in parts)
    )


_SUSPECT = ("\n/", "\n~", "\\", ":", "//", "/\n", "\n./", "/./", "/.\n", "\n.\n", "\n../",
            "/../", "/..\n", "\n..\n")
"""What any path ``outside_root`` refuses shows in the newline-joined paths (a leading
"/" or "~", a backslash, a colon, an empty, "." or ".." part)."""


def outside_roots(paths: list[object]) -> list[object]:
    """The ``paths`` that ``outside_root`` refuses: one scan of the joined text when none
    looks suspect (a manifest of 10,000 partitions names ~120,000 paths), else path by
    path."""
    try:
        joined = "\n" + "\n".join(paths) + "\n"  # type: ignore[arg-type]
    except TypeError:  # not all strings
        joined = None
    # every path a string without a newline (as many newlines as paths, plus one), none
    # empty, none suspect
    if (
        joined is not None
        and joined.count("\n") == len(paths) + 1
        and "\n\n" not in joined
        and not any(s in joined for s in _SUSPECT)
    ):
        return []
    return [p for p in paths if outside_root(p)]


def absolute(root: str, relative: str) -> str:
    """The URI of ``relative`` under ``root``; a path that would lead outside the root
    (``outside_root``) is refused as damage, never followed."""
    if outside_root(relative):
        raise CorruptStatisticsError(
            f"the statistics under {root} name the file {relative!r}, which is outside "
            "that root: a manifest was edited or damaged; run `lakestats analyze` to "
            "publish a new version (or `lakestats expire` to remove the damaged one)"
        )
    return fs.join(root, *relative.split("/"))
