"""`sqsqlite archive` (its setting, `list`, `peek`) and `sqsqlite replay`: a queue's deleted
messages kept, looked at and sent again (docs/howto/archive.md). Registered with the
administration commands (admin.COMMANDS)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import click

from sqsqlite import defaults as D
from sqsqlite.command_options import Duration
from sqsqlite.errors import InvalidParameterValue, SQSError

from .admin import COMMANDS, command
from .options import Command, Settings, failed, global_options, pass_settings, queue_url_option

_ISO_Z = re.compile(r"[zZ]$")


class When(click.ParamType):
    """A point in time: ISO 8601 (2026-11-28T14:00:00Z; UTC when no offset is given), epoch
    milliseconds, or a duration before now (90m, 2h, 1d)."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        text = str(value).strip()
        if text.isdigit():
            return ("at", int(text))
        try:
            return ("ago", Duration().convert(text, param, ctx))
        except click.BadParameter:
            pass
        try:
            when = datetime.fromisoformat(_ISO_Z.sub("+00:00", text))
        except ValueError:
            self.fail(
                f"{value!r} is not a time: give ISO 8601 (2026-11-28T14:00:00Z), epoch milliseconds, or a duration ago (2h)", param, ctx
            )
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return ("at", int(when.timestamp() * 1000))


def _ms(when: tuple[str, int] | None, now: int, default: int | None) -> int | None:
    if when is None:
        return default
    kind, n = when
    return now - n if kind == "ago" else n


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _filters(f: Any) -> Any:
    """The options every command that selects archived messages takes."""
    # Applied last first, so that --help lists them in this order.
    f = click.option("--where", metavar="ATTRIBUTE=VALUE", help="Only messages whose message attribute has this value.")(f)
    f = click.option("--group-id", metavar="GROUP", help="Only messages of this MessageGroupId.")(f)
    f = click.option("--message-id", "message_ids", multiple=True, metavar="ID", help="Only this message (repeat for more).")(f)
    f = click.option("--until", type=When(), metavar="TIME", help="Deleted before TIME (as --since); left out, up to now.")(f)
    since = "Deleted at or after TIME: ISO 8601, epoch ms, or a duration ago (2h)."
    f = click.option("--since", type=When(), metavar="TIME", help=since)(f)
    return f


def _selection(s: Settings, since: Any, until: Any, message_ids: tuple[str, ...], group_id: str | None, where: str | None) -> dict:
    now = s.database(create=False).now()
    return {
        "since": _ms(since, now, 0),
        "until": _ms(until, now, None),
        "message_ids": list(message_ids),
        "group_id": group_id,
        "where": where,
    }


def _summary(m: Any) -> dict[str, Any]:
    out = {
        "MessageId": m.message_id,
        "DeletedTimestamp": _iso(m.deleted_at),
        "DeletedBy": m.how,
        "SentTimestamp": _iso(m.sent_at),
        "ReceiveCount": m.receive_count,
    }
    if m.message_group_id is not None:
        out["MessageGroupId"] = m.message_group_id
    return out


def _full(m: Any) -> dict[str, Any]:
    attributes = {
        "SenderId": m.sender_id,
        "SentTimestamp": str(m.sent_at),
        "ApproximateReceiveCount": str(m.receive_count),
        "ApproximateFirstReceiveTimestamp": None if m.first_received_at is None else str(m.first_received_at),
        "MessageGroupId": m.message_group_id,
        "MessageDeduplicationId": m.message_deduplication_id,
        "SequenceNumber": None if m.sequence_number is None else str(m.sequence_number),
        "AWSTraceHeader": m.aws_trace_header,
        "DeadLetterQueueSourceArn": m.dead_letter_queue_source_arn,
    }
    item: dict[str, Any] = {
        "MessageId": m.message_id,
        "DeletedTimestamp": _iso(m.deleted_at),
        "DeletedBy": m.how,
        "ExpiresTimestamp": _iso(m.expires_at),
        "Body": m.body,
        "Attributes": {k: v for k, v in attributes.items() if v is not None},
    }
    if m.message_attributes:
        item["MessageAttributes"] = {k: a.to_sqs() for k, a in m.message_attributes.items()}
    return item


