"""How the ``lakestats`` commands print their answers, as pyiceberg's CLI ``Output``:
``JsonOutput`` prints an answer's ``to_json()`` (``--json``), ``TextOutput`` lays out the
answer's fields for a person (figures through ``lakestats.display``, tables through
``lakestats.preview``). A command picks one (``output_for``) and hands it the answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from lakestats import api, display
from lakestats.lazy import LazyModule

if TYPE_CHECKING:
    from lakestats import answers
    from lakestats.answers import Row
else:  # a value's JSON form is read from the answers module on first use (lean lookups)
    answers = LazyModule("lakestats.answers")

Histograms = Callable[[Sequence[Mapping[str, object]]], dict[str, list[int]] | None]


class SampleShown(Protocol):
    """``sample show``'s manifest, as far as its text uses it."""

    snapshot_id: int | None
    seed: int
    created_at: str
    sibling: Mapping[str, object] | None

    @property
    def population(self) -> int: ...
    @property
    def sample_rows(self) -> int: ...
    @property
    def partitions(self) -> list[object]: ...
    def to_json(self) -> dict[str, object]: ...


def print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


def output_for(args: argparse.Namespace) -> Output:
    return JsonOutput(args) if getattr(args, "json", False) else TextOutput(args)


class Output:
    """One method per kind of answer a command prints; this base prints each answer's
    ``to_json()`` (``JsonOutput``), ``TextOutput`` lays the fields out instead."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def _json(self, found: Any, *context: Any) -> None:  # noqa: ANN401 - any answer; TextOutput's views say which
        """The answer's ``to_json()``; the text views' context (``show``'s histograms,
        ``profile``'s partition rows) is not asked for."""
        print_json(found.to_json())

    analyzed = sampled = sample = partitions = table_statistics = partition_statistics = _json
    profile = frequencies = rank = quantile = histogram = holders = stats = estimate = _json
    history = expired = sql = group_distinct = _json

    def counts_only(self, summary: answers.TableSummary) -> None:
        print_json({**summary.to_json(), "columns": []})  # no column statistics recorded

    def registered(self, result: Mapping[str, object]) -> None:
        print_json(result)

    def jar(self, path: str) -> None:
        print_json({"jar": path})

    def token(self, made: Mapping[str, object]) -> None:
        print_json(made)

    def paimon(self, document: Mapping[str, object]) -> None:
        """Paimon's statistics JSON, with or without ``--json``."""
        print(json.dumps(document, indent=2))


class JsonOutput(Output):
    """``--json``: the answer's ``to_json()``, whatever the command."""


class TextOutput(Output):
    """The answers' fields laid out for a person; estimated figures marked ``≈``."""

    def analyzed(self, result: answers.AnalyzeResult) -> None:
        if result.unchanged:
            print(
                f"nothing to analyze: statistics version {result.version} already describes "
                f"snapshot {result.snapshot_id} ({result.partitions_reused} partitions, "
                f"{display.count(result.row_count)} rows, none changed)"
            )
            return
        repaired = (
            f" (recomputed {result.partitions_repaired} whose files were missing or damaged)"
            if result.partitions_repaired
            else ""
        )
        sampled = " (sampled: estimated from the stored sample)" if self.args.from_sample else ""
        print(
            f"analyzed {result.partitions_computed} partitions "
            f"({display.count(result.row_count)} rows), reused {result.partitions_reused}"
            f"{repaired}; statistics version {result.version} at {result.stats_root}{sampled}"
        )

    def sampled(self, result: answers.SampleResult) -> None:
        if result.resampled_because:
            print(f"lakestats: {result.resampled_because}", file=sys.stderr)
        print(
            f"sampled {result.sample_rows} of {result.population} rows (snapshot "
            f"{result.snapshot_id}): {result.partitions_sampled} partitions sampled, "
            f"{result.partitions_kept} kept, {result.partitions_removed} removed, "
            f"{result.files_read} files and {result.bytes_read} bytes of data read"
        )

    def sample(self, manifest: SampleShown) -> None:
        print(
            f"sample of {self.args.table}: {manifest.sample_rows} of {manifest.population} "
            f"rows in {len(manifest.partitions)} partitions, snapshot {manifest.snapshot_id}, "
            f"seed {manifest.seed}, drawn {manifest.created_at}"
        )
        sibling = manifest.sibling or {}
        where = sibling.get("metadata_location") or sibling.get("location")
        print(f"stored as: {sibling['format']} table {where}" if sibling else
              "stored as: the Parquet directory sample/data under the statistics root")

    def partitions(self, found: answers.Partitions) -> None:
        from lakestats.preview import TextColumn, text_table  # rich: text output only

        text_table(
            [
                TextColumn("partition", 12, 40, 0),
                TextColumn("rows", 6, 15, 0, right=True),
                TextColumn("statistics file", 20, 120, 1),
            ],
            [
                [p.name or "(all)", display.count(p.row_count), p.files.get("statistics", "")]
                for p in found
            ],
            title=f"{self.args.table}: {len(found)} partitions (statistics version "
            f"{found.version})",
        )

    def table_statistics(self, level: answers.TableStatistics, histograms: Histograms) -> None:
        from lakestats.preview import render_statistics  # rich: text output only

        rows = [answers.column_json(r) for r in level.columns]
        render_statistics(rows, title=self._table_title(level), histograms=histograms(rows))

    def _table_title(self, level: answers.TableStatistics) -> str:
        """``show``'s title: the statistics' own snapshot and rows; when stale, where the
        table is now."""
        info = level.staleness
        title = (
            f"{self.args.table} (table level, snapshot {info.statistics_snapshot_id}, "
            f"{display.count(level.row_count)} rows, statistics version {level.version})"
        )
        if info.stale:
            behind = (
                f", {info.snapshots_behind} snapshots behind" if info.snapshots_behind else ""
            )
            title += f" [stale: the table is at snapshot {info.snapshot_id}{behind}]"
        if level.kind == api.VersionKind.SAMPLED:
            drawn = level.sample or {}
            title += (
                f" [sampled: {display.count(drawn.get('sample_rows'))} rows of snapshot "
                f"{drawn.get('snapshot_id')}]"
            )
        return title

    def partition_statistics(
        self, found: answers.PartitionStatistics, histograms: Histograms
    ) -> None:
        from lakestats.preview import render_statistics  # rich: text output only

        rows = [answers.column_json(r) for r in found.columns]
        render_statistics(
            rows,
            title=f"{self.args.table} {found.name or ''} ({display.count(found.row_count)} "
            f"rows, statistics version {found.version})",
            histograms=histograms(rows),
        )

    def counts_only(self, summary: answers.TableSummary) -> None:
        print(
            f"{self.args.table}: {display.count(summary.row_count)} rows in "
            f"{display.count(summary.size_in_bytes)} bytes of data files (statistics version "
            f"{summary.version}, ANALYZE ... NOSCAN: counts from the table's metadata, no "
            "column statistics; `lakestats analyze` computes them)"
        )

    def profile(self, found: answers.TableProfile, partition_rows: Callable[[], list[int]]) -> None:
        from lakestats.preview import render_profile  # rich: text output only

        rows = partition_rows() if found.partitions > 1 else []
        render_profile(found, self.args.table, partition_rows=rows)

    def frequencies(self, found: answers.Frequencies) -> None:
        # ``≈``: the stored counts are estimates (merged from truncated lists, sampled)
        mark = "" if found.exact else "≈"
        for value, frequency in found:
            print(f"{mark + display.count(frequency):>14}  {answers.jsonable(value)}")

    def rank(self, found: answers.Rank) -> None:
        print(
            f"below {display.count(found.below)}  equal {display.count(found.equal)}  "
            f"above {display.count(found.above)}  percentile {display.number(found.percentile)}"
        )

    def quantile(self, found: answers.Quantile) -> None:
        print(answers.jsonable(found.value))

    def histogram(self, found: answers.Histogram) -> None:
        mark = "" if found.exact else "≈"
        edges = [(answers.jsonable(b.lower), answers.jsonable(b.upper)) for b in found]
        labels = display.bin_labels(edges, closed_last=found.ends_with_last_bin)
        width = max((len(label) for label in labels), default=0)
        for label, b in zip(labels, found, strict=True):
            print(f"{label:<{width}}  {mark}{display.count(b.count)}")

    def holders(self, found: answers.PartitionsContaining) -> None:
        for holder in found:
            print(f"{display.count(holder.frequency):>14}  {holder.name}")

    def stats(self, found: answers.BatchStatistics) -> None:
        from lakestats.preview import TextColumn, text_table  # rich: text output only

        head = (
            f"{self.args.table}: {display.count(found.row_count)} rows, "
            f"{found.partitions_matched} of {found.partitions_total} partitions (statistics "
            f"version {found.version})"
        )
        if found.derived_predicate is not None:
            head += f"; statistics of the rows where {found.derived_predicate}"
        rows = [
            _stats_line("(table)", answers.column_json(c), found.row_count)
            for c in found.columns
        ]
        for part in found.partitions or ():
            rows += [
                _stats_line(part.name or "(all)", cast("Row", answers.jsonable(c)), part.row_count)
                for c in part.columns
            ]
        text_table(
            [
                TextColumn("partition", 10, 30, 0),
                TextColumn("column", 6, 20, 0),
                TextColumn("rows", 5, 13, 1, right=True),
                TextColumn("nulls", 5, 13, 2, right=True),
                TextColumn("distinct", 8, 13, 2, right=True),
                TextColumn("min", 6, 16, 3),
                TextColumn("max", 6, 16, 3),
            ],
            rows,
            title=head,
        )

    def estimate(self, found: answers.Estimate) -> None:
        kind = (
            "exact"
            if found.exact
            else f"between {display.count(found.lower)} and {display.count(found.upper)}"
        )
        print(
            f"{display.count(round(found.row_count))} rows ({kind}), selectivity "
            f"{display.number(found.selectivity)}, {len(found.partitions)} partitions can match"
        )

    def group_distinct(self, found: answers.GroupDistinct) -> None:
        kind = (
            "exact"
            if found.exact
            else f"between {display.count(found.lower)} and {display.count(found.upper)}"
        )
        source = (
            f"column group {found.column_group}"
            if found.column_group
            else "no column group holds them: the columns' own distinct counts"
        )
        print(
            f"{display.count(found.distinct_count)} distinct ({', '.join(found.columns)}) "
            f"({kind}), from {source}"
        )

    def history(self, found: answers.Versions) -> None:
        for v in found:
            if v.damaged is not None:
                print(f"v{v.version:<4} damaged: {v.damaged}")
            elif v.derived is not None:
                d = v.derived
                print(
                    f"derived {d['key']} v{v.version} snapshot {v.snapshot_id}  "
                    f"{display.count(d['row_count'])} rows  where {d['predicate']}  "
                    f"{v.created_at}"
                )
            else:
                print(
                    f"v{v.version:<4} snapshot {v.snapshot_id}  "
                    f"{display.count(v.merged_record_count)} rows  computed "
                    f"{v.partitions_computed} reused {v.partitions_reused}  {v.created_at}"
                )

    def expired(self, found: answers.ExpireReport) -> None:
        verb = "would remove" if found.dry_run else "removed"
        removed = ", ".join(map(str, found.versions_removed)) or "none"
        print(
            f"{verb} versions {removed} and {display.count(found.files_removed)} files; "
            f"kept versions {', '.join(map(str, found.versions_kept))}"
        )

    def sql(self, result: answers.SqlResult) -> None:
        print(result.message)

    def jar(self, path: str) -> None:
        print(path)  # as `spark.jars=$(lakestats spark-jar)` takes it

    def token(self, made: Mapping[str, object]) -> None:
        print(f"token (shown only now; keep it secret): {made['token']}")
        if made["added_to"]:
            print(f"added its hashed entry to {made['added_to']}:\n")
        else:
            print("add its hashed entry to the tables file:\n")
        print(str(made["entry"]), end="")

    def registered(self, result: Mapping[str, object]) -> None:
        if self.args.dry_run:  # a dry run's statistics are its answer
            print_json(result)
            return
        columns = result["columns"]
        assert isinstance(columns, list | tuple | dict)
        print(
            f"registered {result['name']} ({result['row_count']} rows, "
            f"{len(columns)} columns with statistics) in {self.args.metastore}"
        )


def _stats_line(label: str, column: Mapping[str, object], rows: object) -> list[str]:
    """One line of ``stats``' text table: a column of the table or of a partition."""
    return (
        [label, str(column["name"]), display.count(rows)]
        + [display.count(column.get(k)) for k in ("null_count", "distinct_count")]
        + [display.number(column.get(k)) for k in ("min", "max")]
    )
