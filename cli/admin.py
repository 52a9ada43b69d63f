"""Administration SQS never had: migrations, stats, peek, redrive, prune, export/import, demo."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from typing import Any, Callable, Iterator

import click

from sqsqlite.errors import SQSError

from .options import Command, resume_hint, Settings, command_options_first, global_options, pass_settings, queue_url_option

COMMANDS: list[click.Command] = []
_sleep = time.sleep  # stats --watch's pause; tests replace it


def command(name: str, **kwargs: Any) -> Callable:
    def decorate(f: Callable) -> click.Command:
        cmd = command_options_first(click.command(name, cls=Command, **kwargs)(global_options()(pass_settings(f))))
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

    return Store(s.path, migrate=False)


def _db_command(name: str) -> Callable:
    def decorate(f: Callable) -> click.Command:
        return command_options_first(db_group.command(name)(global_options()(pass_settings(f))))

    return decorate


@_db_command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(s: Settings, revision: str) -> None:
    """Upgrade the schema to REVISION (default: the newest).

    \b
    Example: sqsqlite db upgrade
    """
    from sqsqlite import migrate

    store = _store(s)
    try:
        before = migrate.current(store)
        migrate.upgrade(store, revision)
        s.echo({"From": before or "base", "To": migrate.current(store) or "base"}, "db upgrade", default="text")
    finally:
        store.close()


@_db_command("downgrade")
@click.argument("revision", default="-1")
def db_downgrade(s: Settings, revision: str) -> None:
    """Downgrade the schema to REVISION (default: one step back; 'base' empties the file).

    Any other command upgrades the file again on first use.

    \b
    Example: sqsqlite db downgrade -- -1
    """
    from sqsqlite import migrate

    store = _store(s)
    try:
        before = migrate.current(store)
        migrate.downgrade(store, revision)
        s.echo({"From": before or "base", "To": migrate.current(store) or "base"}, "db downgrade", default="text")
    finally:
        store.close()


@_db_command("current")
def db_current(s: Settings) -> None:
    """Print the file's schema revision ('base' for a new, empty file).

    \b
    Example: sqsqlite db current
    """
    from sqsqlite import migrate

    store = _store(s)
    try:
        s.echo({"Revision": migrate.current(store) or "base"}, "db current", default="text")
    finally:
        store.close()


@_db_command("history")
def db_history(s: Settings) -> None:
    """List the schema revisions this sqsqlite knows, newest first.

    \b
    Example: sqsqlite db history
    """
    from sqsqlite import migrate

    rows = [{"Revision": rev, "DownRevision": down, "Description": doc.splitlines()[0] if doc else ""} for rev, down, doc in migrate.history()]
    s.echo({"Revisions": rows}, "db history", default="table")


# ---------------------------------------------------------------------- stats, peek, prune


def _stats(s: Settings) -> dict:
    rows = []
    for q in s.database().stats():
        rows.append(
            {
                "Queue": q.name,
                "Visible": q.visible,
                "InFlight": q.in_flight,
                "Delayed": q.delayed,
                "OldestAgeSeconds": None if q.oldest_age_seconds is None else round(q.oldest_age_seconds, 1),
                "DeadLetterQueue": q.dead_letter_queue,
                "DeadLetterDepth": q.dead_letter_depth,
            }
        )
    return {"Queues": rows}


@command("stats")
@click.option("--watch", type=click.FloatRange(min=0.1), metavar="SECONDS", help="Refresh every SECONDS until Ctrl-C, like top.")
def stats(s: Settings, watch: float | None) -> None:
    """Counts of every queue, in one table.

    Visible, in flight, delayed, oldest message age, dead-letter queue and its depth; the counts
    are exact. Prints a table unless --output is given.

    \b
    Example: sqsqlite stats --watch 2
    """
    if watch is None:
        s.echo(_stats(s), default="table")
        return
    try:
        while True:
            data = _stats(s)  # read before clearing, so the screen never sits blank
            click.clear()
            click.echo(f"sqsqlite stats  {s.path}  {datetime.now():%H:%M:%S}  (every {watch:g}s, Ctrl-C to stop)")
            s.echo(data, default="table")
            _sleep(watch)
    except KeyboardInterrupt:
        click.echo("")


def _state(m, now: int) -> str:
    if m.visible_at is not None and m.visible_at > now:
        return "in-flight" if m.receive_count else "delayed"
    return "visible"


@command("peek")
@queue_url_option()
@click.option("--state", type=click.Choice(["visible", "in-flight", "delayed", "all"]), default="all", show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True)
def peek(s: Settings, queue_url: str, state: str, limit: int) -> None:
    """Look at messages without receiving them. No state change, no receive count, no handle.

    \b
    Example: sqsqlite peek --queue-url MyQueue --state in-flight --limit 5
    """
    db = s.database()
    messages = db.queue(queue_url).peek(state, limit)
    now = db.now()
    out = []
    for m in messages:
        item = {"MessageId": m.message_id, "State": _state(m, now), "MD5OfBody": m.md5_of_body, "Body": m.body}
        if m.attributes:
            item["Attributes"] = dict(m.attributes)
        if m.message_attributes:
            item["MessageAttributes"] = {k: a.to_sqs() for k, a in m.message_attributes.items()}
        out.append(item)
    s.echo({"Messages": out} if out else {}, "peek")


@command("prune")
def prune(s: Settings) -> None:
    """Remove expired messages now and say how many.

    Reads never need it: an expired message is never returned or counted; this gives the space
    back.

    \b
    Example: sqsqlite prune
    """
    s.echo({"ExpiredMessagesRemoved": s.database().prune()}, "prune")


# ---------------------------------------------------------------------- redrive


@command("redrive")
@queue_url_option()
@click.option("--to", "to", metavar="QUEUE", help="Move to this queue (URL or name) instead of each message's source queue.")
@click.option("--rate", type=int, metavar="N", help="At most N messages per second (1-500).")
def redrive(s: Settings, queue_url: str, to: str | None, rate: int | None) -> None:
    """Move dead letters back, with a progress bar.

    Interrupted (Ctrl-C, a crash), it resumes where it stopped when run again: a RUNNING task for
    the queue is continued.

    \b
    Example: sqsqlite redrive --queue-url MyQueue-dlq --rate 100
    """
    db = s.database()
    source = db.queue(queue_url)
    running = [t for t in db.list_message_move_tasks(source.arn, 10) if t.status == "RUNNING"]
    if running:
        handle = running[0].task_handle
        click.echo(f"Resuming the running move task on {source.name}.", err=True)
    else:
        dest = db.queue(to).arn if to else None
        handle = db.start_message_move_task(source.arn, dest, rate, background=False)
    task = db.list_message_move_tasks(source.arn, 1)[0]
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


# ---------------------------------------------------------------------- export / import

EXPORT_FORMAT = "sqsqlite-export/1"


@command("export")
@queue_url_option()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
def export(s: Settings, queue_url: str, file: str) -> None:
    """Write a queue and its messages to FILE as JSON lines.

    Every live message with body, attributes, timestamps and receive count; the first line
    describes the queue (attributes, tags). FILE '-' is stdout.

    \b
    Example: sqsqlite export --queue-url MyQueue backup.jsonl
    """
    db = s.database()
    q = db.queue(queue_url)
    attrs = q.get_queue_attributes(["All"])
    total = sum(int(attrs[k]) for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"))
    header = {
        "Format": EXPORT_FORMAT,
        "QueueName": q.name,
        "Attributes": {k: v for k, v in attrs.items() if k in _settable()},
        "Tags": q.list_queue_tags(),
    }
    count = 0
    with click.open_file(file, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header, ensure_ascii=False) + "\n")
        with click.progressbar(q.export_messages(), length=total, label=f"Exporting {q.name}", file=sys.stderr) as bar:
            for record in bar:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    if file != "-":
        s.echo({"QueueUrl": q.url, "File": file, "MessagesExported": count}, "export")


def _settable() -> tuple[str, ...]:
    from sqsqlite import defaults as D

    return D.SETTABLE_ATTRIBUTES


_REQUIRED = ("MessageId", "Body", "SentTimestamp")


def _records(path: str, lines: list[tuple[int, str]]) -> Iterator[dict]:
    for number, line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"line {number} of {path} is not JSON ({exc.msg}).", param_hint="FILE") from None
        missing = [k for k in _REQUIRED if k not in record] if isinstance(record, dict) else list(_REQUIRED)
        if missing:
            raise click.BadParameter(f"line {number} of {path} is not an exported message (no {', '.join(missing)}).", param_hint="FILE")
        yield record


@command("import")
@click.option("--queue-url", metavar="URL", help="Import into this queue instead of the one named in the file.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def import_(s: Settings, queue_url: str | None, file: str) -> None:
    """Load a file written by export.

    The messages come back with their ids, timestamps and receive counts (in-flight ones come
    back visible: their receipt handles did not travel). The queue is created from the file's
    first line if it does not exist. Importing a file twice adds its messages twice.

    \b
    Example: sqsqlite import backup.jsonl
    """
    with click.open_file(file, encoding="utf-8") as fh:
        lines = [(n, line) for n, line in enumerate(fh, 1) if line.strip()]
    header = None
    if lines:
        try:
            first = json.loads(lines[0][1])
        except json.JSONDecodeError:
            first = None
        if isinstance(first, dict) and first.get("Format") == EXPORT_FORMAT:
            header, lines = first, lines[1:]
    target = queue_url or (header or {}).get("QueueName")
    if not target:
        raise click.UsageError(f"{file} does not name its queue (no export header line); pass --queue-url.")
    db = s.database()
    try:
        q = db.queue(target)
    except SQSError:
        if header is None:
            raise
        q = db.create_queue(target.rstrip("/").rsplit("/", 1)[-1], attributes=header.get("Attributes"), tags=header.get("Tags") or None)
    with click.progressbar(_records(file, lines), length=len(lines), label=f"Importing into {q.name}", file=sys.stderr) as bar:
        count = q.import_messages(bar)
    s.echo({"QueueUrl": q.url, "MessagesImported": count}, "import")


# ---------------------------------------------------------------------- demo


@command("demo")
def demo(s: Settings) -> None:
    """A one-minute tour of the SQS message lifecycle.

    A queue with a dead-letter queue; send, receive, change visibility, delete; a poison message
    landing in the dead-letter queue; stats. Uses its own two queues; safe to run again.

    \b
    Example: sqsqlite demo
    """
    from .demo import run

    run(s)