class _ArchiveGroup(click.Group):
    """The archive's commands; its own options set or show the setting, as `sqsqlite history` does."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SQSError as err:
            raise failed(err, "archive", ctx.find_object(Settings)) from None


@click.group("archive", cls=_ArchiveGroup, invoke_without_command=True)
@queue_url_option(required=False)
@click.option(
    "--retention",
    metavar="DURATION|off",
    help="Keep the queue's deleted messages this long (1m to 366d), or stop keeping them: off.",
)
@global_options(output="json")
@pass_settings
@click.pass_context
def archive(ctx: click.Context, s: Settings, queue_url: str | None, retention: str | None) -> None:
    """Say whether a queue keeps its deleted messages and how long; turn that on or off.

    While on, every delete of the queue's messages (single, batch, a consumer's, a purge) keeps
    the message in the file's archive, in the same transaction: body, attributes, ids, receive
    count, sent, first-received and deleted times. Look with `archive list` and `archive peek`,
    send them again with `replay`. The setting is sqsqlite's own, not an SQS attribute: `copy`
    leaves it behind. Off by default; turning it off keeps what was archived until it expires.

    \b
    Example: sqsqlite archive --queue-url orders --retention 7d
    Example: sqsqlite archive --queue-url orders --retention off
    Example: sqsqlite archive list --queue-url orders --since 1h --output table
    """
    if ctx.invoked_subcommand is not None:
        if queue_url is not None or retention is not None:
            raise click.UsageError("--queue-url and --retention go after the subcommand: sqsqlite archive list --queue-url Q")
        return
    if queue_url is None:
        raise click.UsageError("Missing option '--queue-url'.")
    db = s.database(create=False)
    if retention is not None:
        seconds = None
        if retention.strip().lower() != "off":
            try:
                seconds = Duration().convert(retention, None, ctx) // 1000
            except click.BadParameter as err:
                raise click.BadParameter(f"{err.message}, or off", param_hint="'--retention'") from None
        try:
            db.set_archive(queue_url, seconds)
        except InvalidParameterValue as err:
            raise click.BadParameter(err.hint or err.message, param_hint="'--retention'") from None
    kept = db.archive_retention(queue_url)
    url = db.queue(queue_url).url
    s.echo({"QueueUrl": url, "Archive": "on", "RetentionSeconds": kept} if kept else {"QueueUrl": url, "Archive": "off"}, "archive")


COMMANDS.append(archive)


def _limit(default: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--limit, archive list's and peek's, each with its own default."""
    return click.option(
        "--limit",
        type=click.IntRange(D.ARCHIVE_LIMIT.low, D.ARCHIVE_LIMIT.high),
        default=default,
        show_default=True,
        help="At most this many messages.",
    )


@command("list", output="json", group=archive)
@queue_url_option()
@_filters
@_limit(D.ARCHIVE_LIMIT.default)
def archive_list(s: Settings, queue_url: str, limit: int, **selection: Any) -> None:
    """List a queue's archived messages, oldest deleted first: ids, times, what deleted them.

    \b
    Example: sqsqlite archive list --queue-url orders --since 2h --output table
    Example: sqsqlite archive list --queue-url orders --where tenant=acme
    """
    found = s.database(create=False).archived(queue_url, limit=limit, **_selection(s, **selection))
    s.echo({"Messages": [_summary(m) for m in found]} if found else {}, "archive list")


@command("peek", output="json", group=archive)
@queue_url_option()
@_filters
@_limit(10)
def archive_peek(s: Settings, queue_url: str, limit: int, **selection: Any) -> None:
    """Show a queue's archived messages in full: body, message attributes and system attributes.

    \b
    Example: sqsqlite archive peek --queue-url orders --message-id 5fea7756-0ea4-451a-a703-a558b933e274
    """
    found = s.database(create=False).archived(queue_url, limit=limit, **_selection(s, **selection))
    s.echo({"Messages": [_full(m) for m in found]} if found else {}, "archive peek")


@command("replay", output="json")
@queue_url_option()
@_filters
@click.option("--to", metavar="URL", help="Send them to this queue instead of their own.")
@click.option("--dry-run", is_flag=True, help="Send nothing: list what would be sent, in order.")
@click.option("--again", is_flag=True, help="Replay again a range this replay finished already.")
def replay(s: Settings, queue_url: str, to: str | None, dry_run: bool, again: bool, **selection: Any) -> None:
    """Send a queue's archived messages again, in their original order, with a progress bar.

    The messages deleted between --since and --until (and matching the filters) go to the queue,
    or to --to, with their bodies and attributes and new message ids; each keeps its original id
    in the message attribute sqsqlite.OriginalMessageId (unless it has ten attributes already).
    FIFO groups keep their order, with new deduplication ids. Interrupted (Ctrl-C, a crash), the
    same command continues where it stopped, sending nothing twice; once finished it sends
    nothing more unless --again.

    \b
    Example: sqsqlite replay --queue-url orders --since 2026-11-28T14:00:00Z --until 2026-11-28T15:00:00Z
    Example: sqsqlite replay --queue-url orders --since 1h --where tenant=acme --dry-run
    """
    db = s.database(create=False)
    chosen = _selection(s, **selection)
    relative = [(flag, chosen[flag[2:]]) for flag in ("--since", "--until") if (selection[flag[2:]] or ("",))[0] == "ago"]
    if relative and not dry_run:  # what to give to run this same replay again, to continue it
        given = " ".join(f"{flag} {ms}" for flag, ms in relative)
        click.echo(f"sqsqlite: {given} (epoch ms) is this replay's range; give it so to continue it if it is cut short", err=True)
    if dry_run:
        result = db.replay(queue_url, to=to, dry_run=True, again=again, **chosen)
        if result.finished_before:
            _finished_before(result.sent_before)
        s.echo({"WouldSend": len(result.pending), "Messages": [_summary(m) for m in result.pending]}, "replay")
        return
    bar: Any = None

    def progress(sent: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="Replaying", file=sys.stderr)
            bar.__enter__()
        bar.update(sent - bar.pos)

    try:
        result = db.replay(queue_url, to=to, again=again, progress=progress, **chosen)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if result.finished_before:
        _finished_before(result.sent_before)
    out: dict[str, Any] = {"QueueUrl": db.queue(to or queue_url).url, "Sent": result.sent}
    if result.sent_before:
        out["SentBefore"] = result.sent_before
    if result.without_original_id:
        out["WithoutOriginalId"] = result.without_original_id
    s.echo(out, "replay")


def _finished_before(sent_before: int) -> None:
    click.echo(f"sqsqlite: this replay finished before ({sent_before} sent); --again sends them again", err=True)
