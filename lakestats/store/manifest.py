"""Statistics versions: JSON manifests that say which partition files form a result.

A version lists, for one table snapshot, every partition with its three files, plus
the column list (names and types, in table order) that the files' rows follow. It is
published by writing ``versions/vNNNNNNNN.json`` and then ``latest.json``; readers
start from ``latest.json``, so a version is visible only once complete.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

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
    format_version: int = FORMAT_VERSION
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def row_count(self) -> int:
        return sum(p.row_count for p in self.partitions)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=False)

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


def publish(
    root: str, version: Version, expected_previous: int, s3: fs.S3Options | None = None
) -> int:
    """Publish ``version`` as the next version number; fails if another run won."""
    current = latest_version_number(root, s3)
    if current != expected_previous:
        raise ConflictError(
            f"another analyze published statistics version {current} under {root} while "
            "this one ran; run analyze again"
        )
    version.version = current + 1
    target = layout.absolute(root, layout.version_path(version.version))
    if fs.exists(target, s3):
        raise ConflictError(
            f"statistics version {version.version} already exists under {root}; run analyze again"
        )
    fs.write_bytes_atomic(target, version.to_json().encode(), s3)
    pointer = json.dumps({"version": version.version, "snapshot_id": version.snapshot_id})
    fs.write_bytes_atomic(fs.join(root, layout.LATEST), pointer.encode(), s3)
    return version.version
