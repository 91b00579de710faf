"""The ``TableFormat`` interface every table format implements.

A format opens a table, lists its snapshots, plans partitions (values, data files,
delete files, row counts, sizes) and hands out a picklable ``PartitionReader`` that
Spark executors use to read one partition (or one slice of it) as Arrow.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import pyarrow as pa


@dataclass(frozen=True)
class DataFile:
    path: str  # URI
    size_bytes: int
    record_count: int | None = None
    # when the file was last written (ns since the epoch): set where a path can be rewritten
    # in place (a plain Parquet directory), so the same name and size still read as a change
    modified_ns: int | None = None

    def identity(self) -> str:
        """The line a fingerprint hashes for this file: changes whenever the file does."""
        modified = "" if self.modified_ns is None else f"|{self.modified_ns}"
        return f"{self.path}|{self.size_bytes}|{self.record_count}{modified}\n"


@dataclass(frozen=True)
class PartitionPlan:
    """One partition of one snapshot: what to read and what it is called."""

    key: tuple[tuple[str, str], ...]  # (field name, human-readable value) in spec order
    values: dict[str, object]  # JSON-ready partition values
    data_files: tuple[DataFile, ...]
    delete_files: tuple[DataFile, ...] = ()
    row_count: int | None = None
    spec_id: int = 0

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.data_files)

    @property
    def name(self) -> str:
        """``k=v,k2=v2`` (what ``--partition`` takes); empty when unpartitioned."""
        return ",".join(f"{k}={v}" for k, v in self.key)

    def fingerprint(self) -> str:
        """Changes whenever the partition's files change (for incremental analyze)."""
        import hashlib

        digest = hashlib.sha256()
        for f in sorted(self.data_files, key=lambda f: f.path) + sorted(
            self.delete_files, key=lambda f: f.path
        ):
            digest.update(f.identity().encode())
        return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Slice:
    """Part of a partition read by one Spark task: some of its files."""

    partition: PartitionPlan
    files: tuple[DataFile, ...]
    index: int = 0
    count: int = 1


@dataclass(frozen=True)
class SampleUnit:
    """The smallest piece of a partition that is read on its own (a data file with its
    deletes; a Hudi file group; Paimon's merged files). A stored sample names a row by
    (unit key, ordinal in the unit's read), so a unit whose fingerprint is unchanged keeps
    its sampled rows and only changed units are read again."""

    key: str  # the unit's files relative to the table location, sorted, comma-joined
    fingerprint: str  # changes when the unit's files or the deletes that apply to it change
    piece: Slice

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.piece.files)

    @classmethod
    def of(cls, location: str, piece: Slice, deletes: tuple[DataFile, ...]) -> SampleUnit:
        import hashlib

        prefix = location.rstrip("/") + "/" if location else ""
        names = sorted(
            f.path[len(prefix) :] if prefix and f.path.startswith(prefix) else f.path
            for f in piece.files
        )
        digest = hashlib.sha256()
        for f in sorted(piece.files, key=lambda f: f.path) + sorted(deletes, key=lambda f: f.path):
            digest.update(f.identity().encode())
        return cls(",".join(names), digest.hexdigest()[:32], piece)


@dataclass(frozen=True)
class SnapshotInfo:
    snapshot_id: int
    timestamp_ms: int
    schema_id: int | None = None
    parent_id: int | None = None
    summary: dict[str, str] = field(default_factory=dict)


class PartitionReader(ABC):
    """Picklable: reads a slice of a partition as an Arrow table on an executor."""

    @abstractmethod
    def read(self, part: Slice, columns: list[str] | None) -> pa.Table:
        """The rows of ``part`` (deletes applied), top-level ``columns`` in table order."""

    def read_encoded(self, part: Slice, columns: list[str] | None) -> pa.Table:
        """``read``, but string and binary columns the files store with few values may come
        dictionary-encoded, one dictionary per column (``unify_dictionaries``): cheaper to
        read and to count by code (what analyze does). By default they come decoded."""
        return self.read(part, columns)


