"""Administration SQS never had: migrations, stats, peek, redrive, prune, export/import, queues from a file, demo (vacuum: cli/vacuum.py)."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import click

from sqsqlite import command_options, records
from sqsqlite import defaults as D
from sqsqlite import validation as V
from sqsqlite.command_options import Duration
from sqsqlite.core.rules import message_state
from sqsqlite.errors import DatabaseError, InvalidExportRecord, QueueDoesNotExist, SQSError

from . import stats_table
from .options import Command, Failure, Settings, command_options_first, global_options, pass_settings, queue_url_option, resume_hint

COMMANDS: list[click.Command] = []
_sleep = time.sleep  # stats --watch's pause; tests replace it


def command(name: str, output: str | None = "json", group: click.Group | None = None) -> Callable:
    """An administration command (of ``group``, else of sqsqlite); ``output``: the format it
    prints without --output (for its help)."""

    def decorate(f: Callable) -> click.Command:
        make = click.command(name, cls=Command) if group is None else group.command(name)
        cmd = command_options_first(make(global_options(output=output)(pass_settings(f))))
        if group is None:
            COMMANDS.append(cmd)
        return cmd

    return decorate


# ---------------------------------------------------------------------- db (alembic)


class _DbGroup(click.Group):
    command_class = Command


@click.group("db", cls=_DbGroup)
def db_group() -> None:
    """Schema migrations of the database file (alembic).

    Every other command upgrades a file to the newest schema on first use; these commands are for
    looking at and moving between revisions explicitly.

    \b
    Example: sqsqlite db current
    """


COMMANDS.append(db_group)


def _store(s: Settings):
    from sqsqlite.store import Store

    # An upgrade past 0012 gives the file's queues the global --account-id's and --region's.
    return Store(s.path, migrate=False, owner=(s.account_id, s.region))


def _migrate(s: Settings, step: str, revision: str, **options: Any) -> None:
    """Run alembic's upgrade or downgrade to REVISION and print From and To."""
    from alembic.util import CommandError

    from sqsqlite import migrate

    if step == "downgrade" and command_options.no_database_at(s.path):  # a mistyped path: create nothing
        raise Failure(f"There is no database at {s.path!r} to downgrade.")
    with contextlib.closing(_store(s)) as store:
        before = migrate.current(store)
        try:
            getattr(migrate, step)(store, revision, **options)
        except migrate.WouldDropData as exc:
            raise Failure(
                f"{exc.message} To drop them, run it again with --force (after `sqsqlite export` of any queue to keep)."
            ) from None
        except CommandError as exc:
            # migrate refused a file newer than this sqsqlite first, so what alembic cannot find
            # or reach is REVISION; it resolves it before it touches the file (and runs in one
            # transaction), so the schema is left as it was.
            known = ", ".join(rev for rev, _, _ in migrate.history())
            raise click.BadParameter(
                f"cannot {step} to {revision!r}: {exc}. Known revisions, newest first: {known}; "
                "or head, base, or a number of steps such as -1 or +1.",
                param_hint="REVISION",
            ) from None
        s.echo({"From": before or "base", "To": migrate.current(store) or "base"}, f"db {step}", default="text")


@command("upgrade", "text", db_group)
@click.argument("revision", default="head")
def db_upgrade(s: Settings, revision: str) -> None:
    """Upgrade the schema to REVISION (default: the newest).

    REVISION is one that `sqsqlite db history` lists, head, or a number of steps such as +1; any
    other is bad usage and changes nothing.

    \b
    Example: sqsqlite db upgrade
    """
    _migrate(s, "upgrade", revision)


@command("downgrade", "text", db_group)
@click.argument("revision", default="-1")
@click.option("--force", is_flag=True, help="Drop tables that hold data, as a downgrade to base drops every queue and message.")
def db_downgrade(s: Settings, revision: str, force: bool) -> None:
    """Downgrade the schema to REVISION (default: one step back; 'base' empties the file).

    REVISION is one that `sqsqlite db history` lists, base, or a number of steps such as -2; any
    other is bad usage and changes nothing. A downgrade that would drop a table holding rows (to
    base: any file ever opened, its receipt-handle key, and every queue and message; below 0002:
    move tasks and FIFO deduplication records) needs
    --force; without it the command fails (exit 255) and changes nothing. Any other command
    upgrades the file again on first use.

    \b
    Example: sqsqlite db downgrade -- -1
    """
    _migrate(s, "downgrade", revision, force=force)


