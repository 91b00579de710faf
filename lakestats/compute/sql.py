"""``ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN | FOR COLUMNS a, b | FOR ALL COLUMNS]``.

As the Paimon proposal describes: without ``FOR`` (or with ``NOSCAN``) only table-level
counts are collected, from metadata, into a new version that carries the previous
version's column statistics forward (marked with the snapshot they describe);
``FOR COLUMNS`` / ``FOR ALL COLUMNS`` run ``analyze`` for those columns.

``parse`` reads a statement; ``count_only`` publishes the ``NOSCAN`` version. The facade
(``lakestats.api.sql``) runs a statement: it owns opening the table and ``analyze``.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakestats import fs
from lakestats.errors import DataFileError, InvalidArgumentError
from lakestats.formats.base import TableFormat
from lakestats.store import manifest
from lakestats.store.handle import StatisticsStore
from lakestats.store.kinds import VersionKind

_STATEMENT = re.compile(
    r"^\s*ANALYZE\s+TABLE\s+(?P<table>`[^`]+`|\S+)\s+COMPUTE\s+STATISTICS"
    r"(?:\s+(?P<noscan>NOSCAN)|\s+FOR\s+(?P<all>ALL\s+COLUMNS)|\s+FOR\s+COLUMNS\s+(?P<cols>.+?))?"
    r"\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def _names(text: str) -> list[str]:
    return [part.strip().strip("`") for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class AnalyzeStatement:
    """``ANALYZE TABLE table COMPUTE STATISTICS ...``: ``columns`` None for ``FOR ALL
    COLUMNS``; ``scan`` False for ``NOSCAN`` or no ``FOR`` (counts from metadata only)."""

    table: str
    scan: bool
    columns: list[str] | None = None


def parse(statement: str) -> AnalyzeStatement:
    """The statement, or one line naming what is supported."""
    match = _STATEMENT.match(statement)
    if not match:
        raise InvalidArgumentError(
            "only ANALYZE TABLE t COMPUTE STATISTICS [NOSCAN | FOR COLUMNS a, b | "
            f"FOR ALL COLUMNS] is supported, got: {statement.strip()[:80]}"
        )
    name = match.group("table").strip("`")
    if match.group("all") or match.group("cols"):
        columns = _names(match.group("cols")) if match.group("cols") else None
        return AnalyzeStatement(name, True, columns)
    return AnalyzeStatement(name, False)


def count_only(
    fmt: TableFormat, root: StatisticsStore, name: str
) -> dict[str, object]:
    """``NOSCAN``: the row count from metadata (footers where it is missing) in a new
    version that carries the previous version's column statistics forward."""
    snapshot = fmt.current_snapshot_id()
    plans = fmt.plan(snapshot)
    rows = 0
    for plan in plans:
        if plan.delete_files:
            raise InvalidArgumentError(
                f"{name} has delete files, so its row count is not in its metadata; use "
                "ANALYZE TABLE … COMPUTE STATISTICS FOR ALL COLUMNS"
            )
        if plan.row_count is not None:
            rows += plan.row_count
        else:
            for f in plan.data_files:
                rows += _footer_rows(f.path, root.s3)  # the table's data, same store options
    root.probe_writable()  # one line now, not a failed publish
    previous = (
        manifest.load_version(root, None)
        if manifest.latest_version_number(root)
        else None
    )
    timestamps = {s.snapshot_id: s.timestamp_ms for s in fmt.snapshots()}
    version = manifest.Version(
        version=0,
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        table=manifest.TableRef(fmt.format_name, fmt.identifier, fmt.location),
        snapshot_id=snapshot,
        schema_id=fmt.schema_id(snapshot),
        options=previous.options if previous else {},
        columns=previous.columns if previous else [],
        partitions=previous.partitions if previous else [],
        run_id=f"noscan-{uuid.uuid4().hex[:8]}",
        partitions_computed=0,
        partitions_reused=len(previous.partitions) if previous else 0,
        table_files=previous.table_files if previous else None,
        partition_index=previous.partition_index if previous else None,  # same partitions
        partition_histograms=previous.partition_histograms if previous else None,
        partition_histogram_parts=previous.partition_histogram_parts if previous else None,
        merged_record_count=rows,
        merged_record_size=sum(p.size_bytes for p in plans),
        snapshot_timestamp_ms=timestamps.get(snapshot) if snapshot is not None else None,
        kind=VersionKind.NOSCAN,
        extra={
            "columns_snapshot_id": (
                previous.extra.get("columns_snapshot_id", previous.snapshot_id)
                if previous
                else None
            )
        },
    )
    number = manifest.publish(root, version)
    return {
        "kind": VersionKind.NOSCAN,
        "version": number,
        "snapshot_id": snapshot,
        "merged_record_count": rows,
        "message": f"{name}: {rows} rows, statistics version {number} (counts only)",
    }


def _footer_rows(uri: str, s3: fs.S3Options | None) -> int:
    """A data file's row count from its footer; a damaged file is one line naming it."""
    filesystem, path = fs.resolve(uri, s3)
    try:
        with filesystem.open_input_file(path) as handle:
            return pq.ParquetFile(handle).metadata.num_rows
    except (OSError, pa.ArrowInvalid) as exc:
        raise DataFileError(
            f"cannot read the footer of data file {uri}: {str(exc).splitlines()[0].rstrip('.')}; "
            "repair or remove the file"
        ) from exc
