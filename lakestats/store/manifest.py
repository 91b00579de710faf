"""Statistics versions: JSON manifests that say which partition files form a result.

A version lists, for one table snapshot, every partition with its three files, plus
the column list (names and types, in table order) that the files' rows follow. It is
published by writing ``versions/vNNNNNNNN.json`` and then ``latest.json``; readers
start from ``latest.json``, so a version is visible only once complete.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field

from lakestats import fs
from lakestats.errors import ConflictError, StatisticsNotFoundError, StorageError
from lakestats.store import layout
from lakestats.store.schemas import FORMAT_VERSION


@dataclass
class PartitionEntry:
    path: str  # partition directory under partitions/
    name: str  # k=v,k2=v2 ('' when unpartitioned)
    values: dict[str, object]
    row_count: int
    size_bytes: int
    files: dict[str, str]  # statistics/frequencies/histograms -> path relative to the root
    fingerprint: str = ""
    run_id: str = ""


@dataclass
class Version:
    version: int
    created_at: str
    table: dict[str, str]
    snapshot_id: int | None
    schema_id: int | None
    options: dict[str, object]
    columns: list[dict[str, str]]
    partitions: list[PartitionEntry]
    run_id: str = ""
    partitions_computed: int = 0
    partitions_reused: int = 0
    table_files: dict[str, str] | None = None  # table-level files, relative to the root
    merged_record_count: int = 0  # rows after deletes/merges (Paimon's mergedRecordCount)
    merged_record_size: int = 0  # bytes of the data files those rows live in
    snapshot_timestamp_ms: int | None = None
    kind: str = "full"  # "full": column statistics; "noscan": counts from metadata only
    format_version: int = FORMAT_VERSION
    extra: dict[str, object] = field(default_factory=dict)
    # table-level partition_index.parquet, relative to the root (absent in older versions)
    partition_index: str | None = None

    @property
    def row_count(self) -> int:
        return sum(p.row_count for p in self.partitions)

    def to_json(self) -> str:
        # ``vars`` walks the dataclasses as ``asdict`` would, without its deep copies
        return json.dumps(self, default=vars, indent=1, sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> Version:
        data = json.loads(text)
        data["partitions"] = [PartitionEntry(**p) for p in data["partitions"]]
        return cls(**data)


def latest_version_number(root: str, s3: fs.S3Options | None = None) -> int:
    try:
        return int(json.loads(fs.read_bytes(fs.join(root, layout.LATEST), s3))["version"])
    except FileNotFoundError:
        return 0
    except (ValueError, KeyError) as exc:
        raise StorageError(f"{fs.join(root, layout.LATEST)} is corrupt: {exc}") from exc


def load_version(root: str, version: int | None = None, s3: fs.S3Options | None = None) -> Version:
    number = latest_version_number(root, s3) if version is None else version
    if number == 0:
        raise StatisticsNotFoundError(
            f"no statistics under {root}: run `lakestats analyze` on the table first "
            "(or pass the --stats-root it used)"
        )
    try:
        return Version.from_json(
            fs.read_bytes(layout.absolute(root, layout.version_path(number)), s3)
        )
    except FileNotFoundError as exc:
        raise StatisticsNotFoundError(
            f"statistics version {number} not found under {root}"
        ) from exc


def version_numbers(root: str, s3: fs.S3Options | None = None) -> list[int]:
    """Every published version number, ascending (from the ``versions/`` listing)."""
    import pyarrow.fs as pafs

    filesystem, path = fs.resolve(fs.join(root, "versions"), s3)
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    numbers = []
    for info in infos:
        name = info.path.rsplit("/", 1)[-1]
        if name.startswith("v") and name.endswith(".json") and name[1:-5].isdigit():
            numbers.append(int(name[1:-5]))
    return sorted(numbers)


def snapshot_markers(
    root: str, s3: fs.S3Options | None = None
) -> dict[int, tuple[int | None, int | None]]:
    """Version number -> (snapshot id, snapshot time) of every marker (one listing)."""
    import pyarrow.fs as pafs

    filesystem, path = fs.resolve(layout.absolute(root, layout.SNAPSHOT_MARKERS), s3)
    found = {}
    for info in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        parsed = layout.parse_snapshot_marker(info.path.rsplit("/", 1)[-1])
        if parsed is not None:
            found[parsed[0]] = (parsed[1], parsed[2])
    return found


def snapshots_of_versions(
    root: str, numbers: list[int], s3: fs.S3Options | None = None
) -> dict[int, tuple[int | None, int | None]]:
    """For each of ``numbers``: its snapshot id and snapshot time, from the markers,
    reading the manifest only of versions that have none (published before markers
    existed, or whose marker write failed)."""
    found = snapshot_markers(root, s3)
    result = {}
    for number in numbers:
        if number not in found:
            version = load_version(root, number, s3)
            found[number] = (version.snapshot_id, version.snapshot_timestamp_ms)
        result[number] = found[number]
    return result


def publish(root: str, version: Version, s3: fs.S3Options | None = None) -> int:
    """Publish ``version`` as the next version number.

    The version file is created exclusively (a local rename that refuses to replace, or
    a put-then-verify on object stores), so when two analyses race for one number, one
    wins and the other gets ``ConflictError``; ``latest.json`` is then pointed at it.
    """
    numbers = version_numbers(root, s3)
    version.version = (numbers[-1] if numbers else 0) + 1
    target = layout.absolute(root, layout.version_path(version.version))
    data = version.to_json().encode()
    if not fs.create_exclusive(target, data, s3):
        raise ConflictError(
            f"another analyze published statistics version {version.version} under {root} "
            "while this one ran"
        )
    marker = layout.snapshot_marker(
        version.version, version.snapshot_id, version.snapshot_timestamp_ms
    )
    with contextlib.suppress(OSError, StorageError):  # an index only: lookups fall back
        fs.write_bytes_atomic(layout.absolute(root, marker), b"", s3)
    current = latest_version_number(root, s3)
    if version.version > current:
        pointer = json.dumps({"version": version.version, "snapshot_id": version.snapshot_id})
        fs.write_bytes_atomic(fs.join(root, layout.LATEST), pointer.encode(), s3)
    return version.version
