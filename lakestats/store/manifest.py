"""Statistics versions: JSON manifests that say which partition files form a result.

A version lists, for one table snapshot, every partition with its three files (and
their sizes, so a later analyze can verify what it reuses), plus the column list
(names and types, in table order) that the files' rows follow.

The commit protocol: a version is published by creating ``versions/vNNNNNNNN.json``
exclusively (it appears whole or not at all, and two publishers never get one number).
"Latest" is the highest version number in the ``versions/`` listing whose manifest
reads back, so it never goes backwards however publishers interleave; ``latest.json``
is only a hint for other tools, written after the version and never trusted by
lookups. A damaged manifest (truncated, hand-edited) is skipped by lookups of the
latest version (they fall back to the newest good one and say so) and never blocks a
new publish, which takes the next number.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from lakestats.errors import (
    ConflictError,
    CorruptStatisticsError,
    StatisticsNotFoundError,
    StorageError,
    UnsupportedFeatureError,
)
from lakestats.options import AnalyzeOptions
from lakestats.store import layout
from lakestats.store.handle import StatisticsStore
from lakestats.store.schemas import FORMAT_VERSION
from lakestats.threads import collection_paused


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
    file_sizes: dict[str, int] = field(default_factory=dict)  # kind -> bytes (when recorded)

    @property
    def key(self) -> list[tuple[str, str]]:
        """The partition's (field, value) pairs, decoded from its path: the path escapes
        every ``/``, ``=`` and ``%`` of a value, so this holds whatever the values are."""
        return layout.parse_partition_dir(self.path)


@dataclass(frozen=True)
class TableRef:
    """Which table a version describes (``table`` in the manifest)."""

    format: str = ""  # the format's name: iceberg, delta, hudi, paimon, parquet
    identifier: str = ""
    location: str = ""


@dataclass
class Version:
    """One manifest, ``versions/vNNNNNNNN.json``: the JSON is these fields in this order
    (``to_json``), so readers in other languages see the same keys as ever."""

    version: int
    created_at: str
    table: TableRef
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
    # newer versions whose manifests could not be read when this one was loaded as the
    # latest (not stored: a property of the lookup, not of the version)
    skipped_versions: list[int] = field(default_factory=list, repr=False)
    # table-level partition_index.parquet, relative to the root (absent in older versions)
    partition_index: str | None = None
    # the single-file partition histograms of versions written between est14v and
    # phist14r: no longer read (their estimates read the partitions' own files)
    partition_histograms: str | None = None
    # table-level partition_histogram_parts.parquet, relative to the root: the parts of
    # every partition's histograms and numeric frequencies (absent in versions written
    # before it: estimates then read the partitions' own files)
    partition_histogram_parts: str | None = None

    @property
    def row_count(self) -> int:
        return sum(p.row_count for p in self.partitions)

    @property
    def analyze_options(self) -> AnalyzeOptions | None:
        """The options a full analyze recorded, typed; None for a record this code did not
        write that way (a sampled or NOSCAN version's, an unknown key)."""
        return AnalyzeOptions.from_record(self.options)

    def to_json(self) -> str:
        return json.dumps(self, default=_stored_fields, indent=1, sort_keys=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Version:
        """A manifest; ``NewerFormatError`` when a newer lakestats wrote it (its fields may
        mean what this code cannot know), ``ValueError``/``TypeError`` when it is damaged."""
        with collection_paused():  # 10,000 partitions: 40,000 dicts and entries
            return cls._from_json(text)

    @classmethod
    def _from_json(cls, text: str | bytes) -> Version:
        data = _loads(text)
        written = data.get("format_version", 1)
        if isinstance(written, int) and not isinstance(written, bool) and (
            written > FORMAT_VERSION
        ):
            raise NewerFormatError(written)
        data.pop("skipped_versions", None)
        data["partitions"] = _entries(data["partitions"])
        # a manifest written by hand or another tool may name less of its table, or more
        known = {f.name for f in dataclasses.fields(TableRef)}
        data["table"] = TableRef(**{k: v for k, v in data["table"].items() if k in known})
        version = cls(**data)
        if not isinstance(version.version, int) or not isinstance(version.columns, list):
            raise ValueError("version or columns has the wrong type")
        outside = layout.outside_roots(version.named_paths())
        if outside:
            raise ValueError(f"it names {outside[0]!r}, a path outside its statistics root")
        return version

    def named_paths(self) -> list[object]:
        """Every path this manifest names, relative to its root (each must stay inside)."""
        named: list[object] = []
        for entry in self.partitions:
            named += [entry.path, *entry.files.values()]
        extra = self.extra if isinstance(self.extra, dict) else {}
        named += list((self.table_files or {}).values())
        named += list(dict(extra.get("reduce_cache") or {}).values())
        named += list(dict(extra.get("file_sizes") or {}))
        named += list(dict(extra.get("exact") or {}).get("files") or [])
        named += list(dict(extra.get("exact") or {}).get("layers") or [])  # rank layers' indexes
        frequency_layers = dict(extra.get("exact") or {}).get("frequency_layers") or {}
        named += list(dict(frequency_layers).get("files") or [])
        named += [
            p
            for p in (self.partition_index, self.partition_histograms,
                      self.partition_histogram_parts)
            if p is not None
        ]
        return named


def _loads(text: str | bytes) -> object:
    """``json.loads``, through orjson where it reads the text (several times faster on a
    manifest of 10,000 partitions); json decides whatever orjson refuses (NaN, integers
    beyond 64 bits, other encodings), so both accept and refuse the same manifests."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


_ENTRY_FIELDS = frozenset(f.name for f in dataclasses.fields(PartitionEntry))
_ENTRY_DEFAULTS: dict[str, Callable[[], object]] = {  # each a fresh value, as __init__'s
    f.name: (
        f.default_factory
        if f.default_factory is not dataclasses.MISSING
        else (lambda value=f.default: value)
    )
    for f in dataclasses.fields(PartitionEntry)
    if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
}
_ENTRY_REQUIRED = _ENTRY_FIELDS - set(_ENTRY_DEFAULTS)


def _entries(raw: list) -> list[PartitionEntry]:
    """``[PartitionEntry(**p) for p in raw]``, the decoded dicts adopted as the entries'
    attributes instead of passed through ``__init__`` (a third of the cost on 10,000
    partitions); a dict of other keys goes through ``__init__`` and raises as it would."""
    new = PartitionEntry.__new__
    out = []
    for p in raw:
        keys = p.keys() if type(p) is dict else None
        if keys is None or not (_ENTRY_REQUIRED <= keys <= _ENTRY_FIELDS):
            out.append(PartitionEntry(**p))
            continue
        if len(p) != len(_ENTRY_FIELDS):
            for name, default in _ENTRY_DEFAULTS.items():
                if name not in p:
                    p[name] = default()
        entry = new(PartitionEntry)
        entry.__dict__ = p
        out.append(entry)
    return out


class NewerFormatError(UnsupportedFeatureError):
    """A manifest of a format version newer than this code reads."""

    def __init__(self, written: int, where: str = "a statistics version") -> None:
        super().__init__(
            f"{where} was written by a newer lakestats (format {written}; this one reads "
            f"up to {FORMAT_VERSION}); upgrade lakestats",
            format_version=written,
        )
        self.written = written


def _stored_fields(value: object) -> dict[str, object]:
    """What JSON stores of a dataclass: its fields, less the lookup-only ones (walks
    nested dataclasses as ``asdict`` would, without its deep copies)."""
    return {
        f.name: getattr(value, f.name)
        for f in dataclasses.fields(value)  # type: ignore[arg-type]
        if f.name != "skipped_versions"
    }


def latest_version_number(root: StatisticsStore) -> int:
    """The highest published version number (0 when there is none), from the listing."""
    numbers = version_numbers(root)
    return numbers[-1] if numbers else 0


def read_version(store: StatisticsStore, number: int) -> Version:
    """Version ``number``; ``CorruptStatisticsError`` (one line, naming the file) when its
    manifest exists but does not parse."""
    uri = store.path(layout.version_path(number))
    try:
        data = store.read_bytes(uri)
    except FileNotFoundError as exc:
        raise StatisticsNotFoundError(
            f"statistics version {number} not found under {store}: see `lakestats history`"
        ) from exc
    return _version_of(data, uri)


def _version_of(data: bytes, uri: str) -> Version:
    """The version a manifest file's bytes hold; ``CorruptStatisticsError`` naming ``uri``
    when they do not parse."""
    try:
        return Version.from_json(data)
    except NewerFormatError as exc:
        raise NewerFormatError(exc.written, f"statistics version file {uri}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # JSONDecodeError too
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CorruptStatisticsError(
            f"statistics version file {uri} is damaged ({reason}): lookups skip it and "
            "`lakestats analyze` publishes the next version; delete the file (or run "
            "`lakestats expire`) to remove it",
            path=uri,
        ) from exc


def load_version(root: StatisticsStore, version: int | None = None) -> Version:
    """Version ``version``, or the latest: the newest one whose manifest reads back (the
    damaged newer ones it passed over are in ``skipped_versions``)."""
    if version is not None:
        return read_version(root, version)
    numbers = version_numbers(root)
    if not numbers:
        raise StatisticsNotFoundError(
            f"no statistics under {root}: run `lakestats analyze` on the table first "
            "(or pass the --stats-root it used)"
        )
    skipped: list[int] = []
    first_error: CorruptStatisticsError | None = None
    for number in reversed(numbers):
        try:
            found = read_version(root, number)
        except CorruptStatisticsError as exc:
            skipped.append(number)
            first_error = first_error or exc
            continue
        except StatisticsNotFoundError:
            continue  # expired between the listing and the read
        found.skipped_versions = skipped
        return found
    if first_error is not None:
        raise first_error
    raise StatisticsNotFoundError(
        f"no statistics under {root}: run `lakestats analyze` on the table first"
    )


def version_numbers(store: StatisticsStore) -> list[int]:
    """Every published version number, ascending (from the ``versions/`` listing)."""
    numbers = []
    for info in store.list_files(store.join("versions")):
        name = info.path.rsplit("/", 1)[-1]
        if name.startswith("v") and name.endswith(".json") and name[1:-5].isdigit():
            numbers.append(int(name[1:-5]))
    if not numbers:
        store.check_directory()
    return sorted(numbers)


def snapshot_markers(store: StatisticsStore) -> dict[int, tuple[int | None, int | None]]:
    """Version number -> (snapshot id, snapshot time) of every marker (one listing)."""
    found = {}
    for info in store.list_files(store.path(layout.SNAPSHOT_MARKERS)):
        parsed = layout.parse_snapshot_marker(info.path.rsplit("/", 1)[-1])
        if parsed is not None:
            found[parsed[0]] = (parsed[1], parsed[2])
    return found


def snapshots_of_versions(
    root: StatisticsStore, numbers: list[int]
) -> dict[int, tuple[int | None, int | None]]:
    """For each of ``numbers``: its snapshot id and snapshot time, from the markers,
    reading the manifest only of versions that have none (published before markers
    existed, or whose marker write failed)."""
    found = snapshot_markers(root)
    result = {}
    for number in numbers:
        if number not in found:
            try:
                version = load_version(root, number)
            except CorruptStatisticsError:
                found[number] = (None, None)  # damaged: describes no snapshot
            else:
                found[number] = (version.snapshot_id, version.snapshot_timestamp_ms)
        result[number] = found[number]
    return result


PUBLISH_ATTEMPTS = 100


def publish(
    store: StatisticsStore,
    version: Version,
    on_conflict: Callable[[Version], None] | None = None,
) -> int:
    """Publish ``version`` as the next version number; returns the number.

    The version file is created exclusively (a hard link on local disks, a conditional
    write on S3), so of publishers racing for one number exactly one wins; the others
    try the next number, after ``on_conflict(winner)`` (which may raise to give up,
    e.g. when the winner describes the same snapshot). Latest is derived from the
    listing, so it is the highest number the moment the file exists.
    """
    for _ in range(PUBLISH_ATTEMPTS):
        version.version = latest_version_number(store) + 1
        target = store.path(layout.version_path(version.version))
        data = version.to_json().encode()
        if store.create_exclusive(target, data):
            break
        try:
            winner = store.read_bytes(target)
        except FileNotFoundError:  # removed since: the next number is tried
            continue
        if winner == data:  # ours: a retried request found its own first attempt's
            break  # write (S3 acknowledged it late)
        if on_conflict is not None:
            with contextlib.suppress(CorruptStatisticsError):
                on_conflict(_version_of(winner, target))
    else:
        raise ConflictError(
            f"could not publish under {store}: {PUBLISH_ATTEMPTS} other analyses published "
            "first; run analyze again"
        )
    marker = layout.snapshot_marker(
        version.version, version.snapshot_id, version.snapshot_timestamp_ms
    )
    with contextlib.suppress(StorageError):  # an index only: lookups fall back without it
        store.write_bytes_atomic(store.path(marker), b"")
    with contextlib.suppress(StorageError):  # a hint for other tools; lookups never read it
        pointer = json.dumps({"version": version.version, "snapshot_id": version.snapshot_id})
        if latest_version_number(store) == version.version:
            store.write_bytes_atomic(store.join(layout.LATEST), pointer.encode())
    return version.version
