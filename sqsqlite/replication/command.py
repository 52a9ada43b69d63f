"""``sqsqlite replicate`` and ``sqsqlite restore``: Litestream driven from the CLI."""

from __future__ import annotations

import re
import sys

import click

from .. import command_options
from .. import defaults as D
from ..errors import SQSError
from . import Replica, ReplicationError, replicate, restore


def _s3_options(f):
    f = click.option(
        "--s3-endpoint",
        metavar="URL",
        envvar="SQSQLITE_S3_ENDPOINT",
        help="An S3-compatible store's endpoint (MinIO, Ceph, moto ...); without it, Amazon S3.",
    )(f)
    return click.option("--s3-region", metavar="REGION", help="The bucket's region (default $AWS_REGION, else us-east-1).")(f)


# A Go duration, as Litestream reads one: numbers each with its unit, e.g. 1s, 500ms, 1m30s.
_DURATION = re.compile(r"0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+")


def _duration(value: str) -> str:
    if not _DURATION.fullmatch(value):
        raise click.BadParameter(f"{value!r} is not a duration: a number and a unit (ns, us, ms, s, m, h), e.g. 1s, 500ms, 1m30s.")
    return value


# An instant as Litestream reads one (Go's time.RFC3339): a date, T, a time, perhaps a fraction of
# a second, and Z or an offset.
_INSTANT = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))")


def _instant(_ctx, _param, value: str | None) -> str | None:
    """--timestamp checked before anything is tried (Litestream would say so only after the
    store was reached), and an empty one refused rather than taken for the newest."""
    if value is None:
        return None
    import datetime

    found = _INSTANT.fullmatch(value)
    try:
        if found is None:
            raise ValueError
        year, month, day, hour, minute, second, off_hours, off_minutes = (int(g) if g else 0 for g in found.groups())
        datetime.datetime(year, month, day, hour, minute, second)  # a day or an hour that does not exist
        if off_hours > 23 or off_minutes > 59:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an RFC 3339 instant, e.g. 2026-11-25T06:30:00Z or 2026-11-25T07:30:00+01:00.") from None
    return value


@click.command("replicate")
@command_options.db_option
@click.option(
    "--to",
    "targets",
    multiple=True,
    required=True,
    metavar="URL",
    help="Replica: a directory, file:///PATH or s3://BUCKET/PATH (repeat for several).",
)
@click.option(
    "--sync-interval",
    default=D.REPLICA_SYNC_INTERVAL,
    show_default=True,
    metavar="DURATION",
    callback=lambda _ctx, _param, value: _duration(value),
    help="How often new transactions are shipped (1s, 500ms ...): the most a lost disk can lose.",
)
@click.option("--exec", "exec_command", metavar="COMMAND", help="Run COMMAND beside replication and stop when it exits.")
@_s3_options
@click.pass_context
def replicate_command(ctx, db_path, targets, sync_interval, exec_command, s3_endpoint, s3_region):
    """Replicate the database continuously to a directory or an S3-compatible store (Litestream).

    Runs in the foreground beside the processes that use the database, shipping each committed
    transaction within --sync-interval. SIGTERM or Ctrl-C stops it after a last sync (it stops
    the --exec command first). Litestream ending of itself, or the --exec command failing, is
    one line and exit 255. S3 credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
    A file of an older sqsqlite is not migrated here: the program using its queues (the --exec
    command) migrates it, into its own --region and --account-id.

    \b
    Example: sqsqlite replicate --db app.db --to s3://backups/app
             sqsqlite replicate --db app.db --to /mnt/replica --exec "sqsqlite serve --db app.db"
    """
    path = command_options.db_path(ctx, db_path)
    try:
        replicas = [Replica(url, endpoint=s3_endpoint, region=s3_region) for url in targets]
        line = f"sqsqlite replicating {path} to {', '.join(targets)} every {sync_interval}"
        # Said once Litestream runs: every failure before that (an unreachable store, a program
        # that can't be run) is the command's one line.
        replicate(path, replicas, sync_interval, exec_command, started=lambda: print(line, file=sys.stderr, flush=True))
    except ReplicationError as exc:  # also Litestream or the --exec command ending otherwise than asked
        raise command_options.Failure(str(exc)) from None
    except SQSError as exc:  # the database can't be opened: not a sqsqlite database, unwritable ...
        raise command_options.Failure(exc.message) from None


@click.command("restore")
@click.option(
    "--db", "db_path", default=None, metavar="PATH", help=f"Database file to write (default: ${D.DB_PATH_ENV} or ./{D.DEFAULT_DB_PATH})."
)
@click.option("--from", "source", required=True, metavar="URL", help="Replica: a directory, file:///PATH or s3://BUCKET/PATH.")
@click.option(
    "--timestamp",
    metavar="TIME",
    callback=_instant,
    help="Restore as of this instant (RFC 3339, e.g. 2026-11-25T06:30:00Z); default the newest.",
)
@click.option("--force", is_flag=True, help="Replace the database file if it exists.")
@_s3_options
@click.pass_context
def restore_command(ctx, db_path, source, timestamp, force, s3_endpoint, s3_region):
    """Rebuild the database from a replica that `sqsqlite replicate` wrote.

    Writes a new file (an existing one only with --force), checks its integrity, and prints
    where it is. Messages that were in flight when the replica was written become visible
    again when their visibility timeout ends, as after a crash.

    \b
    Example: sqsqlite restore --db app.db --from s3://backups/app
    """
    path = command_options.db_path(ctx, db_path)
    try:
        done = restore(path, Replica(source, endpoint=s3_endpoint, region=s3_region), timestamp, force)
    except ReplicationError as exc:
        raise command_options.Failure(str(exc)) from None
    click.echo(f"restored {done.path} from {source}: integrity {done.integrity}")
