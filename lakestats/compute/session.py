"""The SparkSession lakestats uses when the caller does not bring one."""

from __future__ import annotations

import functools
import os
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from lakestats.errors import InvalidArgumentError


def get_spark(master: str | None = None, remote: str | None = None) -> SparkSession:
    """The active session, or a local one (``LAKESTATS_SPARK_MASTER``, default local[*]).

    ``remote`` (or ``LAKESTATS_SPARK_REMOTE`` when no ``master`` is given), an
    ``sc://host:port`` URL, makes a Spark Connect session instead (``connect_session``).
    Python workers run the interpreter of the driver, so executors import the same
    lakestats and pyarrow.
    """
    if remote is None and master is None:
        remote = os.environ.get("LAKESTATS_SPARK_REMOTE") or None
    if remote is not None:
        return connect_session(remote)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master or os.environ.get("LAKESTATS_SPARK_MASTER", "local[*]"))
        .appName("lakestats")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", os.environ.get("LAKESTATS_DRIVER_MEMORY", "4g"))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.python.worker.reuse", "true")
        # TCP between executor and Python worker stalls 40 ms per task (Nagle + delayed ACK
        # on the small input batch); Unix sockets do not, and workers are always local
        .config("spark.python.unix.domain.socket.enabled", str(os.name == "posix").lower())
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def connect_session(remote: str) -> SparkSession:
    """A Spark Connect session on ``remote`` (``sc://host:port``).

    The job's Python functions run in the server's Python workers: the server (its
    executors) must import the same lakestats and pyarrow as this client, and the
    cluster-level settings of ``get_spark`` (memory, sockets) are the server's to make;
    only SQL settings travel with the session.
    """
    if not remote.startswith("sc://"):
        raise InvalidArgumentError(
            f"--remote expects a Spark Connect URL such as sc://host:15002, got {remote!r}"
        )
    return (
        SparkSession.builder.remote(remote)
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .getOrCreate()
    )


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext, no py4j)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's dependencies (grpcio, ...) are not installed
        return False
    return isinstance(spark, ConnectSession)


def default_parallelism(spark: SparkSession) -> int:
    """The cluster's task slots as the classic session knows them; a Connect client cannot
    ask (no SparkContext), so it uses ``spark.default.parallelism`` when the server sets it,
    else the shuffle partitions."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    return int(configured or spark.conf.get("spark.sql.shuffle.partitions") or 2)


@functools.cache
def result_schema(ddl: str) -> StructType:
    """The ``StructType`` of a DDL string, parsed once per process: ``mapInArrow`` given the
    string parses it on the JVM on every call (a py4j round trip, ~4 ms per job here)."""
    schema = StructType.fromDDL(ddl)
    assert isinstance(schema, StructType)
    return schema


def collect_small(frame: DataFrame) -> list[dict]:
    """A small result as dicts: through Arrow, cheaper than ``collect()``'s Rows (a one-row
    job here: ~10 ms less)."""
    return frame.toArrow().to_pylist()
