"""Draining an endpoint's queues into this database (:func:`copy_from`): each remote queue made
here, then its messages received there, imported here with a note of each, and deleted there
once committed (the package's docstring tells the whole story)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import defaults as D
from ..core import Database
from ..errors import QueueDoesNotExist
from .remote import SETTABLE_ATTRIBUTES, CopyReport, call, policy_note, queue_name, read_remote, rewrite_arns


def _record(message: dict[str, Any], fifo: bool, now_ms: int) -> dict[str, Any]:
    """A received remote message as an export record: its id, body, attributes and stamps."""
    system = message.get("Attributes", {})
    attributes = {}
    for name, value in (message.get("MessageAttributes") or {}).items():
        if "BinaryValue" in value:
            attributes[name] = {"DataType": value["DataType"], "BinaryValue": base64.b64encode(value["BinaryValue"]).decode()}
        else:
            attributes[name] = {"DataType": value["DataType"], "StringValue": value["StringValue"]}
    # This receive counted once there; here it never happened.
    received = max(0, int(system.get("ApproximateReceiveCount", "1")) - 1)
    record: dict[str, Any] = {
        "MessageId": message["MessageId"],
        "Body": message["Body"],
        "MessageAttributes": attributes,
        "SentTimestamp": int(system.get("SentTimestamp", now_ms)),
        "VisibleAt": now_ms,
        "ApproximateReceiveCount": received,
        "ApproximateFirstReceiveTimestamp": int(system["ApproximateFirstReceiveTimestamp"])
        if received and "ApproximateFirstReceiveTimestamp" in system
        else None,
    }
    if system.get("SenderId"):
        record["SenderId"] = system["SenderId"]
    if fifo:
        record["MessageGroupId"] = system.get("MessageGroupId")
        record["MessageDeduplicationId"] = system.get("MessageDeduplicationId")
    elif system.get("MessageGroupId"):
        record["MessageGroupId"] = system["MessageGroupId"]
    return record


def _prune_notes(db: Database, prefix: str, keep_seconds: int) -> None:
    """Remove the notes under ``prefix`` older than ``keep_seconds``."""
    oldest = db.now() - keep_seconds * 1000
    old: dict[str, bytes | None] = {}
    for key, value in db.bookmarks(prefix).items():
        try:
            stamp = int(value)
        except ValueError:  # not a stamp: an older sqsqlite's note
            stamp = 0
        if stamp < oldest:
            old[key] = None
    if old:
        db.set_bookmarks(old)


def copy_from(
    db: Database,
    client: Any,
    queue_urls: Iterable[str],
    wait_seconds: int = 2,
    visibility_timeout: int = 60,
    progress: Callable[[str, int], None] | None = None,
    note_seconds: int = D.COPY_FROM_NOTE_SECONDS,
    remote_queues: Mapping[str, tuple[dict[str, str], dict[str, str]]] | None = None,
) -> CopyReport:
    """Drain the remote queues at ``queue_urls`` into this database: their attributes, tags and
    redrive policies (a RedrivePolicy where the dead-letter queue is copied too), then every
    message they deliver, each deleted there only once committed here. Stops when a receive
    waiting ``wait_seconds`` gets nothing; messages in flight or delayed there are counted in
    the report's ``left_remotely`` (run again to take them).

    Each message imported is noted, in its import's transaction, by the remote queue's ARN and
    its MessageId, and the note is kept ``note_seconds``: a message delivered again in that time
    (after a crash before its delete, by another drain of the same queue, or by the endpoint
    after its delete) is only deleted there. Older notes are removed when a drain starts.
    ``remote_queues``: what read_remote answered for these URLs, where the caller asked it first."""
    urls = list(queue_urls)
    report = CopyReport(queues=[queue_name(u) for u in urls])
    there = dict(remote_queues) if remote_queues is not None else read_remote(client, urls)
    remote_attributes = {}
    for url in urls:
        name = queue_name(url)
        remote, tags = there[url]
        remote_attributes[name] = remote
        plain = {k: remote[k] for k in SETTABLE_ATTRIBUTES if k in remote and k not in ("KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds")}
        if remote.get("Policy"):
            report.notes.append(policy_note(name))
        try:
            db.queue(name)
        except QueueDoesNotExist:
            db.create_queue(name, attributes=plain, tags=tags or None)
    for name, remote in remote_attributes.items():
        redrive = {}
        policy = remote.get("RedrivePolicy")
        if policy:
            target = queue_name(json.loads(policy)["deadLetterTargetArn"])
            if target in remote_attributes:
                redrive["RedrivePolicy"] = rewrite_arns(policy, db.queue_arn)
            else:
                report.notes.append(f"{name}: its RedrivePolicy was not copied: its dead-letter queue {target} is not drained with it")
        if remote.get("RedriveAllowPolicy"):
            redrive["RedriveAllowPolicy"] = rewrite_arns(remote["RedriveAllowPolicy"], db.queue_arn)
        if redrive:
            db.queue(name).set_queue_attributes(redrive)
    for url in urls:
        name = queue_name(url)
        queue = db.queue(name)
        fifo = name.endswith(".fifo")
        # By the queue's ARN as the endpoint gives it, not by the URL: one queue, however spelled.
        prefix = f"copy-from {remote_attributes[name].get('QueueArn') or url} "
        _prune_notes(db, prefix, note_seconds)
        imported = 0
        while True:
            got = call(
                f"{url}: receiving failed",
                client.receive_message,
                QueueUrl=url,
                MaxNumberOfMessages=D.MAX_MESSAGES_PER_RECEIVE,
                WaitTimeSeconds=wait_seconds,
                VisibilityTimeout=visibility_timeout,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not got:
                break
            now = db.now()
            notes = [prefix + m["MessageId"] for m in got]
            # The notes are looked up inside the import's transaction: of two drains that got
            # the same messages, the second to commit skips them.
            imported += queue.import_messages(
                [_record(m, fifo, now) for m in got], bookmarks=dict.fromkeys(notes, str(now).encode()), skip_bookmarked=notes
            )
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
            # A delete that fails leaves the message there; it comes back and is recognised.
            call(
                f"{url}: deleting what was imported failed (it is imported; run again)",
                client.delete_message_batch,
                QueueUrl=url,
                Entries=entries,
            )
            if progress:
                progress(name, imported)
        report.messages[name] = imported
        left = call(
            f"{url}: counting what is left there failed (what was received is imported)",
            client.get_queue_attributes,
            QueueUrl=url,
            # Visible ones too: a FIFO group's messages behind one in flight can't be received yet.
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        report.left_remotely[name] = sum(int(v) for v in left.values())
    return report
