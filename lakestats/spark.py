"""Spark's optimizer fed with lakestats' statistics (no full scan, no ``ANALYZE``).

    import lakestats.api as ls
    from lakestats.spark import register

    record = register(spark, ls.open_table("/lake/lineitem"), "lineitem")
    spark.sql("SELECT * FROM lineitem WHERE l_quantity < 5").explain(mode="cost")

``register`` makes an analyzed table visible in Spark's session catalog as a v1 datasource
table (``CREATE TABLE name USING parquet LOCATION …``; hive-style partitions are recovered)
and sets lakestats' table-level statistics as its catalog statistics, as ``ANALYZE TABLE … FOR
ALL COLUMNS`` with histograms would: ``sizeInBytes`` (the data files' bytes), ``rowCount``,
and per column ``distinctCount``, ``min``, ``max``, ``nullCount``, ``avgLen``, ``maxLen`` and an
equi-height ``Histogram`` of ``spark.sql.statistics.histogram.numBins`` bins.

The statistics and their histograms are worked out in plain Python
(``lakestats.interop.spark_statistics``).

Only Parquet directories are covered: Delta, Iceberg, Hudi and Paimon tables need their
format's jars in Spark and are then v2 tables, whose statistics the session catalog cannot
set (SPARK-39420); a Parquet listing of their directories would read removed files. Iceberg
and Delta scans get the same statistics from lakestats' Spark component instead
(``jvm/``, fed by ``lakestats.interop.spark_statistics``).
Spark Connect has no JVM handle, so ``register`` needs a classic session.

``plan_statistics`` (also the CLI's ``--dry-run``) needs no Spark; py4j is confined to
``_create_table``, ``_set_statistics`` and ``_serialize_histogram``.
"""


from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass
from pathlib import Path

from lakestats.component_jar import jar_path  # noqa: F401 - public: the component's jar for spark.jars
from lakestats.errors import InvalidArgumentError, LakestatsError, UnsupportedFeatureError
from lakestats.interop.spark_statistics import (
    DEFAULT_BINS,
    ColumnStatistics,
    StoredLookups,
    catalog_columns,
    json_number,
)
from lakestats.options import MAX_BINS


@dataclass
class RegisteredStatistics:
    """What ``register`` set (or, dry, would set) for one table."""

    name: str
    location: str
    version: int
    snapshot_id: int | None
    size_in_bytes: int
    row_count: int
    columns: list[ColumnStatistics]
    skipped: dict[str, str]  # column -> why it got no statistics in Spark
    stale: bool = False

    def to_json(self) -> dict[str, object]:
        """JSON-ready: bins as lists, ±infinity as Spark writes it (``Infinity``)."""
        out = asdict(self)
        for column in out["columns"]:
            column["histogram_bins"] = [
                [json_number(b[0]), json_number(b[1]), b[2]] for b in column["histogram_bins"]
            ]
        return out


# -- the statistics, in plain Python ------------------------------------------------


NAME_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")  # what Hive's metastore accepts


def table_name(name: str) -> str:
    """``name`` (``table`` or ``db.table``) as quoted identifiers for Spark's parser, or one
    line saying what a Spark table name may be; names never reach Spark as SQL text."""
    parts = name.split(".")
    if not name or len(parts) > 2 or not all(NAME_PART.match(p) for p in parts):
        raise InvalidArgumentError(
            f"--name {name!r} is not a Spark table name: use table or db.table, each part "
            "letters, digits and _ (not starting with a digit), e.g. --name sales.orders"
        )
    return ".".join(f"`{p}`" for p in parts)



def plan_statistics(
    table,  # noqa: ANN001 - lakestats.api.LakestatsTable
    name: str,
    *,
    snapshot_id: int | None = None,
    num_bins: int = DEFAULT_BINS,
    spark_types: dict[str, str] | None = None,
) -> RegisteredStatistics:
    """lakestats' table-level statistics as Spark catalog statistics, without Spark.

    ``spark_types`` (column -> Spark type, from the Spark table) decides which columns Spark
    has (``catalog_columns``)."""
    if not 1 <= num_bins <= MAX_BINS:
        raise InvalidArgumentError(
            f"--bins (histogram bins) must be between 1 and {MAX_BINS}, got {num_bins}"
        )
    table_name(name)
    stats = table.table_statistics(snapshot_id)
    lookups = StoredLookups.of(table.store, stats.version)
    columns, skipped = catalog_columns(stats.columns, spark_types, lookups, num_bins)
    return RegisteredStatistics(
        name=name,
        location=table.format.location,
        version=stats.version,
        snapshot_id=stats.staleness.snapshot_id,
        size_in_bytes=lookups.data_bytes(),
        row_count=stats.row_count,
        columns=columns,
        skipped=skipped,
        stale=stats.stale,
    )


# -- the Spark side (py4j, classic sessions only) ------------------------------------


