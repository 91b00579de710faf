"""``LakestatsTable.sample``: the stored sample's operations, grouped as delta-rs groups
``dt.optimize``:

    table = ls.open_table("warehouse/lineitem")
    table.sample.create(fraction=0.01, seed=7)   # Spark job: a stratified bottom-k sample
    table.sample.refresh()                       # resample only partitions that changed
    table.sample.manifest()                      # the manifest (snapshot, seed, N and n)
    table.analyze(from_sample=True)              # statistics estimated from the sample
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lakestats.errors import LakestatsError
from lakestats.options import SampleOptions
from lakestats.store import sample as store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakestats.answers import SampleResult
    from lakestats.formats import TableFormat
    from lakestats.store.handle import StatisticsStore


class SampledTable(Protocol):
    """What the sample's operations use of ``LakestatsTable`` (which holds them): named
    here, so the handle imports this module and not the other way round."""

    name: str

    @property
    def format(self) -> TableFormat: ...
    @property
    def store(self) -> StatisticsStore: ...
    def check_root_placement(self) -> None: ...
    def forget_table_state(self) -> None: ...


class SampleOperations:
    def __init__(self, table: SampledTable) -> None:
        self._table = table

    def _spark(self, spark):  # noqa: ANN001, ANN202
        if spark is not None:
            return spark
        from lakestats.compute.session import get_spark

        return get_spark()

    def create(
        self,
        options: SampleOptions | None = None,
        *,
        spark: SparkSession | None = None,
        **overrides: object,
    ) -> SampleResult:
        """Draw a uniform sample of every partition (``SampleOptions``, with ``overrides``
        by field name: ``rows``, ``fraction``, 0.01 when neither is given, ``seed``) and
        store it under ``<stats root>/sample/``; returns a ``SampleResult``."""
        from lakestats.store.cleanup import as_it_was

        options = SampleOptions.build(options, overrides)  # bad input fails before Spark
        from lakestats.compute.sample.create import create

        self._table.forget_table_state()
        table = self._table.format
        root = self._table.store
        self._table.check_root_placement()
        with as_it_was(root):  # a failure leaves no directory it created
            root.probe_writable()
            session = self._spark(spark)
            from lakestats.compute.connect_workers import check_workers, explain_failure

            check_workers(session)  # a Connect server's workers lack lakestats: one line
            try:
                return create(table, root, session, options)
            except LakestatsError as exc:  # workers without lakestats (Spark Connect)?
                explained = explain_failure(session, exc)
                if explained is exc:
                    raise
                raise explained from exc

    def refresh(self, spark: SparkSession | None = None) -> SampleResult:
        """Update the sample to the table's current snapshot (changed partitions only)."""
        from lakestats.compute.sample.create import refresh
        from lakestats.store.cleanup import as_it_was

        self._table.forget_table_state()
        table = self._table.format
        # loaded (and its files checked) before Spark starts: a missing sample fails fast
        root = self._table.store
        sample = store.load(root, self._table.name)
        with as_it_was(root):
            return refresh(table, root, self._spark(spark), sample)

    def manifest(self) -> store.SampleManifest:
        """The sample's manifest (snapshot, seed, N and n; ``to_json()`` for ``sample show``)."""
        return store.load(self._table.store, self._table.name)