class TableFormat(ABC):
    """An opened table of one format."""

    format_name: str = ""
    # whether write_sample_table writes a sibling table (a Python writer of the format exists)
    writes_sample_table: bool = False

    @property
    @abstractmethod
    def location(self) -> str:
        """The table's root URI (statistics go to ``<location>/_lakestats`` by default)."""

    def statistics_root_refusal(self, root: str) -> str | None:
        """Why statistics cannot be written at ``root`` for this table (None: they can):
        checked before an analyze or a sample writes anything."""
        return None

    @property
    @abstractmethod
    def identifier(self) -> str:
        """How the user named the table."""

    @abstractmethod
    def schema(self, snapshot_id: int | None = None) -> pa.Schema:
        """The table's Arrow schema (partition columns included), in table order."""

    def schema_id(self, snapshot_id: int | None = None) -> int | None:
        return None

    def field_ids(self, snapshot_id: int | None = None) -> dict[str, int]:
        """Leaf column name -> the format's stable field id, where the format has ids
        (Iceberg); statistics follow a column's identity across renames and re-adds."""
        return {}

    def native_types(self, snapshot_id: int | None = None) -> dict[str, str]:
        """Leaf column name -> its type as the format itself writes it (Iceberg
        ``timestamptz``, Delta ``long``, Paimon ``BIGINT``, Hudi's Avro ``long``, Parquet
        ``INT64``/``TIMESTAMP``), shown beside the Arrow type; empty where unknown."""
        return {}

    def snapshots(self) -> list[SnapshotInfo]:
        return []

    def current_snapshot_id(self) -> int | None:
        return None

    def snapshot_log(self) -> list[tuple[int, int]]:
        """(time in ms, snapshot id) each time the table's current snapshot changed, oldest
        first: what ``--as-of`` searches. Formats whose snapshots form one line use their
        snapshots; Iceberg overrides it (rolled-back and branch snapshots were never current)."""
        return sorted((s.timestamp_ms, s.snapshot_id) for s in self.snapshots())

    @abstractmethod
    def plan(self, snapshot_id: int | None = None) -> list[PartitionPlan]:
        """Every partition of the snapshot (default: current) with its files."""

    @abstractmethod
    def reader(self, snapshot_id: int | None = None) -> PartitionReader:
        """A picklable reader for the partitions of that snapshot."""

    @staticmethod
    def slices(partition: PartitionPlan, max_slice_bytes: int) -> list[Slice]:
        """Split a partition into slices of at most ``max_slice_bytes`` of data files."""
        groups: list[list[DataFile]] = [[]]
        size = 0
        for data_file in sorted(partition.data_files, key=lambda f: f.path):
            if groups[-1] and size + data_file.size_bytes > max_slice_bytes:
                groups.append([])
                size = 0
            groups[-1].append(data_file)
            size += data_file.size_bytes
        return [
            Slice(partition, tuple(group), index, len(groups)) for index, group in enumerate(groups)
        ]


    def sample_units(
        self, partition: PartitionPlan, snapshot_id: int | None = None
    ) -> list[SampleUnit]:
        """The partition's read units (``SampleUnit``): the format's smallest slices. A
        delete file applies to every unit unless the format knows better (Iceberg, Delta
        override this), so a new delete file there re-reads the whole partition."""
        units = []
        for piece in self.slices(partition, 1):
            own = {f.path for f in piece.files}
            deletes = tuple(d for d in partition.delete_files if d.path not in own)
            units.append(SampleUnit.of(self.location, piece, deletes))
        return units

    def changed_files(self, from_snapshot: int | None, to_snapshot: int | None) -> set[str] | None:
        """The files (data and delete files, relative to the table's location) that the
        table's change log says were added or removed after ``from_snapshot`` up to
        ``to_snapshot``; None when the format does not read its log here (or the log does
        not reach back), and callers compare the snapshots' file lists instead."""
        return None

    def write_sample_table(
        self, rows: pa.Table, location: str, previous: dict | None
    ) -> dict | None:
        """Store the sample's rows as a table of this format at ``location`` (replacing
        what ``previous`` describes) and return what the manifest records about it; None
        when the format has no Python writer (the sample's Parquet directory is the
        sample table then)."""
        return None

    def update_sample_table(
        self,
        rows: pa.Table,
        location: str,
        previous: dict,
        partitions: dict[str, dict[str, object]],
    ) -> dict | None:
        """Replace only ``partitions`` (partition directory -> its values, as a
        ``PartitionPlan`` has them) of the sample table ``previous`` describes by ``rows``
        (their new sample rows; a partition without rows is emptied), leaving the other
        partitions' files as they are; what the manifest records about it. None when the
        format cannot (no writer, no such sample table, a changed schema or partitioning):
        the caller then writes the whole sample with ``write_sample_table``."""
        return None


class PathTable(TableFormat):
    """A table opened by its directory URI (Delta, Hudi, Paimon, Parquet directories):
    the URI is both where it lives and how the user named it."""

    _uri: str

    @property
    def location(self) -> str:
        return self._uri

    @property
    def identifier(self) -> str:
        return self._uri