def register(
    spark,  # noqa: ANN001 - pyspark.sql.SparkSession
    table,  # noqa: ANN001 - lakestats.api.LakestatsTable
    name: str,
    *,
    snapshot_id: int | None = None,
) -> RegisteredStatistics:
    """Create (or reuse) the v1 table ``name`` over ``table``'s data and set lakestats'
    statistics as its catalog statistics. Returns what was set and what was skipped."""
    if getattr(spark, "_jsparkSession", None) is None:
        raise LakestatsError(
            "registering statistics needs a classic SparkSession (py4j); Spark Connect cannot "
            "set catalog statistics: use a classic session or lakestats' own lookups"
        )
    table_name(name)
    fmt = check_registrable(table, snapshot_id)
    _create_table(spark, name, fmt.location)
    record = plan_statistics(
        table,
        name,
        snapshot_id=snapshot_id,
        num_bins=int(spark.conf.get("spark.sql.statistics.histogram.numBins", "254")),
        spark_types=_spark_types(spark, name),
    )
    _mark_origin(spark, record)
    _set_statistics(spark, record)
    return record


def _mark_origin(spark, record: RegisteredStatistics) -> None:  # noqa: ANN001
    """Table properties naming the location and snapshot the statistics describe: lakestats'
    Spark component asks the service about Filters over the table by them (docs/spark.md)."""
    def literal(text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    snapshot = "" if record.snapshot_id is None else str(record.snapshot_id)
    spark.sql(
        f"ALTER TABLE {table_name(record.name)} SET TBLPROPERTIES ("
        f"'lakestats.location' = {literal(record.location)}, "
        f"'lakestats.snapshot' = {literal(snapshot)})"
    )


def check_registrable(table, snapshot_id: int | None):  # noqa: ANN001, ANN201
    """The table's format when its statistics can be registered; otherwise one line, before
    anything is created in Spark's catalog (or a Spark session is started)."""
    fmt = table.format
    if fmt.format_name != "parquet":
        raise UnsupportedFeatureError(
            f"cannot register a {fmt.format_name} table in Spark's session catalog: only "
            "Parquet directories become v1 tables; for Iceberg and Delta scans load lakestats' "
            "Spark component instead (spark.sql.extensions=io.lakestats.spark."
            "LakestatsExtensions, docs/spark.md)"
        )
    from lakestats.api import version_for_snapshot

    version_for_snapshot(table.store, fmt, snapshot_id)  # never analyzed
    return fmt


def _spark_location(location: str) -> str:
    return location if "://" in location else "file://" + location


def _create_table(spark, name: str, location: str) -> None:  # noqa: ANN001
    """``CREATE TABLE name USING parquet LOCATION …`` and its partitions; an existing table
    over the same location is reused, one over another location refused."""
    jsession = spark._jsparkSession
    quoted = table_name(name)
    ident = jsession.sessionState().sqlParser().parseTableIdentifier(quoted)
    catalog = jsession.sessionState().catalog()
    wanted = _spark_location(location).rstrip("/")
    if catalog.tableExists(ident):
        meta = catalog.getTableMetadata(ident)
        current = str(meta.location().toString()).rstrip("/")
        if current.replace("file:///", "file:/") != wanted.replace("file:///", "file:/"):
            raise InvalidArgumentError(
                f"Spark table {name} already exists over {current}, not {wanted}: "
                "drop it or register under another name"
            )
        return
    escaped = wanted.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"CREATE TABLE {quoted} USING parquet LOCATION '{escaped}'")
    if catalog.getTableMetadata(ident).partitionColumnNames().nonEmpty():
        spark.sql(f"ALTER TABLE {quoted} RECOVER PARTITIONS")


def _spark_types(spark, name: str) -> dict[str, str]:  # noqa: ANN001
    from pyspark.sql import types as T

    simple = {T.ByteType: "byte", T.ShortType: "short", T.IntegerType: "int",
              T.LongType: "long", T.FloatType: "float", T.DoubleType: "double",
              T.DecimalType: "decimal", T.DateType: "date", T.TimestampType: "timestamp",
              T.TimestampNTZType: "timestamp_ntz", T.BooleanType: "boolean",
              T.StringType: "string", T.BinaryType: "binary"}  # fmt: skip
    out = {}
    for spark_field in spark.table(table_name(name)).schema.fields:
        out[spark_field.name] = simple.get(type(spark_field.dataType))
    return {k: v for k, v in out.items() if v is not None}