@command("current", "text", db_group)
def db_current(s: Settings) -> None:
    """Print the file's schema revision ('base' for a new, empty file, or none at the path).

    \b
    Example: sqsqlite db current
    """
    from sqsqlite import migrate

    revision = None
    if not s.no_database():  # else an empty file's answer, and none created
        with contextlib.closing(_store(s)) as store:
            revision = migrate.current(store)
    s.echo({"Revision": revision or "base"}, "db current", default="text")


@command("history", "table", db_group)
def db_history(s: Settings) -> None:
    """List the schema revisions this sqsqlite knows, newest first.

    \b
    Example: sqsqlite db history
    """
    from sqsqlite import migrate

    rows = [
        {"Revision": rev, "DownRevision": down, "Description": doc.splitlines()[0] if doc else ""} for rev, down, doc in migrate.history()
    ]
    s.echo({"Revisions": rows}, "db history", default="table")


# ---------------------------------------------------------------------- stats, peek, prune


def _stats(s: Settings) -> dict:
    rows = [
        {
            "Queue": q.name,
            "Visible": q.visible,
            "InFlight": q.in_flight,
            "Delayed": q.delayed,
            "OldestAgeSeconds": None if q.oldest_age_seconds is None else round(q.oldest_age_seconds, 1),
            "DeadLetterQueue": q.dead_letter_queue,
            "DeadLetterDepth": q.dead_letter_depth,
            # Fair queues (docs/explanation/fair-queues.md), by Amazon SQS's CloudWatch names.
            "ApproximateNumberOfNoisyGroups": q.noisy_groups,
            "ApproximateNumberOfMessagesVisibleInQuietGroups": q.visible_in_quiet_groups,
            "ApproximateNumberOfMessagesNotVisibleInQuietGroups": q.in_flight_in_quiet_groups,
            "ApproximateNumberOfMessagesDelayedInQuietGroups": q.delayed_in_quiet_groups,
            "ApproximateAgeOfOldestMessageInQuietGroups": None
            if q.oldest_age_in_quiet_groups_seconds is None
            else round(q.oldest_age_in_quiet_groups_seconds, 1),
        }
        for q in s.database(create=False).stats()
    ]
    out: dict[str, Any] = {"Queues": rows}
    figures = _file_figures(s)
    if figures:  # none for a file that isn't there (said already)
        out["File"] = figures
    return out


def _file_figures(s: Settings) -> dict:
    """The database file's size, free pages and WAL (docs/explanation/reliability.md, "Disk space"): one short
    section under the queues' table, not columns of it."""
    from sqsqlite import space

    db = s.database(create=False)
    if s.missing:
        return {}
    return space.measure(db.store.connection(), db.path).as_dict()


