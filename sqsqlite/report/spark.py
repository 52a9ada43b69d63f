"""The PySpark job: read a snapshot over JDBC in partitions and compute the report's figures.

The definitions live in :mod:`sqsqlite.report.figures`; this module computes the same numbers
with Spark's DataFrame API, in integer arithmetic only, so they equal the oracle's exactly.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager, suppress

from ..command_options import install_extra
from . import archive as A
from . import history as H
from . import tempdir
from .figures import (
    AGE_EDGES_MS,
    AGE_LABELS,
    DAY_MS,
    HOUR_MS,
    PERCENTILES,
    GroupFigures,
    Report,
    TopMessage,
    finish,
    new_queues,
    noisy,
)
from .snapshot import Snapshot, file_uri

DEFAULT_JAR = "/usr/share/java/sqlite-jdbc.jar"
JAR_ENV = "SQSQLITE_JDBC_JAR"
MAVEN_PACKAGE = "org.xerial:sqlite-jdbc:3.46.1.3"
INSTALL_DRIVER = "install the SQLite JDBC driver: `apt-get install libxerial-sqlite-jdbc-java` (or `make jdbc`), or pass --jdbc-jar PATH"
JAVA_PACKAGE = "install Java 17 or later (e.g. `apt-get install openjdk-17-jre-headless`)"
INSTALL_JAVA = f"{JAVA_PACKAGE} or set JAVA_HOME"

# Rows per JDBC partition when --partitions is not given: enough tasks to keep both cores busy
# and each task's fetch small, few enough that task overhead stays negligible.
ROWS_PER_PARTITION = 500_000
MAX_PARTITIONS = 64

# Forced column types for the JDBC reads. The SQLite driver reports BIGINT as an unsigned
# decimal(20,0) and INTEGER as a 32-bit int (a timestamp in an INTEGER column would silently
# lose its high bits), so every integer is read as a 64-bit long.
MESSAGE_TYPES = "id BIGINT, queue_id BIGINT, sent_at BIGINT, visible_at BIGINT, receive_count BIGINT, sequence_number BIGINT"
QUEUE_TYPES = "id BIGINT, fifo BIGINT, retention_period BIGINT"
HISTORY_TYPES = ", ".join(f"{c} BIGINT" for c in ["id", *H.HISTORY_COLUMNS.split(", ")])
ARCHIVE_TYPES = ", ".join(f"{c} BIGINT" for c in ["id", *A.ARCHIVE_COLUMNS.split(", ")] if c != "how")

VISIBLE, IN_FLIGHT, DELAYED = 0, 1, 2
STATE_NAMES = ("visible", "in_flight", "delayed")


class SetupError(Exception):
    """Spark can't run the report here; the message is one line saying what to install."""


def java_command() -> str | None:
    """The java Spark's launcher runs: JAVA_HOME's whenever JAVA_HOME is set (it never falls
    back to the PATH's then, so one without a java is a SetupError naming it), else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    if not home:  # empty counts as unset, as the launcher's `[ -n "$JAVA_HOME" ]` has it
        return shutil.which("java")
    java = os.path.join(home, "bin", "java")
    wrong = _no_java_in(home, java)
    if wrong:
        on_path = shutil.which("java")
        instead = f"unset it to use {on_path}" if on_path else f"unset it and {JAVA_PACKAGE}"
        raise SetupError(
            f"JAVA_HOME={home} holds no java ({wrong}), and Spark runs JAVA_HOME's java whenever it is set: "
            f"point JAVA_HOME at a Java 17 or later installation (the directory above bin/java), or {instead}"
        )
    return java


def _no_java_in(home: str, java: str) -> str | None:
    """What keeps ``java`` under ``home`` from running, in the OS's words; None when nothing does."""
    try:
        if not os.path.isdir(home):
            os.stat(home)  # the OS's reason when the path is not there at all
            return f"{home} is not a directory"
        os.stat(java)
    except OSError as exc:
        return f"{exc.filename}: {exc.strerror}"
    if not os.path.isfile(java) or not os.access(java, os.X_OK):
        return f"{java} is not an executable file"
    return None


