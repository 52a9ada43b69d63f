"""``sqsqlite console``: the web console and /metrics alone, without the SQS endpoint.

Served on ``sqsqlite serve``'s stack (``make_server(console_only=True)``): one event loop,
uvicorn's listen backlog and keep-alive timeout, the header deadline (``protocol.py``), the
budget for bodies being received, engine calls on the small thread pool (a few SQLite
connections, not one a client), and the open-descriptor limit raised as serve raises it. Every
path is the console's (``/`` its queue list); the keys are its HTTP basic credentials.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

import click

from .. import command_options
from .. import defaults as D
from ..command_options import allow_host, db_option, host_option, own_or_global, verbose_option
from ..console import exposure_warning
from ..console.app import Console  # noqa: F401  # the console extra: the CLI says its absence (pip install 'sqsqlite[console]')
from ..errors import InvalidParameterValue, SQSError
from .command import raise_open_files_limit, stopped_by_signals
from .endpoint import make_server


def _refuse_an_older_schema(path: str) -> None:
    """Opening a file of an older schema upgrades it, a write a read-only console must not make."""
    from ..store import HEAD_REVISION, Store

    revision = None
    try:  # an empty file is not even opened: SQLite's switch to WAL would write its header
        if path.startswith("file:") or os.path.getsize(path):
            with contextlib.closing(Store(path, migrate=False)) as probe:
                revision = probe.current_revision()
    except SQSError as exc:
        raise command_options.Failure(exc.message) from None
    if revision is None or revision < HEAD_REVISION:
        raise command_options.Failure(
            f"{path!r} has {'no sqsqlite schema yet' if revision is None else f'schema revision {revision!r}'}, older than this "
            f"sqsqlite's ({HEAD_REVISION!r}); a read-only console changes nothing, so upgrade it first: sqsqlite db upgrade --db {path}"
        )


@click.command("console")
@db_option
@host_option
@click.option("--port", default=D.CONSOLE_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--read-only", is_flag=True, help="Show everything, change nothing: redrive, purge and delete answer 403.")
@click.option("--account-id", default=None, help=f"Account id in queue URLs and ARNs (default {D.DEFAULT_ACCOUNT_ID}).")
@click.option("--region", default=None, help=f"Region in queue ARNs (default {D.DEFAULT_REGION}).")
@click.option(
    "--access-key", default=None, envvar="SQSQLITE_ACCESS_KEY", help="Require HTTP basic credentials: this access key as user ..."
)
@click.option("--secret-key", default=None, envvar="SQSQLITE_SECRET_KEY", help="... and this secret key as password.")
@allow_host
@verbose_option
@click.pass_context
def console(ctx, db_path, host, port, read_only, account_id, region, access_key, secret_key, allow_hosts, verbose):
    """The web console alone: queues with live counts, messages looked at without receiving
    them, redrive, purge and delete; Prometheus metrics at /metrics.

    Open the printed address in a browser. `sqsqlite serve` serves the same console at
    /console beside the SQS endpoint. Needs the console extra: pip install 'sqsqlite[console]'.

    \b
    Example: sqsqlite console --db app.db --read-only
    """
    if (access_key is None) != (secret_key is None):
        raise click.UsageError("--access-key and --secret-key go together: give both, or neither.")
    path = command_options.db_path(ctx, db_path)
    if read_only and command_options.no_database_at(path):
        # It may change nothing, so it must not create the file a mistyped --db names either.
        raise command_options.Failure(f"There is no database at {path!r} to show; a read-only console creates none.")
    if read_only:
        _refuse_an_older_schema(path)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    raise_open_files_limit()
    try:
        server = make_server(
            path,
            host=host,
            port=port,
            account_id=own_or_global(ctx, "account_id", account_id, D.DEFAULT_ACCOUNT_ID),
            region=own_or_global(ctx, "region", region, D.DEFAULT_REGION),
            access_key=access_key,
            secret_key=secret_key,
            verbose=verbose,
            console_read_only=read_only,
            allow_hosts=allow_hosts,
            console_only=True,
        )
    except OSError as exc:
        raise command_options.Failure(f"Can't listen on {host}:{port}: {exc.strerror or exc}.") from None
    except InvalidParameterValue as exc:  # --account-id or --region
        raise click.UsageError(exc.message) from None
    except SQSError as exc:
        raise command_options.Failure(exc.message) from None

    mode = "read-only" if read_only else "read-write"
    auth = "basic credentials required" if access_key else "no credentials asked"
    warning = exposure_warning(str(server.server_address[0]), access_key is not None)
    with stopped_by_signals(server):  # the caller's handlers back on every path (a closed stderr included)
        if warning:
            click.echo(warning, err=True)
        click.echo(
            f"sqsqlite console on {server.db.path} at {server.url}/console ({mode}; {auth}); metrics at {server.url}/metrics", err=True
        )
        server.serve()
    click.echo("sqsqlite console stopped", err=True)
