"""``sqsqlite copy``: queues and messages to another SQS endpoint, or from one into the database."""

from __future__ import annotations

import os
import signal
import sys

import click

from .. import command_options
from .. import defaults as D
from .. import validation as V
from ..errors import SQSError
from . import CopyError, copy_from, copy_to, read_remote


@click.command("copy")
@command_options.db_option
@click.option(
    "--to-endpoint-url",
    "to_url",
    metavar="URL",
    callback=command_options.endpoint_url_option,
    help="Copy this database's queues and messages to the SQS endpoint at URL.",
)
@click.option(
    "--from-endpoint-url",
    "from_url",
    metavar="URL",
    callback=command_options.endpoint_url_option,
    help="Drain the queues given by --queue-url at the SQS endpoint at URL into this database.",
)
@click.option(
    "--queue-url",
    "queue_urls",
    multiple=True,
    metavar="URL",
    help="With --to: a local queue (name or URL) to copy, with its dead-letter queue (default: every queue). "
    "With --from: a remote queue URL to drain (required). Repeat for several.",
)
@click.option(
    "--region",
    "region",
    default=None,
    help="The endpoint's region (default $AWS_REGION, else us-east-1). The queues here are the global --region's, given before copy.",
)
@command_options.scope_option(
    "--account-id", V.account_id, f"The account whose queues here are copied, or drained into (default {D.DEFAULT_ACCOUNT_ID})."
)
@click.option(
    "--wait-seconds",
    default=2,
    show_default=True,
    type=click.IntRange(0, 20),
    help="With --from: stop after a receive waiting this long gets nothing.",
)
@click.pass_context
def copy_command(ctx, db_path, to_url, from_url, queue_urls, region, account_id, wait_seconds):
    """Copy queues and messages to another SQS endpoint (Amazon SQS too), or drain them from one.

    --to-endpoint-url creates each queue there with its attributes, tags and redrive policy (a
    Policy is left out, with a note) and sends its messages without receiving them here, in
    send order (a FIFO queue's group by group, each in the queue's order). Run again after an interruption, it continues after the last batch that queue
    there accepted (and sends what arrived since); one copy at a time to a queue there (a second,
    while one runs, is refused before it changes anything there: exit 255). --from-endpoint-url creates each remote
    queue here and moves its messages: each is deleted there only after it is committed here,
    and none is imported twice. Credentials as boto3 finds them (AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, profiles). A failure there exits 254 (an SQS error) or 255.

    \b
    Example: sqsqlite copy --db app.db --to-endpoint-url https://sqs.eu-west-1.amazonaws.com
             sqsqlite copy --db app.db --from-endpoint-url http://127.0.0.1:4566 \\
                 --queue-url http://127.0.0.1:4566/000000000000/orders
    """
    if bool(to_url) == bool(from_url):
        raise click.UsageError("Give one of --to-endpoint-url and --from-endpoint-url.")
    if from_url and not queue_urls:
        raise click.UsageError("--from-endpoint-url needs the remote queues to drain: --queue-url URL (repeat for several).")
    try:
        import boto3
    except ImportError:
        raise command_options.Failure(f"copy needs boto3: {command_options.install_extra('aws')}") from None
    from ..core import connect

    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or D.DEFAULT_REGION
    try:
        client = boto3.client("sqs", endpoint_url=to_url or from_url, region_name=region)
    except Exception as exc:  # botocore's: a region it refuses, a profile that is not there ...
        raise command_options.Failure(f"could not make a client for {to_url or from_url}: {type(exc).__name__}: {exc}") from None

    line_open = [False]  # a progress line is on standard error, to be ended before any other

    def progress(name: str, count: int) -> None:
        line_open[0] = True
        print(f"\r{name}: {count} messages", end="", file=sys.stderr, flush=True)

    path = command_options.db_path(ctx, db_path)
    if to_url and command_options.no_database_at(path):
        raise command_options.Failure(f"There is no database at {path!r} to copy from.")
    remote = None
    if from_url:
        try:  # every remote queue there, before the database is opened (and made, if new)
            remote = read_remote(client, queue_urls)
        except CopyError as exc:
            raise _said(exc) from None
    try:
        # The file's side is --account-id's (given after copy or before it) and the global
        # --region's queues: --region after copy is the endpoint's, as it always was.
        opened = connect(
            path,
            account_id=command_options.own_or_global(ctx, "account_id", account_id, D.DEFAULT_ACCOUNT_ID),
            region=command_options.own_or_global(ctx, "region", None, D.DEFAULT_REGION),
        )
    except SQSError as exc:  # not a sqsqlite database, a directory, unwritable ...
        raise command_options.engine_failure(exc, "copy") from None
    # Ctrl-C or SIGTERM ends a copy to an endpoint between two batches, never between a batch's
    # send and the bookmark of its position: so a run again sends nothing twice.
    asked_to_stop: list[int] = []
    previous = {}
    if to_url:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda signum, _frame: asked_to_stop.append(signum))
    with opened as db:
        try:
            if to_url:
                names = [db.queue(q).name for q in queue_urls] if queue_urls else None
                report = copy_to(db, client, names, progress, stop=lambda: bool(asked_to_stop))
            else:
                report = copy_from(db, client, queue_urls, wait_seconds=wait_seconds, progress=progress, remote_queues=remote)
        except CopyError as exc:
            raise _said(exc) from None
        except SQSError as exc:  # this database's side: a queue that is not there, a record refused
            raise command_options.engine_failure(exc, "copy") from None
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if line_open[0]:
                print(file=sys.stderr)
    for note in report.notes:
        click.echo(f"note: {note}", err=True)
    verb = "copied to" if to_url else "copied from"
    for name in report.queues:
        left = report.left_remotely.get(name)
        tail = f" ({left} still there, in flight, delayed or behind one in flight in its group: run again later)" if left else ""
        click.echo(f"{name}: {report.messages.get(name, 0)} messages {verb} {to_url or from_url}{tail}")
    if report.stopped:
        click.echo("Interrupted between two batches: run the same command again to continue.", err=True)
        ctx.exit(130)


def _said(exc: CopyError) -> click.ClickException:
    """A failure at the other end as the CLI says one."""
    if exc.service is not None:  # the endpoint's SQS error as the aws CLI prints it; what failed, the hint
        return command_options.ServiceError(*exc.service, hint=exc.what)
    return command_options.Failure(str(exc), hint=exc.hint)