def python_for_workers(environ) -> str | None:
    """The Python the user told Spark its workers run, or None: PYSPARK_PYTHON, or
    spark.pyspark.python in the spark-defaults.conf of SPARK_CONF_DIR or SPARK_HOME/conf."""
    if environ.get("PYSPARK_PYTHON"):
        return environ["PYSPARK_PYTHON"]
    folders = [environ.get("SPARK_CONF_DIR"), environ.get("SPARK_HOME") and os.path.join(environ["SPARK_HOME"], "conf")]
    for folder in filter(None, folders):
        try:
            with open(os.path.join(folder, "spark-defaults.conf"), encoding="utf-8") as conf:
                for line in conf:  # a Java properties file: key, then whitespace, "=" or ":", then value
                    key, _, value = re.sub(r"\s*[=:]\s*|\s+", " ", line.strip(), count=1).partition(" ")
                    if key == "spark.pyspark.python" and value:
                        return value
        except OSError:
            continue
    return None


def resolve_jar(explicit: str | None) -> str | None:
    """The driver jar to put on Spark's class path; None means fetch it from Maven."""
    if explicit:
        if not os.path.isfile(explicit):
            raise SetupError(f"no SQLite JDBC driver at {explicit}: {INSTALL_DRIVER}")
        return os.path.abspath(explicit)
    return DEFAULT_JAR if os.path.isfile(DEFAULT_JAR) else None


@contextmanager
def _pyspark_python(python: str | None):
    """PYSPARK_PYTHON set to ``python`` while the session starts (its SparkContext reads it then,
    once, for every Python worker), and as it was afterwards."""
    if python is None:
        yield
        return
    was = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = python
    try:
        yield
    finally:
        if was is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = was