class Seconds(click.FloatRange):
    """A FloatRange that also refuses NaN: NaN compares false with both bounds, so FloatRange
    lets it through, and the pause it would give time.sleep fails only after the first frame."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if math.isnan(seconds):
            self.fail(f"{value} is not in the range {self.min:g}<=x<={self.max:g}.", param, ctx)
        return seconds


def _show_stats(s: Settings, data: dict, wide: bool) -> None:
    """The table of stats_table (fitted to the terminal), unless another --output or a --query is
    asked for: those print the figures under their CloudWatch names, as before."""
    if (s.output or "table") != "table" or s.query is not None or not data["Queues"]:
        s.echo(data, default="table")
        return
    rest = {k: v for k, v in data.items() if k != "Queues"}
    click.echo(stats_table.render(data["Queues"], shutil.get_terminal_size().columns, wide), nl=False)
    if rest:
        s.echo(rest, default="table")


# The --since view's counters: (column, the history's counter), the column its name in CamelCase.
_HISTORY_COUNTERS = "sent received redelivered deleted dead_lettered expired purged moved moved_in empty_receives bytes_sent"
_HISTORY_COLUMNS = tuple(("".join(w.capitalize() for w in key.split("_")), key) for key in _HISTORY_COUNTERS.split())


def _history_stats(s: Settings, since_ms: int) -> dict:
    """Each queue's counters over the last ``since_ms``, from the per-minute history, with the
    rates a minute of arrivals (sent and moved in), completions (deleted) and their difference,
    and the newest backlog sample of the window."""
    db = s.database(create=False)
    now = db.now()
    window = {"Since": _iso(now - since_ms), "Until": _iso(now)}
    if s.missing:  # said already: no file, no history
        return {**window, "Queues": []}
    if not db.history_retention:
        click.echo(f"No history is kept in {s.path}: it is off. Turn it on with: sqsqlite history --retention 14d", err=True)
        return {"History": "off", **window, "Queues": []}
    minutes = since_ms / 60_000
    by_queue: dict[str, list[dict]] = {name: [] for name in db.queue_names()}
    for row in db.history(now - since_ms):
        by_queue.setdefault(row["name"], []).append(row)
    out = []
    for name, rows in by_queue.items():
        item: dict[str, Any] = {"Queue": name}
        for column, key in _HISTORY_COLUMNS:
            item[column] = sum(r[key] for r in rows)
        arrivals, completions = item["Sent"] + item["MovedIn"], item["Deleted"]
        item["ArrivalsPerMinute"] = round(arrivals / minutes, 2)
        item["CompletionsPerMinute"] = round(completions / minutes, 2)
        item["NetPerMinute"] = round((arrivals - completions) / minutes, 2)
        sampled = [r for r in rows if r["visible"] is not None]
        last = sampled[-1] if sampled else None
        item["Backlog"] = None if last is None else last["visible"] + last["in_flight"] + last["delayed"]
        item["OldestAgeSeconds"] = None if last is None else last["oldest_age"]
        out.append(item)
    return {**window, "Queues": out}


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@command("stats", output="table")
@click.option(
    "--since",
    type=Duration(),
    metavar="DURATION",
    help="Instead of the counts now, each queue's counters over the last DURATION (30m, 1h, 2d), with rates a minute "
    "and the newest backlog sample, from the per-minute history kept in the file.",
)
@click.option(
    "--watch",
    type=Seconds(min=0.1, max=86_400),  # a day: a longer pause is a typo, and inf overflows time.sleep
    metavar="SECONDS",
    help="Refresh every SECONDS (0.1 to 86400) until Ctrl-C, like top.",
)
@click.option("--wide", is_flag=True, help="The table with every column under its CloudWatch name, however wide.")
def stats(s: Settings, since: int | None, watch: float | None, wide: bool) -> None:
    """Counts of every queue, in one table; with --since, its traffic over a window.

    Visible, in flight, delayed, oldest message age, dead-letter queue and its depth, and a fair
    queue's noisy groups and quiet groups' counts (under Amazon SQS's CloudWatch names in JSON);
    the counts are exact. Prints a table unless --output is given, fitted to the terminal: short
    titles explained in a legend under it, the quiet groups' columns only when a queue has noisy
    groups, and turned on its side, a block a queue, when still too wide; --wide prints every
    column under its CloudWatch name. With --since DURATION: each queue's messages sent, received
    (first time), redelivered, deleted, dead-lettered, expired, purged, moved (out and in), empty
    receives and bytes sent over the window, arrivals and completions a minute, and the newest
    backlog sample, from the history kept in the file (sqsqlite history).

    \b
    Example: sqsqlite stats --watch 2
    Example: sqsqlite stats --since 1h --output json
    """
    if since is not None and wide:
        raise click.UsageError(
            "--wide is for the counts' table; --since's columns are its counters' own names already (--output json to read them one by one)."
        )
    if since is None:
        read, show = _stats, (lambda data: _show_stats(s, data, wide))
    else:
        read, show = (lambda s: _history_stats(s, since)), (lambda data: s.echo(data, default="table"))
    if watch is None:
        data = read(s)
        show(data)
        if not data["Queues"] and (s.output or "table") == "table" and not s.missing and "History" not in data:  # said already
            click.echo(f"No queues in {s.path} yet; make one with: sqsqlite create-queue --queue-name NAME", err=True)
        return
    try:
        while True:
            data = read(s)  # read before clearing, so the screen never sits blank
            click.clear()
            click.echo(f"sqsqlite stats  {s.path}  {datetime.now():%H:%M:%S}  (every {watch:g}s, Ctrl-C to stop)")
            show(data)
            _sleep(watch)
    except KeyboardInterrupt:
        click.echo("")  # the prompt starts on a line of its own, after the last frame
        raise click.exceptions.Exit(130) from None  # interrupted, as every command exits on Ctrl-C


@command("peek")
@queue_url_option()
@click.option("--state", type=click.Choice(["visible", "in-flight", "delayed", "all"]), default="all", show_default=True)
@click.option("--limit", type=click.IntRange(D.PEEK_LIMIT.low, D.PEEK_LIMIT.high), default=D.PEEK_LIMIT.default, show_default=True)
def peek(s: Settings, queue_url: str, state: str, limit: int) -> None:
    """Look at messages without receiving them. No state change, no receive count, no handle.

    \b
    Example: sqsqlite peek --queue-url MyQueue --state in-flight --limit 5
    """
    db = s.database(create=False)
    messages = db.queue(queue_url).peek(state, limit)
    now = db.now()
    out = []
    for m in messages:
        item = {
            "MessageId": m.message_id,
            "State": message_state(m.visible_at, m.receive_count, now),
            "MD5OfBody": m.md5_of_body,
            "Body": m.body,
        }
        if m.attributes:
            item["Attributes"] = dict(m.attributes)
        if m.message_attributes:
            item["MessageAttributes"] = {k: a.to_sqs() for k, a in m.message_attributes.items()}
        out.append(item)
    s.echo({"Messages": out} if out else {}, "peek")


@command("prune")
def prune(s: Settings) -> None:
    """Remove expired messages, history past its retention and the expired messages' earlier
    ids (kept for old receipt handles) now; say how many messages.

    Reads never need it: an expired message is never returned or counted; this gives the space
    back. The per-minute history, when on, and the earlier ids are pruned as they go too, a
    little at a time; this removes all that is due.

    \b
    Example: sqsqlite prune
    """
    s.echo({"ExpiredMessagesRemoved": s.database(create=False).prune()}, "prune")


@command("history")
@click.option(
    "--retention",
    type=Duration(),
    metavar="DURATION",
    help="Turn the history on, or change how long it is kept: 1h to 10 years; 14d is CloudWatch's choice.",
)
@click.option("--off", is_flag=True, help="Turn the history off: counting stops and the rows kept are removed.")
def history(s: Settings, retention: int | None, off: bool) -> None:
    """Say whether the file keeps the per-minute history and how long; turn it on or off.

    The history is CloudWatch's counters per queue and minute (sent, received, deleted, ...),
    read by stats --since, /metrics, the console's chart and the report. Off by default: on,
    every send, receive and delete writes one more row, 16-23% more CPU. The setting is the
    file's: every process using it follows at its next write.

    \b
    Example: sqsqlite history --retention 14d
    Example: sqsqlite history --off
    """
    if off and retention is not None:
        raise click.BadParameter("give --retention DURATION or --off, not both", param_hint="'--off'")
    db = s.database(create=retention is not None)  # turned on for a file to come: it is made
    if off or retention is not None:
        try:
            db.set_history_retention(0 if off else retention // 1000)  # type: ignore[operator]  # set: not off
        except SQSError as err:
            raise click.BadParameter(err.message, param_hint="'--retention'") from None
    seconds = db.history_retention
    s.echo({"History": "on", "RetentionSeconds": seconds} if seconds else {"History": "off"}, "history")


# ---------------------------------------------------------------------- redrive


@command("apply-queues")
@click.argument("file", type=click.Path(dir_okay=False))
def apply_queues(s: Settings, file: str) -> None:
    """Create or update the queues a file declares (YAML, JSON, or ElasticMQ's elasticmq.conf).

    Idempotent: a missing queue is created, an existing one gets the file's attributes and tags
    (never dropped, its messages kept), and queues the file does not list are left as they are
    (NotInFile). The whole file is checked first: a mistake changes nothing and names the queue
    and the key. `sqsqlite serve --queues FILE` applies the same file at every start.

    \b
    Example: sqsqlite apply-queues queues.yaml
    """
    from sqsqlite.server.queues_file import QueuesFileError, read_queues_file
    from sqsqlite.server.queues_file import apply_queues as apply

    try:
        specs = read_queues_file(file)
        s.echo(apply(s.database(), specs, file), "apply-queues")
    except QueuesFileError as err:
        raise Failure(str(err)) from None


@command("redrive")
@queue_url_option()
@click.option("--to", "to", metavar="QUEUE", help="Move to this queue (URL or name) instead of each message's source queue.")
@click.option("--rate", type=int, metavar="N", help="At most N messages per second (1-500).")
def redrive(s: Settings, queue_url: str, to: str | None, rate: int | None) -> None:
    """Move dead letters back, with a progress bar.

    Interrupted (Ctrl-C, a crash), it resumes where it stopped when run again: a RUNNING task for
    the queue is continued; --to or --rate other than that task's is bad usage (cancel it first).

    \b
    Example: sqsqlite redrive --queue-url MyQueue-dlq --rate 100
    """
    db = s.database(create=False)
    source = db.queue(queue_url)
    dest = db.queue(to).arn if to else None
    running = [t for t in db.list_message_move_tasks(source.arn, 10) if t.status == "RUNNING"]
    if running:
        task = running[0]
        if (to is not None and dest != task.destination_arn) or (rate is not None and rate != task.max_number_of_messages_per_second):
            # Resuming would quietly move them elsewhere, or at another rate, than asked.
            was = f"to {task.destination_arn or 'each source queue'} at {task.max_number_of_messages_per_second or 'full'} per second"
            raise click.UsageError(
                f"a move task on {source.name} is still running ({was}); run `sqsqlite redrive --queue-url {source.name}` "
                f"without --to and --rate to resume it, or cancel it first: sqsqlite cancel-message-move-task --task-handle {task.task_handle}"
            )
        click.echo(f"Resuming the running move task on {source.name}.", err=True)
    else:
        db.start_message_move_task(source.arn, dest, rate, background=False)
        [task] = db.list_message_move_tasks(source.arn, 1)  # the newest: the one just started
    handle = task.task_handle
    with click.progressbar(length=task.approximate_number_of_messages_to_move, label=f"Redriving {source.name}", file=sys.stderr) as bar:
        done = [task.approximate_number_of_messages_moved]
        bar.update(done[0])

        def progress(t) -> None:
            bar.update(t.approximate_number_of_messages_moved - done[0])
            done[0] = t.approximate_number_of_messages_moved

        try:
            task = db.run_message_move_task(handle, progress)
        except KeyboardInterrupt:
            resume_hint(f"sqsqlite redrive --queue-url {source.name}")
    out = {
        "Status": task.status,
        "SourceArn": task.source_arn,
        "ApproximateNumberOfMessagesMoved": task.approximate_number_of_messages_moved,
        "ApproximateNumberOfMessagesToMove": task.approximate_number_of_messages_to_move,
    }
    if task.failure_reason:
        out["FailureReason"] = task.failure_reason
    s.echo(out, "redrive")
    if task.failure_hint:  # FailureReason is SQS's (an error code); this names what was missing
        click.echo(f"hint: {task.failure_hint}", err=True)


# ---------------------------------------------------------------------- export / import

EXPORT_FORMAT = "sqsqlite-export/2"
# The formats import reads, and whether a file of each ends with an end line (EXPORT_END): one
# cut short (an export interrupted, killed, or its pipe's writer gone) then can't pass for whole.
# Version 1 files, written before the end line, are still read as they are.
EXPORT_FORMATS = {"sqsqlite-export/1": False, EXPORT_FORMAT: True}
EXPORT_END = "ExportEnd"


@command("export", output=None)
@queue_url_option()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
def export(s: Settings, queue_url: str, file: str) -> None:
    """Write a queue and its messages to FILE as JSON lines.

    Every live message with body, attributes, timestamps and receive count; the first line
    describes the queue (attributes, tags), the last says the export is whole (import refuses a
    file without it). FILE '-' is stdout. A FILE is written beside it as FILE.partial and takes
    FILE's place only once whole: an export stopped part-way leaves FILE as it was.

    \b
    Example: sqsqlite export --queue-url MyQueue backup.jsonl
    """
    db = s.database(create=False)
    q = db.queue(queue_url)
    attrs = q.get_queue_attributes(["All"])
    total = sum(
        int(attrs[k])
        for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
    )
    header = {
        "Format": EXPORT_FORMAT,
        "QueueName": q.name,
        "Attributes": {k: v for k, v in attrs.items() if k in D.SETTABLE_ATTRIBUTES},
        "Tags": q.list_queue_tags(),
    }
    count = 0
    # A regular file (or a new one) is written under another name and renamed over FILE once
    # whole; stdout, a pipe or a device is written as it goes (the end line tells import). The
    # file a symbolic link names is the one replaced, and it keeps its permissions.
    target = os.path.realpath(file) if file != "-" else file
    partial = f"{target}.partial" if file != "-" and (os.path.isfile(target) or not os.path.exists(target)) else None
    try:
        if partial is None:
            out = click.open_file(file, "w", encoding="utf-8")
        else:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            if os.path.exists(target):
                os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
            out = open(fd, "w", encoding="utf-8")
    except OSError as exc:  # a missing directory, no permission: the caller's path, named
        raise click.BadParameter(f"cannot write {file}: {exc.strerror or exc}.", param_hint="FILE") from None
    try:
        with out as fh:  # its close writes what is buffered, so it can fail too
            fh.write(json.dumps(header, ensure_ascii=False) + "\n")
            with click.progressbar(q.export_messages(), length=total, label=f"Exporting {q.name}", file=sys.stderr) as bar:
                for record in bar:
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    count += 1
            fh.write(json.dumps({EXPORT_END: True, "MessagesExported": count}) + "\n")
        if partial is not None:
            os.replace(partial, target)
    except BaseException as exc:
        if partial is not None:
            with contextlib.suppress(OSError):
                os.remove(partial)
        if isinstance(exc, BrokenPipeError):
            raise  # `export ... - | head`: the reader left, which the entry point handles
        if isinstance(exc, OSError):  # a full disk, a quota, an I/O error part-way
            left = f"{file} is as it was" if partial is not None else "what was written has no end line, so import refuses it"
            raise Failure(
                f"cannot write {file}: {exc.strerror or exc}. The export is incomplete ({left}) and the queue unchanged: "
                "export again when the write can succeed."
            ) from None
        raise
    if file != "-":
        s.echo({"QueueUrl": q.url, "File": file, "MessagesExported": count}, "export")


_HEADER_FIELDS = ("Format", "QueueName", "Attributes", "Tags")


def _bad_line(path: str, number: int, problem: str) -> click.BadParameter:
    return click.BadParameter(f"line {number} of {path} {problem}", param_hint="FILE")


def _lines(fh: Any, path: str) -> Iterator[tuple[int, str]]:
    """The file's non-blank lines with their numbers, decoded here so a bad byte names its line."""
    number = 0
    while True:
        try:
            raw = fh.readline()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {path}: {exc.strerror or exc}.", param_hint="FILE") from None
        if not raw:
            return
        number += 1
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")  # an editor's BOM is no error
        except UnicodeDecodeError as exc:
            raise _bad_line(path, number, f"is not UTF-8 text (byte {exc.start + 1} of the line).") from None
        if text.strip():
            yield number, text


def _parse(path: str, number: int, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad_line(path, number, f"is not JSON ({exc.msg}).") from None
    except RecursionError:
        raise _bad_line(path, number, "is not JSON that sqsqlite reads (nested too deeply).") from None
    except ValueError as exc:  # Python's limit on the digits of an integer
        raise _bad_line(path, number, f"is not JSON that sqsqlite reads ({str(exc).split(':')[0]}).") from None


def _string_map(path: str, number: int, name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
        raise _bad_line(path, number, f"is a bad export header: {name} must be an object of names to strings, got {V.shorten(value)}.")


def _header(path: str, number: int, value: dict) -> dict:
    """The export header's fields, checked for shape; create_queue checks their values."""
    if value.get("Format") not in EXPORT_FORMATS:
        raise _bad_line(
            path,
            number,
            f"is an export header of format {V.shorten(value.get('Format'))}; this sqsqlite reads {' and '.join(EXPORT_FORMATS)}.",
        )
    unknown = sorted(set(value) - set(_HEADER_FIELDS))
    if unknown:
        raise _bad_line(path, number, f"is a bad export header: unknown field {', '.join(unknown)}; it has {', '.join(_HEADER_FIELDS)}.")
    if value.get("QueueName") is not None and not isinstance(value["QueueName"], str):
        raise _bad_line(path, number, f"is a bad export header: QueueName must be a string, got {V.shorten(value['QueueName'])}.")
    _string_map(path, number, "Attributes", value.get("Attributes"))
    _string_map(path, number, "Tags", value.get("Tags"))
    return value


def _end(path: str, number: int, value: dict, read: int) -> int:
    """The export's end line, checked against the messages read before it; its number."""
    if set(value) != {EXPORT_END, "MessagesExported"} or value[EXPORT_END] is not True or type(value["MessagesExported"]) is not int:
        raise _bad_line(path, number, f'is a bad end line: export writes {{"{EXPORT_END}": true, "MessagesExported": <count>}}.')
    if value["MessagesExported"] != read:
        raise _bad_line(path, number, f"ends an export of {value['MessagesExported']} messages, but {read} come before it.")
    return number


def _sqs_rule(path: str, number: int, check: Callable, *args: Any) -> Any:
    """check(*args) for a line of the file: a record not of export's shape is bad usage of the
    file; a value SQS itself refuses stays the SQS error it is from send-message (exit 254).
    Either names the line; a database that can't be used does not."""
    try:
        return check(*args)
    except InvalidExportRecord as err:
        raise _bad_line(path, number, err.message) from None
    except DatabaseError:
        raise  # the database's fault (read-only, full), not the line's: said without it
    except SQSError as err:
        err.message = f"line {number} of {path}: {err.message}"
        raise


@command("import")
@click.option("--queue-url", metavar="URL", help="Import into this queue instead of the one named in the file.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def import_(s: Settings, queue_url: str | None, file: str) -> None:
    """Load a file written by export.

    The messages come back with their ids, timestamps and receive counts (in-flight ones come
    back visible: their receipt handles did not travel). The queue is created from the file's
    first line if it does not exist. Importing a file twice adds its messages twice.

    Every line is checked before anything is written: a line that is not what export writes
    (not JSON, a field of the wrong type, a number out of range, FIFO fields that do not match
    the queue) is bad usage, a value SQS refuses is an SQS error; either names the line, and
    the file then imports nothing and creates no queue. The queue is created in the messages'
    transaction: stopped part-way (a failure, Ctrl-C), an import leaves no queue, and no database
    file where there was none. A file cut short imports nothing either: one of format
    sqsqlite-export/2 must end with export's end line, its count of messages right.

    \b
    Example: sqsqlite import backup.jsonl
    """
    try:
        source = click.open_file(file, "rb")
    except OSError as exc:
        raise click.BadParameter(f"cannot read {file}: {exc.strerror or exc}.", param_hint="FILE") from None
    with source as fh:
        lines = _lines(fh, file)
        first = next(lines, None)
        header = None
        if first is not None:
            first_value = _parse(file, *first)
            if isinstance(first_value, dict) and "Format" in first_value:
                header = _header(file, first[0], first_value)
        target = queue_url or (header or {}).get("QueueName")
        if not target:
            raise click.UsageError(f"{file} does not name its queue (no export header line); pass --queue-url.")
        if not queue_url:  # a bad name in the header is the file's fault: name its line
            assert first is not None  # the name came from the header, the file's first line
            _sqs_rule(file, first[0], V.queue_name_from_url, target)
        name = V.queue_name_from_url(target)
        fifo = name.endswith(".fifo")  # create_queue allows the suffix on FIFO queues only
        # Every record is checked before the database is opened (a refused file creates no
        # file at --db), the queue created or a message written; the parsed list is the price
        # of a bad line 100,000 leaving the file's first lines imported.
        # Each message checked as import_messages will check it, so that nothing it could refuse
        # is left for after the queue is created.
        messages = []
        if first is not None and header is None:
            messages.append(_sqs_rule(file, first[0], records.exported_message, first_value, name, fifo))
        ends = header is not None and EXPORT_FORMATS[header["Format"]]
        end = None
        for number, text in lines:
            value = _parse(file, number, text)
            if end is not None:
                raise _bad_line(file, number, f"follows the export's end line (line {end}).")
            if ends and isinstance(value, dict) and EXPORT_END in value:
                end = _end(file, number, value, len(messages))
                continue
            messages.append(_sqs_rule(file, number, records.exported_message, value, name, fifo))
        if ends and end is None:
            raise click.BadParameter(
                f"{file} is incomplete: it has no end line, so the export that wrote it stopped part-way "
                f"({len(messages)} messages in it). Nothing was imported; export the queue again.",
                param_hint="FILE",
            )
    new_file = header is not None and command_options.no_database_at(s.path)  # this run creates it
    if new_file:
        # The queue it would create, tried first on a scratch database: refused (a bad attribute,
        # a dead-letter queue a new database can't hold), it leaves no file at a mistyped --db.
        assert first is not None and header is not None  # the header is the file's first line
        with tempfile.TemporaryDirectory(prefix="sqsqlite-import-") as scratch:
            with contextlib.closing(s.connect(os.path.join(scratch, "trial.db"))) as trial:
                _sqs_rule(file, first[0], trial.create_queue, name, header.get("Attributes"), header.get("Tags") or None)
    db = s.database(create=header is not None)  # with no header the queue must exist already
    try:
        try:
            q: Any = db.queue(name)
        except QueueDoesNotExist:
            if header is None:
                raise
            q = None
        with click.progressbar(messages, label=f"Importing into {name}", file=sys.stderr) as bar:
            if q is None:
                assert first is not None and header is not None  # a missing queue is created only from a header line
                create = functools.partial(
                    _sqs_rule, file, first[0], db.create_queue, name, header.get("Attributes"), header.get("Tags") or None
                )
                q, count = _create_and_import(db, create, bar)
            else:
                count = q.import_messages(bar)  # one transaction: a failed write (a full disk) leaves nothing
    except BaseException:  # an interrupt too: a database this run created goes with what failed
        if new_file:
            s.close()
            _remove_database(s.path)
        raise
    s.echo({"QueueUrl": q.url, "MessagesImported": count}, "import")


def _create_and_import(db: Any, create: Callable[[], Any], records: Any) -> tuple[Any, int]:
    """Create the queue and import into it in one transaction (one group of writes): a failure
    part-way, an interrupt included, leaves no queue behind. (A queue deleted after the failure
    would keep its name from a second try for 60 s.)"""
    store = db.store
    group = store.begin_group()
    try:
        q = create()
        count = q.import_messages(records)
    except BaseException:
        group.broken = True  # end_group undoes the group's writes, and says so
        with contextlib.suppress(DatabaseError):
            store.end_group(group)
        raise
    store.end_group(group)
    return q, count


def _remove_database(path: str) -> None:
    """Remove the database file at ``path`` and the files SQLite and sqsqlite make beside it."""
    real = os.path.realpath(path)  # where they all are, should the path be a symbolic link
    for name in (real, *(real + end for end in D.SIDE_SUFFIXES)):
        with contextlib.suppress(FileNotFoundError):
            os.remove(name)


# ---------------------------------------------------------------------- demo


@command("demo", output=None)
def demo(s: Settings) -> None:
    """A one-minute tour of the SQS message lifecycle.

    A queue with a dead-letter queue; send, receive, change visibility, delete; a poison message
    landing in the dead-letter queue; stats. Uses its own two queues; safe to run again.

    \b
    Example: sqsqlite demo
    """
    from .demo import run

    run(s)
