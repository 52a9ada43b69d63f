"""``sqsqlite demo``: the SQS message lifecycle in a minute, told step by step.

Uses only the base install (no boto3, no pyspark) and its own two queues, which it empties on
the way in, so it can run again and again on the same file.
"""

from __future__ import annotations

import os
import shutil
import sys

import click

from sqsqlite.errors import SQSError

from .options import Settings
from .output import grid

QUEUE, DLQ = "demo-orders", "demo-orders-dlq"


def _step(title: str) -> None:
    click.echo("")
    click.secho(f"== {title}", bold=True)


def _drain(queue) -> int:
    """Delete what a previous run left behind; messages still in flight from an interrupted
    run stay until their visibility timeout ends, and are drained by the next run."""
    drained = 0
    while True:
        messages = queue.receive_message(max_number_of_messages=10, visibility_timeout=30)
        if not messages:
            return drained
        for m in messages:
            m.delete()
        drained += len(messages)


def run(s: Settings) -> None:
    db = s.database()
    click.echo(f"sqsqlite demo on {s.path}: one SQLite file, the Amazon SQS message lifecycle.")

    _step("Create a queue whose poison messages go to a dead-letter queue")
    dlq = db.create_queue(DLQ)
    redrive = f'{{"deadLetterTargetArn":"{dlq.arn}","maxReceiveCount":"2"}}'
    q = db.create_queue(QUEUE, attributes={"VisibilityTimeout": "30", "RedrivePolicy": redrive})
    click.echo(f"{q.url}  (VisibilityTimeout 30 s, after 2 receives a message moves to {DLQ})")
    left = _drain(q) + _drain(dlq)
    if left:
        click.echo(f"(deleted {left} message{'s' if left > 1 else ''} left by an earlier run)")

    _step("Send three orders")
    for n in (1, 2, 3):
        r = q.send_message(f"order #{n}", message_attributes={"customer": f"c-{100 + n}"})
        click.echo(f"sent 'order #{n}'  MessageId {r.message_id}")

    _step("Receive them: each is now in flight, hidden from other consumers for 30 s")
    messages = q.receive_message(max_number_of_messages=10, message_attribute_names=["All"])
    for m in messages:
        click.echo(f"received {m.body!r}  receipt handle {m.receipt_handle[:16]}...  receive count {m.receive_count}")
    counts = q.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    click.echo(f"visible {counts['ApproximateNumberOfMessages']}, in flight {counts['ApproximateNumberOfMessagesNotVisible']}")

    _step("One order needs more time: extend its visibility to 120 s from now")
    slow, *rest = messages
    slow.change_visibility(120)
    click.echo(f"{slow.body!r} stays hidden for 120 s more; the new timeout counts from this call, not from the receive")

    _step("Done with all three: delete them")
    for m in rest + [slow]:
        m.delete()
        click.echo(f"deleted {m.body!r}")

    _step("A poison message: every consumer crashes on it")
    q.send_message("order #4 (corrupt)")
    received = []
    for attempt in (1, 2):
        # visibility 0 stands in for a crashed consumer whose timeout ran out
        [m] = q.receive_message(visibility_timeout=0)
        received.append(m)
        click.echo(f"receive {attempt}: {m.body!r}, receive count {m.receive_count}; the consumer crashes")
    first = received[0]
    try:
        first.delete()
    except SQSError as err:
        click.echo(f"the first consumer's old handle no longer works: {err.code}")
    again = q.receive_message()
    click.echo(f"receive 3: {len(again)} messages; the message went to the dead-letter queue instead")
    [dead] = dlq.peek("visible", 1)  # peek: look without receiving, so nothing changes
    click.echo(f"{DLQ} holds {dead.body!r}, same MessageId {dead.message_id}")
    click.echo(
        f"  ApproximateReceiveCount {dead.attributes['ApproximateReceiveCount']}, DeadLetterQueueSourceArn {dead.attributes['DeadLetterQueueSourceArn']}"
    )

    _step("Stats (sqsqlite stats)")
    rows = [
        [
            x.name,
            x.visible,
            x.in_flight,
            x.delayed,
            "" if x.oldest_age_seconds is None else round(x.oldest_age_seconds, 1),
            x.dead_letter_queue or "",
            "" if x.dead_letter_depth is None else x.dead_letter_depth,
        ]
        for x in db.stats()
        if x.name in (QUEUE, DLQ)
    ]
    click.echo(grid(["Queue", "Visible", "InFlight", "Delayed", "OldestAgeSeconds", "DeadLetterQueue", "DeadLetterDepth"], rows))

    _step("Next")
    activate = _activate_hint()
    if activate:
        click.echo(f"{activate:<46} put sqsqlite on your PATH first (this shell's PATH does not have it)")
    for cmd, why in (
        (f"sqsqlite peek --queue-url {DLQ}", "look at the dead letter without receiving it"),
        (f"sqsqlite redrive --queue-url {DLQ}", f"move it back to {QUEUE}"),
        ("sqsqlite --help", "every aws sqs command, plus administration"),
    ):
        click.echo(f"{cmd:<46} {why}")


def _activate_hint() -> str | None:
    """The command that puts this sqsqlite on PATH, when the shell would not find it (run as
    `make demo`, from the virtual environment's bin directory)."""
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    found = shutil.which("sqsqlite")
    if found and os.path.dirname(os.path.abspath(found)) == here:
        return None
    activate = os.path.join(here, "activate")
    if not os.path.exists(activate):
        return None
    relative = os.path.relpath(activate)
    return f". {relative if not relative.startswith('..') else activate}"