@contextmanager
def _stderr_to(path: str | None):
    """Point file descriptor 2 at ``path`` while the JVM starts: the JVM inherits it and logs
    there for its whole life, which keeps Spark's noise out of the terminal."""
    if path is None:
        yield
        return
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def get_session(master: str = "local[*]", jar: str | None = None, verbose: bool = False, driver_memory: str = "2g", jdbc: bool = True):
    """The running SparkSession, or a new one with the SQLite JDBC driver on its class path
    (without ``jdbc``, for a snapshot read from Parquet, none). Returns (session, created)."""
    if java_command() is None:
        raise SetupError(f"Java is needed for the report: {INSTALL_JAVA}")
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SetupError(f"pyspark is needed for the report: {install_extra('spark')}") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    builder = (
        SparkSession.builder.master(master)
        .appName("sqsqlite-report")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true" if verbose else "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if jdbc:
        builder = builder.config("spark.jars", jar) if jar else builder.config("spark.jars.packages", MAVEN_PACKAGE)
    # Spark's Python workers run PYSPARK_PYTHON, else the `python3` on PATH: another version than
    # this one when the virtual environment is not activated (a cron job or a service runs
    # .venv/bin/sqsqlite), and the job fails on PYTHON_VERSION_MISMATCH. Locally they run this
    # Python, unless the user's own setting says otherwise. (On a cluster this path may not
    # exist on the workers: there the user's setting, or the workers' python3, stands.)
    ours = master.startswith("local") and python_for_workers(os.environ) is None
    if ours:
        builder = builder.config("spark.pyspark.python", sys.executable)
    if master.startswith("local"):
        # Spark's scratch space (shuffle files, spills) where the report's own files go: TMPDIR's
        # directory, not /tmp whatever TMPDIR says. (On a cluster each worker keeps its own.)
        builder = builder.config("spark.local.dir", tempfile.gettempdir())
    log = None
    try:
        tempdir.check_room()
        if not verbose:  # a name no other user can take first, as in a shared /tmp they could
            fd, log = tempfile.mkstemp(prefix="sqsqlite-report-spark-", suffix=".log")
            os.close(fd)
    except OSError as exc:
        raise SetupError(tempdir.trouble(exc.strerror or str(exc))) from None
    try:
        with _stderr_to(log), _pyspark_python(sys.executable if ours else None):
            spark = builder.getOrCreate()
    except Exception as exc:  # the gateway's own error says nothing useful; the log does
        where = f" (Spark's log: {log})" if log else ""
        if jdbc and jar is None:
            raise SetupError(
                f"the SQLite JDBC driver is not installed and could not be fetched from Maven{where}: {INSTALL_DRIVER}"
            ) from None
        raise SetupError(f"Spark did not start{where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if log:
        # Kept only when Spark failed to start (the error above names it); else one file per
        # run would pile up in the temp directory. The JVM may write to it until this process
        # ends, so it goes then.
        atexit.register(_remove_quietly, log)
    if not verbose:
        spark.sparkContext.setLogLevel("ERROR")
        # pyspark logs a failed query's context, its Java stack included, through loggers of
        # its own that reach stderr whatever the level above; the error itself is said in one line.
        for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
            logging.getLogger(name).disabled = True
    return spark, True


def _remove_quietly(path: str) -> None:
    with suppress(OSError):
        os.remove(path)


def _read(spark, snap: Snapshot, table: str, types: str, partitions: int | None = None, ids: tuple[int, int] = (0, 0)):
    if snap.parquet:  # written for a cluster: typed already, one file per million messages
        return spark.read.parquet(local_uri(os.path.join(snap.parquet, table)))
    url = "jdbc:sqlite:" + file_uri(snap.path, "ro")
    props = {"driver": "org.sqlite.JDBC", "customSchema": types, "fetchsize": "10000"}
    # Each partition is one range scan on the rowid, over ``ids`` (first, last): WHERE id >= a
    # AND id < b. The copy numbers its rows 1..n (snapshot.py), so the ranges hold equal shares.
    ranges = {} if partitions is None else {"column": "id", "lowerBound": ids[0], "upperBound": ids[1] + 1, "numPartitions": partitions}
    try:
        return spark.read.jdbc(url, table, properties=props, **ranges)
    except Exception as exc:  # the JVM's whole stack otherwise: a jar that is not the driver
        if "ClassNotFoundException" in str(exc) and "org.sqlite.JDBC" in str(exc):
            raise SetupError(f"the SQLite JDBC driver could not be loaded from the jar given: {INSTALL_DRIVER}") from None
        raise


_GLOB = re.compile(r"[\\\[\]{}*?]")  # Hadoop reads these in a path as a glob pattern: escaped


def local_uri(path: str) -> str:
    """A ``file://`` URI for a local path. Spark resolves a bare path against its default file
    system, which on a cluster is often HDFS, not the shared mount the snapshot is on. Hadoop
    quotes the path itself, so it goes in unquoted (``%20`` would become ``%2520``)."""
    return "file://" + _GLOB.sub(r"\\\g<0>", os.path.abspath(path))


def _partitions(rows: int) -> int:
    return max(1, min(MAX_PARTITIONS, math.ceil(rows / ROWS_PER_PARTITION)))


def default_partitions(snap: Snapshot) -> int:
    return _partitions(snap.messages)


def read_messages(spark, snap: Snapshot, partitions: int | None = None):
    """The snapshot's messages as a DataFrame, read in ``partitions`` id ranges."""
    return _read(spark, snap, "messages", MESSAGE_TYPES, partitions or default_partitions(snap), (snap.min_id, snap.max_id))


def compute(spark, snap: Snapshot, top: int = 5, partitions: int | None = None, database: str | None = None) -> Report:
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    as_of = snap.as_of_ms
    qrows = [r.asDict() for r in _read(spark, snap, "queues", QUEUE_TYPES).collect()]
    figs = new_queues(qrows)
    qname = {r["id"]: r["name"] for r in qrows}
    since, until = snap.history_since_ms, snap.history_until_ms
    result = Report(
        database or snap.path,
        as_of,
        top,
        [],
        since,
        until,
        H.step_for(since, until),
        history_retention_s=snap.history_retention_s,
        archive_queues=snap.archive_queues,
    )
    if not qrows:
        return result

    queues = spark.createDataFrame(
        [(r["id"], r["retention_period"] * 1000, int(bool(r["fifo"]))) for r in qrows],
        "queue_id BIGINT, retention_ms BIGINT, fifo INT",
    )
    messages = read_messages(spark, snap, partitions)
    age = F.lit(as_of) - F.col("sent_at")
    live = (
        messages.join(F.broadcast(queues), "queue_id")
        .where(F.col("sent_at") > F.lit(as_of) - F.col("retention_ms"))
        .select(
            "id",
            "queue_id",
            "fifo",
            "receive_count",
            "group_id",
            F.col("sequence_number").isNull().alias("unsequenced"),
            age.alias("age"),
            # Its expiry, sent_at + retention, as the age it is reached at: that sum overflows a
            # long (Spark's ANSI mode fails the job) for an imported SentTimestamp near 2^63.
            F.col("retention_ms").alias("expires_at_age"),
            F.when(F.col("visible_at") <= as_of, VISIBLE).when(F.col("receive_count") > 0, IN_FLIGHT).otherwise(DELAYED).alias("state"),
            F.substring_index("dead_letter_source_arn", ":", -1).alias("dead_letter_source"),
        )
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        _per_queue(F, live, as_of, figs, qname)
        _percentiles(F, Window, live, figs, qname)
        _receive_counts(F, Window, live, messages, figs, qname, top)
        _dead_lettered_from(F, live, figs, qname)
        _groups(F, live, figs, qname)
        _fair(spark, F, live, figs, qname)
    finally:
        live.unpersist()
    result.queues = finish(figs)
    result.history = _history(spark, F, snap, qname)
    result.archive = _archive(spark, F, Window, snap, qname)
    return result


def _archive(spark, F, Window, snap: Snapshot, qname) -> list:
    """The archive's figures (archive.py): Spark reduces the window's archived rows to a row per
    queue and hour and one per queue; the driver finishes from those."""
    if not snap.archive_rows:
        return []
    frame = _read(spark, snap, "message_archive", ARCHIVE_TYPES, _partitions(snap.archive_rows), (1, snap.archive_rows))
    rows = A.spark_rows(F, Window, frame, snap.history_since_ms, snap.history_until_ms)
    return A.finish(qname, rows, snap.history_since_ms, snap.history_until_ms)


def _history(spark, F, snap: Snapshot, qname) -> list:
    """The history figures (history.py): Spark reduces the window's minute rows to a row per
    queue and step and one per queue; the driver finishes from those."""
    if not snap.history_rows:
        return []
    frame = _read(spark, snap, "queue_history", HISTORY_TYPES, _partitions(snap.history_rows), (1, snap.history_rows))
    step_rows, hour_rows = H.spark_rows(F, frame, snap.history_since_ms, snap.history_until_ms)
    return H.finish(qname, step_rows, hour_rows, snap.history_since_ms, snap.history_until_ms)


def _count(F, cond):
    return F.sum(F.when(cond, 1).otherwise(0))


def _per_queue(F, live, as_of, figs, qname):
    bucket = sum((F.col("age") >= edge).cast("int") for edge in AGE_EDGES_MS)
    aggs = [_count(F, F.col("state") == s).alias(STATE_NAMES[s]) for s in (VISIBLE, IN_FLIGHT, DELAYED)]
    aggs += [
        F.max("age").alias("oldest"),
        _count(F, F.col("age") >= F.col("expires_at_age") - HOUR_MS).alias("exp1h"),
        _count(F, F.col("age") >= F.col("expires_at_age") - DAY_MS).alias("exp24h"),
    ]
    aggs += [_count(F, bucket == i).alias(f"b{i}") for i in range(len(AGE_LABELS))]
    for r in live.groupBy("queue_id").agg(*aggs).collect():
        f = figs[qname[r["queue_id"]]]
        f.visible, f.in_flight, f.delayed = r["visible"], r["in_flight"], r["delayed"]
        f.oldest_age_ms = r["oldest"]
        f.expiring_1h, f.expiring_24h = r["exp1h"], r["exp24h"]
        f.age_histogram = [r[f"b{i}"] for i in range(len(AGE_LABELS))]


def _percentiles(F, Window, live, figs, qname):
    # Nearest rank, in integers: rank ceil(p*n/100) = (p*n + 99) div 100 of the ages sorted
    # ascending. Ties in age share a value, so which of the tied rows gets the rank is moot.
    n = live.groupBy("queue_id").agg(F.count(F.lit(1)).alias("n"))
    ranks = n.select("queue_id", *[F.expr(f"(n * {p} + 99) div 100").alias(f"k{p}") for p in PERCENTILES])
    by_age = Window.partitionBy("queue_id").orderBy("age")
    ranked = live.select("queue_id", "age", F.row_number().over(by_age).alias("rn")).join(F.broadcast(ranks), "queue_id")
    hits = ranked.where(F.col("rn").isin(*[F.col(f"k{p}") for p in PERCENTILES]))
    for r in hits.collect():
        f = figs[qname[r["queue_id"]]]
        for p in PERCENTILES:
            if r["rn"] == r[f"k{p}"]:
                setattr(f, f"age_p{p}_ms", r["age"])


def _receive_counts(F, Window, live, messages, figs, qname, top):
    for r in live.groupBy("queue_id", "receive_count").count().collect():
        figs[qname[r["queue_id"]]].receive_counts[r["receive_count"]] = r["count"]
    for f in figs.values():
        f.receive_counts = dict(sorted(f.receive_counts.items()))
    if top <= 0:
        return
    order = Window.partitionBy("queue_id").orderBy(F.col("receive_count").desc(), F.col("id"))
    rows = (
        live.where(F.col("receive_count") > 0)
        .select("id", "queue_id", "receive_count", "age", "state", F.row_number().over(order).alias("rn"))
        .where(F.col("rn") <= top)
        .collect()
    )
    # Message ids are long strings needed for a handful of rows: fetch just those.
    ids = {}
    if rows:
        wanted = [r["id"] for r in rows]
        ids = {r["id"]: r["message_id"] for r in messages.where(F.col("id").isin(wanted)).select("id", "message_id").collect()}
    for r in sorted(rows, key=lambda r: (r["queue_id"], r["rn"])):
        figs[qname[r["queue_id"]]].top_received.append(TopMessage(ids[r["id"]], r["receive_count"], r["age"], STATE_NAMES[r["state"]]))


def _dead_lettered_from(F, live, figs, qname):
    rows = live.where(F.col("dead_letter_source").isNotNull()).groupBy("queue_id", "dead_letter_source").count().collect()
    for r in sorted(rows, key=lambda r: r["dead_letter_source"]):
        figs[qname[r["queue_id"]]].dead_lettered_from[r["dead_letter_source"]] = r["count"]


def _groups(F, live, figs, qname):
    aggs = [_count(F, F.col("state") == s).alias(STATE_NAMES[s]) for s in (VISIBLE, IN_FLIGHT, DELAYED)]
    rows = (
        live.where((F.col("fifo") == 1) & F.col("group_id").isNotNull())
        .groupBy("queue_id", "group_id")
        .agg(*aggs, F.count(F.lit(1)).alias("backlog"), F.max("age").alias("oldest"))
        .collect()
    )
    for r in sorted(rows, key=lambda r: (-r["backlog"], r["group_id"])):
        figs[qname[r["queue_id"]]].groups.append(
            GroupFigures(r["group_id"], r["visible"], r["in_flight"], r["delayed"], r["backlog"], r["oldest"])
        )


def _fair(spark, F, live, figs, qname):
    """Fair queues' figures (figures.py has the definitions). The noisy groups are few (each
    holds over a tenth of its queue's messages in flight), so they are decided on the driver
    and the quiet figures aggregated over the messages outside them."""
    fair_rows = live.where((F.col("fifo") == 0) & F.col("group_id").isNotNull() & F.col("unsequenced"))
    flying = fair_rows.where(F.col("state") == IN_FLIGHT).groupBy("queue_id", "group_id").count().collect()
    by_queue: dict[int, dict[str, int]] = {}
    for r in flying:
        by_queue.setdefault(r["queue_id"], {})[r["group_id"]] = r["count"]
    loud = [(q, g) for q, groups in by_queue.items() for g in sorted(noisy(groups, figs[qname[q]].in_flight))]
    for q, _ in loud:
        figs[qname[q]].noisy_groups += 1
    quiet = live
    if loud:
        marks = spark.createDataFrame(loud, "queue_id BIGINT, group_id STRING").withColumn("loud", F.lit(True))
        quiet = (
            live.join(F.broadcast(marks), ["queue_id", "group_id"], "left")
            .where(F.col("loud").isNull() | (F.col("fifo") == 1) | ~F.col("unsequenced"))
            .drop("loud")
        )
    aggs = [_count(F, F.col("state") == s).alias(STATE_NAMES[s]) for s in (VISIBLE, IN_FLIGHT, DELAYED)]
    for r in quiet.groupBy("queue_id").agg(*aggs, F.max("age").alias("oldest")).collect():
        f = figs[qname[r["queue_id"]]]
        f.visible_in_quiet_groups, f.in_flight_in_quiet_groups, f.delayed_in_quiet_groups = r["visible"], r["in_flight"], r["delayed"]
        f.oldest_age_in_quiet_groups_ms = r["oldest"]