def _set_statistics(spark, record: RegisteredStatistics) -> None:  # noqa: ANN001
    """``SessionCatalog.alterTableStats`` with a ``CatalogStatistics`` built JVM-side
    (``CatalogColumnStat.fromMap`` parses Spark's own external forms; ``BigInt`` options come
    from parsing too, as py4j turns Scala ``BigInt`` into Python ``int``)."""
    jvm, jsession = spark._jvm, spark._jsparkSession
    catalog = jsession.sessionState().catalog()
    ident = jsession.sessionState().sqlParser().parseTableIdentifier(table_name(record.name))
    stat_class = jvm.org.apache.spark.sql.catalyst.catalog.CatalogColumnStat
    to_scala = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap

    def scala_map(entries: dict) -> object:
        java = jvm.java.util.HashMap()
        for key, value in entries.items():
            java.put(key, value)
        return to_scala(java)

    def big_int_option(number: int) -> object:  # Option[BigInt]
        parsed = stat_class.fromMap("t", "c", scala_map({"c.version": "2",
                                                         "c.distinctCount": str(number)}))
        return parsed.get().distinctCount()

    column_stats = jvm.java.util.HashMap()
    for column in record.columns:
        entries = column.spark_map()
        if column.histogram_bins:
            entries[f"{column.name}.histogram"] = _serialize_histogram(spark, column)
        parsed = stat_class.fromMap(record.name, column.name, scala_map(entries))
        column_stats.put(column.name, parsed.get())
    args = jvm.java.util.ArrayList()
    # the BigInt itself, kept JVM-side (``.get()`` would hand Python an int)
    args.addAll(
        jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            big_int_option(record.size_in_bytes).toList()
        )
    )
    args.add(big_int_option(record.row_count))
    args.add(to_scala(column_stats))
    constructor = jvm.java.lang.Class.forName(
        "org.apache.spark.sql.catalyst.catalog.CatalogStatistics"
    ).getConstructors()[0]
    statistics = constructor.newInstance(args.toArray())
    catalog.alterTableStats(ident, jvm.scala.Option.apply(statistics))


def _serialize_histogram(spark, column: ColumnStatistics) -> str:  # noqa: ANN001
    """``HistogramSerializer.serialize``'s string: the bins written as its ``DataOutputStream``
    writes them (height, count, all lo, all hi, all ndv, -1), LZ4-framed and base64-encoded
    JVM-side with the same classes, in a handful of py4j calls rather than one per bin."""
    bins = column.histogram_bins
    payload = struct.pack(">di", column.histogram_height, len(bins))
    payload += struct.pack(f">{len(bins)}d", *(b[0] for b in bins))
    payload += struct.pack(f">{len(bins)}d", *(b[1] for b in bins))
    payload += struct.pack(f">{len(bins)}q", *(b[2] for b in bins))
    payload += struct.pack(">i", -1)
    jvm = spark._jvm
    buffer = jvm.java.io.ByteArrayOutputStream()
    stream = jvm.net.jpountz.lz4.LZ4BlockOutputStream(buffer)
    stream.write(bytearray(payload))
    stream.close()
    return jvm.java.util.Base64.getEncoder().encodeToString(buffer.toByteArray())


def hive_session(metastore: str):  # noqa: ANN201 - pyspark.sql.SparkSession
    """A local session whose catalog is a Hive metastore in Derby under ``metastore``: unlike
    the in-memory catalog, it keeps tables and their statistics (as ``spark.sql.statistics.*``
    table properties) for every later session pointed at the same directory."""
    from lakestats import config
    from lakestats.compute.session import local_session

    home = metastore_dir(metastore)
    return local_session(
        config.settings().spark_master or "local[2]",
        app_name="lakestats-spark-register",
        settings={
            "spark.sql.warehouse.dir": str(home / "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
            ),
        },
        java_options=f"-Dderby.system.home={home}",
        hive=True,
        hint="a Hive metastore needs Java 17; use --dry-run to see the statistics, or call "
        "lakestats.spark.register from your own session",
    )


def metastore_dir(metastore: str) -> Path:
    """The metastore's directory, created if missing; one line when it cannot be one."""
    home = Path(metastore).resolve()
    if home.exists() and not home.is_dir():
        raise InvalidArgumentError(
            f"--metastore {metastore} is a file: pass a directory for the Hive (Derby) "
            "metastore (it is created if missing)"
        )
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgumentError(
            f"--metastore {metastore} cannot be created ({exc.strerror}): pass a writable "
            "directory"
        ) from None
    return home


def register_command(
    table,  # noqa: ANN001 - lakestats.api.LakestatsTable
    name: str,
    *,
    metastore: str,
    snapshot_id: int | None = None,
    dry_run: bool = False,
    num_bins: int = DEFAULT_BINS,
) -> dict[str, object]:
    """``lakestats spark-register``: registers into the persistent metastore, or (dry) only
    works out the statistics, without Spark."""
    table_name(name)
    check_registrable(table, snapshot_id)  # what a real run refuses, a dry run refuses too
    if dry_run:
        return plan_statistics(table, name, snapshot_id=snapshot_id, num_bins=num_bins).to_json()
    if not 1 <= num_bins <= MAX_BINS:
        raise InvalidArgumentError(f"--bins must be between 1 and {MAX_BINS}, got {num_bins}")
    metastore_dir(metastore)  # before a JVM starts
    spark = hive_session(metastore)
    try:
        record = register(spark, table, name, snapshot_id=snapshot_id)
    finally:
        spark.stop()
    return {**record.to_json(), "metastore": str(metastore)}
