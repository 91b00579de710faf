"""The SparkSession lakestats uses when the caller does not bring one.

A session lakestats starts keeps Spark's own output off the terminal: the JVM logs through a
log4j2 configuration that writes to a file (``spark_log_path()``), and the JVM's stderr (its
own warnings, the Python worker daemons' tracebacks, which inherit it) goes to the same file.
``LAKESTATS_SPARK_LOG`` chooses the file (default: a new file under the temp directory).
Master, remote, driver memory and extra Spark settings (``--spark-conf``) come from
``lakestats.config.settings()``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
import time
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from lakestats import config
from lakestats.compute.connect_workers import is_connect, ship
from lakestats.errors import InvalidArgumentError
from lakestats.spark_errors import starting_spark

_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""

_log_path: str | None = None


def spark_log_path() -> str | None:
    """The file Spark's logs of the session lakestats started go to (None: none started)."""
    return _log_path


def _new_log_path() -> str:
    chosen = config.settings().spark_log
    if chosen:
        return os.path.abspath(chosen)
    directory = os.path.join(tempfile.gettempdir(), "lakestats-logs")
    os.makedirs(directory, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return os.path.join(directory, f"spark-{stamp}-{os.getpid()}.log")


def _log4j2_config(log_path: str) -> str:
    """A log4j2 properties file next to the log that sends every logger to it."""
    config = log_path + ".log4j2.properties"
    escaped = log_path.replace("\\", "/")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(_LOG4J2.format(path=escaped))
    return config


@contextlib.contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    """File descriptor 2 points at ``path`` inside the block, so the JVM launched in it (and
    the Python workers it forks later) inherit the file, not the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


@contextlib.contextmanager
def quiet_jvm() -> Iterator[str]:
    """For a JVM started in the block: a new log file (``spark_log_path``) takes its stderr
    (the launcher's ``Using incubator modules``, the Python worker daemons' tracebacks) and,
    through the yielded ``-D`` option for ``spark.driver.extraJavaOptions``, log4j."""
    global _log_path
    _log_path = _new_log_path()
    with _stderr_to(_log_path):
        yield f"-Dlog4j2.configurationFile=file:{_log4j2_config(_log_path)}"


WORKER_ALLOCATOR = {
    "MALLOC_MMAP_THRESHOLD_": str(256 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(512 << 20),
}
"""The Python workers' C allocator (glibc; others ignore these): NumPy's temporary arrays
of a partition's columns (megabytes each) come from its heap instead of freshly mapped
pages faulted in one by one, and up to 512 MiB freed stays for the next (a scale-10
lineitem partition's statistics: 183 -> 157 ms; its partition-level analyze 13.3-13.9 ->
12.4-12.7 s). Set on the sessions lakestats starts, as executor environment; a cluster's
own sessions can set the same (``--spark-conf spark.executorEnv.MALLOC_MMAP_THRESHOLD_=…``)."""


def get_spark(master: str | None = None, remote: str | None = None) -> SparkSession:
    """The active session, or a local one (setting ``spark_master``, default local[*]).

    ``remote`` (or the ``spark_remote`` setting when no ``master`` is given), an
    ``sc://host:port`` URL, makes a Spark Connect session instead (``connect_session``).
    Python workers run the interpreter of the driver, so executors import the same
    lakestats and pyarrow. The ``spark_conf`` setting (``--spark-conf k=v``) is applied
    after lakestats' own settings, so it can override them.
    """
    chosen = config.settings()
    if remote is None and master is None:
        remote = chosen.spark_remote
    if remote is not None:
        session = connect_session(remote, chosen.spark_conf)
        if chosen.ship_lakestats:
            ship(session)
        return session
    running = running_session()
    if running is not None:
        return running
    return local_session(master or chosen.spark_master or "local[*]")


def running_session() -> SparkSession | None:
    """A session this process already runs, used as it is (no builder, no settings: a
    10-row analyze from Python costs its job, not another session's start): this thread's
    active session, else the default session another thread built (PySpark's
    ``getActiveSession`` is per thread); None when there is none or it was stopped."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    default = getattr(SparkSession, "_instantiatedSession", None)
    context = getattr(default, "_sc", None)
    if default is None or context is None or getattr(context, "_jsc", None) is None:
        return None
    return default


def local_session(
    master: str,
    *,
    app_name: str = "lakestats",
    settings: dict[str, str] | None = None,
    java_options: str = "",
    hive: bool = False,
    hint: str = "lakestats needs Java 17",
) -> SparkSession:
    """The one place lakestats builds a local (or standalone-master) session: its own
    settings (no UI, Unix sockets to the Python workers, the driver's interpreter on the
    workers), a quiet JVM (log4j and the JVM's stderr into ``spark_log_path()``), then
    ``settings`` of the caller (``spark-register``'s Hive metastore), then ``--spark-conf``.
    A JVM that does not start is one line naming the log, with ``hint``."""
    chosen = config.settings()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.pop("SPARK_PRINT_LAUNCH_COMMAND", None)
    with quiet_jvm() as quiet:
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.driver.memory", chosen.driver_memory)
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
            .config("spark.python.worker.reuse", "true")
            # TCP between executor and Python worker stalls 40 ms per task (Nagle + delayed
            # ACK on the small input batch); Unix sockets do not, and workers are local
            .config("spark.python.unix.domain.socket.enabled", str(os.name == "posix").lower())
            .config("spark.driver.extraJavaOptions", f"{java_options} {quiet}".strip())
        )
        for key, value in WORKER_ALLOCATOR.items():
            builder = builder.config(f"spark.executorEnv.{key}", value)
        for key, value in [*(settings or {}).items(), *chosen.spark_conf]:
            builder = builder.config(key, value)
        if hive:
            builder = builder.enableHiveSupport()
        with starting_spark(_log_path, hint):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def connect_session(remote: str, conf: tuple[tuple[str, str], ...] = ()) -> SparkSession:
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
    builder = (
        SparkSession.builder.remote(remote)
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
    )
    for key, value in conf:  # --spark-conf: only SQL settings reach a Connect server
        builder = builder.config(key, value)
    return builder.getOrCreate()


def default_parallelism(spark: SparkSession) -> int:
    """The cluster's task slots as the classic session knows them; a Connect client cannot
    ask (no SparkContext), so it uses ``spark.default.parallelism`` when the server sets it,
    else the shuffle partitions."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    return int(configured or spark.conf.get("spark.sql.shuffle.partitions") or 2)


@functools.cache
def result_schema(ddl: str) -> StructType | str:
    """The ``StructType`` of a DDL string, parsed once per process: ``mapInArrow`` given the
    string parses it on the JVM on every call (a py4j round trip, ~4 ms per job here).
    PySpark 3.5 has no ``fromDDL``: there the string itself is the schema."""
    if not hasattr(StructType, "fromDDL"):
        return ddl
    schema = StructType.fromDDL(ddl)
    assert isinstance(schema, StructType)
    return schema


def collect_small(frame: DataFrame) -> list[dict]:
    """A small result as dicts: through Arrow, cheaper than ``collect()``'s Rows (a one-row
    job here: ~10 ms less); PySpark 3.5 has no ``toArrow``: its Rows there."""
    if not hasattr(frame, "toArrow"):
        return [row.asDict(recursive=True) for row in frame.collect()]
    return frame.toArrow().to_pylist()
