"""``sqsqlite report``: backlog analytics on Spark, reading a snapshot of the database over JDBC.

The main ``sqsqlite`` group registers this command with ``main.add_command(report)``; it also
runs on its own: ``python -m sqsqlite.report.cli --db app.db``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from datetime import datetime, timedelta, timezone

import click
from click.core import ParameterSource

from .. import command_options
from .. import defaults as D
from .. import validation as V
from . import render, snapshot, tempdir
from .spark import JAR_ENV, SetupError, compute, get_session, resolve_jar

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)
# What the report can print as a date: 1970 to the end of 9999 (datetime's last year).
AS_OF_RANGE = (0, (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc) - _EPOCH) // _MS)
_DIGITS = re.compile(r"-?[0-9]+")  # ASCII only: int() would take '²' or '٣'
_RAISED = re.compile(r"[A-Za-z_][\w.]*(Error|Exception): ")  # a traceback's last line


def _since(value: str | None) -> tuple[str, int] | None:
    """--since as ("ago", milliseconds) for a duration, or ("at", epoch ms) for a timestamp."""
    if value is None:
        return None
    if value.strip() and value.strip()[-1:].lower() in "smhdw" and not value.strip()[-1:].isdigit():
        try:
            return "ago", command_options.Duration().convert(value, None, None)
        except click.BadParameter as exc:
            raise click.BadParameter(exc.message, param_hint="'--since'") from None
    return "at", parse_as_of(value, "--since")


def parse_as_of(value: str, option: str = "--as-of") -> int:
    """Epoch milliseconds, or an ISO 8601 timestamp (UTC unless it names its zone), from
    1970-01-01 to 9999-12-31."""
    text = value.strip()
    if _DIGITS.fullmatch(text):
        # Past 20 digits it is out of range anyway; int() refuses over 4,300 of them.
        ms = int(text) if len(text) <= 20 else AS_OF_RANGE[1] + 1
    else:
        try:
            # ISO 8601 takes "z" as "Z"; fromisoformat takes neither before Python 3.11, and not "z" in it.
            ts = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
        except ValueError:
            raise click.BadParameter(
                f"{value!r} is not a timestamp: use ISO 8601 (2024-05-01T12:00:00Z) or epoch milliseconds", param_hint=f"'{option}'"
            ) from None
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=timezone.utc)
        ms = (ts - _EPOCH) // _MS  # in integers: through a float, .018 s came out as 17 ms
    low, high = AS_OF_RANGE
    if not low <= ms <= high:
        raise click.BadParameter(
            f"{value!r} is outside the range the report covers: epoch milliseconds from {low} to {high} "
            "(1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z)",
            param_hint=f"'{option}'",
        )
    return ms


def _window(as_of_ms: int | None, until_ms: int | None, since: tuple[str, int] | None) -> tuple[int | None, int | None]:
    """The history's (since, until) for the snapshot; None where it takes its default (24 hours
    before the instant, the instant). A duration counts back from --until, or from the instant."""
    if since is None:
        return None, until_ms
    kind, value = since
    if kind == "at":
        return value, until_ms
    end = until_ms if until_ms is not None else as_of_ms if as_of_ms is not None else snapshot.now_ms()
    return end - value, end


def _db_path(ctx: click.Context, own: str) -> str:
    """This command's own --db when given on its command line; else the group's global --db
    (kept in the group's Settings) when that was given; else $SQSQLITE_DB or the default."""
    given_here = ctx.get_parameter_source("db") == ParameterSource.COMMANDLINE
    return command_options.own_or_global(ctx, "db_path", own if given_here else None, own)


def _root_cause(exc: Exception) -> str:
    """The line of a JVM error that says what went wrong: its last "Caused by:", else the Java
    exception py4j names after ": ", else the first line."""
    raw = str(exc).splitlines()
    # A Python worker's failure carries the worker's traceback: its last line, the exception
    # (module path dropped), says why.
    tracebacks = [i for i, line in enumerate(raw) if line.strip() == "Traceback (most recent call last):"]
    raised = [line.partition(": ") for line in raw[tracebacks[-1] :] if _RAISED.match(line)] if tracebacks else []
    if raised:
        name, _, said = raised[-1]
        cause = f"{name.rsplit('.', 1)[-1]}: {said}"
        if "[PYTHON_VERSION_MISMATCH]" in cause:
            version = "{}.{}".format(*sys.version_info[:2])
            cause += f" (give Spark's workers a Python {version}: PYSPARK_PYTHON or spark.pyspark.python; set neither, and in local mode they run {sys.executable})"
        return cause
    lines = [line.strip() for line in raw if line.strip()]
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    named = [line[1:].strip() for line in lines if line.startswith(":")]
    return (causes or named or lines or [type(exc).__name__])[-1 if causes else 0]


def _writable(out: str) -> None:
    """--out's folder made if missing and written to once, or a one-line error."""
    try:
        command_options.make_writable_directory(out)
    except OSError as exc:
        raise command_options.Failure(f"can't write the report to {out}: {exc.strerror or exc}") from None


_CLUSTER_MASTERS = ("spark://", "k8s://", "yarn", "mesos://")  # executors elsewhere: they need --snapshot-dir
_MASTERS = ("local", *_CLUSTER_MASTERS)
_MEMORY = re.compile(r"\d+([kmgtp]b?|b)?", re.IGNORECASE)


@click.command("report")
@click.option(
    "--db", "db", envvar=D.DB_PATH_ENV, default=D.DEFAULT_DB_PATH, show_default=True, help=f"Database file (env {D.DB_PATH_ENV})."
)
@click.option("--as-of", "as_of", metavar="TIMESTAMP", help="Instant the figures are for: ISO 8601 or epoch ms (default: now).")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL (spark://HOST:7077 for a standalone cluster).")
@click.option(
    "--snapshot-dir",
    type=click.Path(file_okay=False),
    help="Write the snapshot as Parquet under this directory and read it from there: a path every executor can read "
    "(needed with a cluster master, whose executors cannot open this machine's file).",
)
@click.option(
    "--jdbc-jar",
    envvar=JAR_ENV,
    type=click.Path(dir_okay=False),
    help=f"SQLite JDBC driver jar (env {JAR_ENV}; default /usr/share/java/sqlite-jdbc.jar, else Maven).",
)
@click.option("--partitions", type=click.IntRange(1, 1024), help="JDBC read partitions over the id range (default: one per 500k messages).")
@click.option("--top", type=click.IntRange(0, 1000), default=5, show_default=True, help="Most received messages to list per queue.")
@click.option(
    "--groups",
    type=click.IntRange(0, 100_000),
    default=10,
    show_default=True,
    help="FIFO message groups to print per queue (files get all).",
)
@click.option("--out", type=click.Path(file_okay=False), help="Also write JSON, CSV and a PNG chart into this directory.")
@click.option("--parquet", is_flag=True, help="With --out: Parquet files as well.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of a table.")
@click.option("--driver-memory", default="2g", show_default=True, help="Spark driver memory (local mode runs all in it).")
@click.option(
    "--since",
    metavar="DURATION|TIMESTAMP",
    help="The history's window start: a duration before --until (30m, 24h, 14d) or a timestamp (default 24h).",
)
@click.option("--until", metavar="TIMESTAMP", help="The history's window end: ISO 8601 or epoch ms (default: the report's instant).")
@click.option("--verbose", is_flag=True, help="Let Spark's own logging through.")
@command_options.scope_option("--account-id", V.account_id, f"The account whose queues are reported (default {D.DEFAULT_ACCOUNT_ID}).")
@command_options.scope_option("--region", V.region, f"The region whose queues are reported (default {D.DEFAULT_REGION}).")
@click.pass_context
def report(
    ctx,
    db,
    as_of,
    master,
    snapshot_dir,
    jdbc_jar,
    partitions,
    top,
    groups,
    out,
    parquet,
    as_json,
    driver_memory,
    since,
    until,
    verbose,
    account_id,
    region,
):
    """Backlog analytics: depth by state, age percentiles, receive counts, poison candidates,
    expiring messages, dead-letter wiring and FIFO groups, per queue, computed by Spark; and
    the history over a window: traffic per queue and hour (or minute), rates and trends, a
    drain forecast and spikes of dead-lettering or redeliveries.

    \b
    Example: sqsqlite report --db app.db --out report/
             sqsqlite report --db app.db --since 7d --out report/
             sqsqlite report --db app.db --master spark://head:7077 --snapshot-dir /shared/tmp
    """
    path = _db_path(ctx, db)
    as_of_ms = None if as_of is None else parse_as_of(as_of)
    until_ms = None if until is None else parse_as_of(until, "--until")
    since_spec = _since(since)
    if parquet and not out:
        raise click.UsageError("--parquet needs --out DIR")
    # Spark's own rules, checked before a JVM starts: a refused value otherwise ends it with "Java
    # gateway process exited", the cause only in Spark's log.
    if not master.startswith(_MASTERS):
        raise click.UsageError(
            f"--master {master!r}: Spark takes local, local[N], local[*], spark://HOST:PORT, k8s://..., yarn or mesos://..."
        )
    if not _MEMORY.fullmatch(driver_memory):
        raise click.UsageError(f"--driver-memory {driver_memory!r}: a size as the JVM takes it, such as 512m or 2g")
    if master.startswith(_CLUSTER_MASTERS) and not snapshot_dir:
        raise click.UsageError(
            f"--master {master}: executors on other machines cannot open {path}; give --snapshot-dir DIR, a path every executor can read"
        )
    if not os.path.isfile(path):
        raise command_options.Failure(f"no database at {path} (give --db PATH or set {D.DB_PATH_ENV})")
    if out:
        _writable(out)  # said now, not after the Spark job it would waste
    if as_of_ms is not None and as_of_ms < 10**11:
        click.echo(
            f"warning: --as-of {as_of} is {render.iso(as_of_ms)} read as epoch milliseconds; for epoch seconds, give {as_of_ms * 1000}.",
            err=True,
        )
    if not verbose:
        warnings.filterwarnings("ignore", module="pyspark")
    try:
        workdir = tempfile.TemporaryDirectory(prefix="sqsqlite-report-")
    except OSError as exc:  # none usable at all, or the one there is refuses a folder
        raise command_options.Failure(tempdir.trouble(exc.strerror or str(exc))) from None
    with workdir as tmp, contextlib.ExitStack() as stack:
        # The snapshot first: a file that is not a sqsqlite database is said at once, not after
        # the JVM has started.
        try:
            scope = (
                command_options.own_or_global(ctx, "account_id", account_id, D.DEFAULT_ACCOUNT_ID),
                command_options.own_or_global(ctx, "region", region, D.DEFAULT_REGION),
            )
            snap = snapshot.take(
                path, os.path.join(tmp, "snapshot.db"), as_of_ms, None, *_window(as_of_ms, until_ms, since_spec), scope=scope
            )
        except snapshot.DestinationError as exc:  # the temporary directory's fault, not the database's
            raise command_options.Failure(tempdir.trouble(exc.reason)) from None
        except snapshot.SnapshotError as exc:
            raise command_options.Failure(str(exc)) from None
        if snapshot_dir:
            folder = snapshot.parquet_folder(snap, snapshot_dir)
            stack.callback(shutil.rmtree, folder, True)  # before writing: a failed write leaves nothing either
            try:
                snap = snapshot.write_parquet(snap, folder)
            except snapshot.SnapshotError as exc:
                raise command_options.Failure(str(exc)) from None
        try:
            jar = None if snap.parquet else resolve_jar(jdbc_jar)
            spark, created = get_session(master, jar, verbose, driver_memory, jdbc=not snap.parquet)
        except SetupError as exc:
            raise command_options.Failure(str(exc)) from None
        try:
            result = compute(spark, snap, top=top, partitions=partitions, database=path)
        except SetupError as exc:  # a driver jar that turns out not to be the driver
            raise command_options.Failure(str(exc)) from None
        except Exception as exc:  # the job itself failed (a full disk under Spark's scratch space, ...)
            raise command_options.Failure(f"the Spark job failed: {_root_cause(exc)}") from None
        finally:
            if created:
                spark.stop()
    if as_json:
        click.echo(json.dumps({"as_of": render.iso(result.as_of_ms), **result.to_dict()}, indent=2))
    else:
        click.echo(render.table(result, groups=groups), nl=False)
    if out:
        try:
            written = render.write(result, out, parquet=parquet)
        except OSError as exc:  # the disk filled, or the folder changed, while Spark ran
            raise command_options.Failure(f"can't write the report to {out}: {exc.strerror or exc}") from None
        click.echo(f"wrote {len(written)} files to {out}", err=as_json)


if __name__ == "__main__":
    report(prog_name="sqsqlite report")
