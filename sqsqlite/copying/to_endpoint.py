"""Copying to an endpoint (:func:`copy_to`): each queue made there, then its messages sent in
batches after what its bookmark says was sent (the package's docstring tells the whole story)."""

from __future__ import annotations

import base64
import functools
import json
import math
import operator
from collections.abc import Callable, Iterable
from typing import Any

from .. import defaults as D
from ..core import Database
from ..errors import QueueDoesNotExist
from .bookmark import GroupBookmark, RowBookmark, copy_key, copy_lease_key, legacy_copy_key, previous_copy_key, read_bookmark
from .lease import Leases
from .remote import (
    REDRIVE_ATTRIBUTES,
    SETTABLE_ATTRIBUTES,
    CopyError,
    CopyInProgress,
    CopyReport,
    call,
    error_code,
    failure,
    policy_note,
    queue_name,
    rewrite_arns,
)


def _in_dependency_order(names: Iterable[str], target_of: Callable[[str], str | None]) -> list[str]:
    """Every queue named and every dead-letter queue they need, dead-letter queues first."""
    ordered: list[str] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        if name in ordered or name in seen:
            return
        target = target_of(name)
        if target:
            visit(target, (*seen, name))
        ordered.append(name)

    for name in names:
        visit(name, ())
    return ordered


def _ensure_queue(client: Any, name: str, attributes: dict[str, str], tags: dict[str, str]) -> str:
    """The queue at the other end, made with these attributes (or brought to them)."""
    kwargs: dict[str, Any] = {"QueueName": name, "Attributes": attributes}
    if tags:
        kwargs["tags"] = tags
    try:
        return client.create_queue(**kwargs)["QueueUrl"]
    except Exception as exc:
        code = error_code(exc) or ""
        if "QueueAlreadyExists" not in code and "QueueNameExists" not in code:
            raise failure(f"could not create queue {name}", exc) from None
    # Made by an earlier run, since changed: brought to these attributes.
    url = call(f"{name}: could not find the queue there", client.get_queue_url, QueueName=name)["QueueUrl"]
    settable = {k: v for k, v in attributes.items() if k != "FifoQueue"}
    if settable:
        call(f"{name}: could not set its attributes there", client.set_queue_attributes, QueueUrl=url, Attributes=settable)
    if tags:
        call(f"{name}: could not tag it there", client.tag_queue, QueueUrl=url, Tags=tags)
    return url


def _deduplication_id(record: dict[str, Any], now_ms: int, carried: set[str]) -> str:
    """A FIFO message's deduplication id at the other end.

    Its own while SQS would still deduplicate it here (sent under five minutes ago), so that a
    producer's send retried across the cut-over is dropped there as it would have been here; the
    endpoint's five minutes start with the copy's send. Else its MessageId, unique and the same
    on a run again (so a batch sent again within five minutes is dropped): two live messages may
    share an older id (sent over five minutes apart), and the endpoint would drop the second.
    Its MessageId too for a dead letter (no producer sends to a dead-letter queue, and one shared
    by several queues may hold two messages of one id) and for a second message of an id in
    this run (in different groups, under DeduplicationScope messageGroup)."""
    own = record["MessageDeduplicationId"]
    fresh = now_ms - record["SentTimestamp"] < D.FIFO_DEDUP_WINDOW_SECONDS * 1000
    if own and fresh and not record.get("DeadLetterQueueSourceArn") and own not in carried:
        carried.add(own)
        return own
    return record["MessageId"]


def _entry(number: int, record: dict[str, Any], fifo: bool, now_ms: int, carried: set[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"Id": str(number), "MessageBody": record["Body"]}
    attributes = {}
    for name, value in (record["MessageAttributes"] or {}).items():
        if "BinaryValue" in value:
            attributes[name] = {"DataType": value["DataType"], "BinaryValue": base64.b64decode(value["BinaryValue"])}
        else:
            attributes[name] = {"DataType": value["DataType"], "StringValue": value["StringValue"]}
    if attributes:
        entry["MessageAttributes"] = attributes
    if record["MessageGroupId"] is not None:
        entry["MessageGroupId"] = record["MessageGroupId"]
    if fifo:
        # (No DelaySeconds: a FIFO queue takes none per message; each waits the queue's own.)
        entry["MessageDeduplicationId"] = _deduplication_id(record, now_ms, carried)
    elif not record["ApproximateReceiveCount"] and record["VisibleAt"] > now_ms:
        # Still delayed here: the rest of its delay there.
        entry["DelaySeconds"] = min(D.MAX_DELAY_SECONDS, math.ceil((record["VisibleAt"] - now_ms) / 1000))
    else:
        # Visible here (or in flight: its lease belongs to a consumer of this database): visible
        # there at once, not after the queue's own delay a second time.
        entry["DelaySeconds"] = 0
    return entry


def _size(entry: dict[str, Any]) -> int:
    size = len(entry["MessageBody"].encode("utf-8"))
    for name, value in entry.get("MessageAttributes", {}).items():
        raw = value.get("BinaryValue")
        size += len(name) + len(value["DataType"]) + (len(raw) if raw is not None else len(value["StringValue"].encode("utf-8")))
    return size


def _batches(
    records: Iterable[tuple[Any, dict]], fifo: bool, now: Callable[[], int], carried: set[str]
) -> Iterable[list[tuple[Any, dict]]]:
    """The records as batches of entries; ``carried``: the deduplication ids of their own that
    messages went with in this run (_deduplication_id)."""
    batch: list[tuple[Any, dict]] = []
    size = 0
    for position, record in records:
        entry = _entry(len(batch), record, fifo, now(), carried)
        if batch and (len(batch) == D.MAX_BATCH_ENTRIES or size + _size(entry) > D.MAX_BATCH_PAYLOAD):
            yield batch
            batch, size = [], 0
            entry["Id"] = "0"
        batch.append((position, entry))
        size += _size(entry)
    if batch:
        yield batch


def _overtaken_group(pending: list[str], accepted: set[str], order: list[str], by_id: dict[str, dict]) -> str | None:
    """A group one of whose failed entries the endpoint passed over, accepting a later entry of
    that group: sent now, the failed one would land after it."""
    for failed in pending:
        group = by_id[failed].get("MessageGroupId")
        later = order[order.index(failed) + 1 :]
        if any(i in accepted and by_id[i].get("MessageGroupId") == group for i in later):
            return group
    return None


def _send(client: Any, url: str, name: str, batch: list[tuple[Any, dict]], fifo: bool) -> tuple[set[str], CopyError | None]:
    """Send one batch: the entry Ids the endpoint accepted, and why it stopped short of all.

    Entries that fail (not by the sender's fault) are sent again, in their order, twice at most.
    On a FIFO queue only while no later entry of their group was accepted: after one was, a
    failed entry sent again would land behind it, so the copy stops and says so."""
    order = [entry["Id"] for _, entry in batch]
    by_id = {entry["Id"]: entry for _, entry in batch}
    accepted: set[str] = set()
    pending = order
    why = ""
    for _ in range(D.COPY_SEND_ATTEMPTS):
        try:
            result = client.send_message_batch(QueueUrl=url, Entries=[by_id[i] for i in pending])
        except Exception as exc:
            return accepted, failure(f"{name}: sending a batch failed", exc)
        failed = {f["Id"]: f for f in result.get("Failed", [])}
        accepted.update(i for i in pending if i not in failed)
        if not failed:
            return accepted, None
        pending = [i for i in pending if i in failed]
        first = failed[pending[0]]
        why = f"{first.get('Code')}: {first.get('Message')}"
        service = (str(first.get("Code")), "SendMessageBatch", str(first.get("Message")))  # the entry's, as a request's
        if any(f.get("SenderFault") for f in failed.values()):
            return accepted, CopyError(f"{name}: the endpoint refused a message: {why}", f"{name}: the endpoint refused a message", service)
        group = _overtaken_group(pending, accepted, order, by_id) if fifo else None
        if group is not None:
            after = "accepted a later one of that group; a run again sends the failed one, behind it"
            what = f"{name}: the endpoint failed a message of group {group}"
            return accepted, CopyError(f"{what} ({why}) and {after}", f"{what} and {after}", service)
    return accepted, CopyError(
        f"{name}: the endpoint kept failing a message: {why}", f"{name}: the endpoint kept failing a message", service
    )


def _note_accepted(bookmark: RowBookmark | GroupBookmark, batch: list[tuple[Any, dict]], accepted: set[str]) -> int:
    """Note in ``bookmark`` what the endpoint accepted of ``batch``, and count it. Everything up
    to the first entry not accepted is sent; what it accepted beyond that is kept apart, so a
    run again sends only the rest."""
    taken = [entry["Id"] in accepted for _, entry in batch]
    in_turn = taken.index(False) if False in taken else len(batch)
    bookmark.sent([p for p, _ in batch[:in_turn]], [p for (p, _), ok in zip(batch[in_turn:], taken[in_turn:]) if ok])
    return taken.count(True)


def _copy_messages(
    db: Database,
    client: Any,
    name: str,
    url: str,
    key: str,
    progress: Callable[[str, int], None] | None,
    stop: Callable[[], bool] | None,
) -> tuple[int, bool]:
    """Send the queue's messages after what its bookmark ``key`` says was sent, keeping the
    bookmark after each batch: how many were sent, and whether ``stop`` ended it early."""
    queue = db.queue(name)
    bookmark, converted = read_bookmark(queue, db.bookmark(key))
    if converted:
        db.set_bookmark(key, bookmark.value())  # converted once, whatever happens next
    sent = 0
    carried: set[str] = set()
    while True:
        # A FIFO walk an earlier run began covers what was there then: once it is over, this
        # run sends what arrived since in a walk of its own.
        resumed = bookmark.walking()
        for batch in _batches(bookmark.records(queue), queue.fifo, db.now, carried):
            if stop and stop():
                return sent, True
            accepted, error = _send(client, url, name, batch, queue.fifo)
            if accepted:
                sent += _note_accepted(bookmark, batch, accepted)
                db.set_bookmark(key, bookmark.value())
                if progress:
                    progress(name, sent)
            if error is not None:
                raise error
        if bookmark.finished():
            db.set_bookmark(key, bookmark.value())
        if not resumed:
            return sent, False


def _holds(db: Database, name: str) -> bool:
    try:
        db.queue(name)
    except QueueDoesNotExist:
        return False
    return True


def _adopt_older_bookmark(db: Database, key: str, arn: str, created: str, endpoint: str | None) -> str | None:
    """Move a position an older sqsqlite kept for the queue there to ``key``, once, where ``key``
    has none: most such positions are of the queue a run again goes to, and starting over would
    send every message again. An older sqsqlite named it by the queue there alone (before that,
    by its ARN alone), as if the file held one account's queues in one region: it is taken for
    the default account's and region's queue of the name (where an upgrade from then put the
    file's queues, unless told otherwise), never another's, whose copy starts from its first
    message rather than pass over messages a position of another queue says were sent. How the
    position moved was named, for the note; None if none was."""
    if (db.account_id, db.region) != (D.DEFAULT_ACCOUNT_ID, D.DEFAULT_REGION) or db.bookmark(key) is not None:
        return None
    for older, named in (
        (previous_copy_key(arn, created, endpoint), "by the queue there alone"),
        (legacy_copy_key(arn), "by the ARN alone"),
    ):
        value = db.bookmark(older)
        if value is not None:
            db.set_bookmarks({key: value, older: None})
            return named
    return None


def copy_to(
    db: Database,
    client: Any,
    queue_names: Iterable[str] | None = None,
    progress: Callable[[str, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> CopyReport:
    """Copy queues (all, or those named, with the dead-letter queues they need) and their
    messages to the endpoint ``client`` talks to; ``db``'s account's and region's queues (a
    ``db.scoped`` view copies another's). What each queue has sent is kept in a bookmark named
    by the queue there: its ARN and CreatedTimestamp as the endpoint gives them, and the
    endpoint's URL (``client.meta.endpoint_url``; see ``bookmark.copy_key``); and by the queue
    here (its ARN: account, region, name). A copy run again from that queue to that queue
    through that URL continues; a copy to another queue (another account or region, a queue
    deleted and made again, another endpoint), or from a queue of the name in another account or
    region here, starts from the beginning. ``stop`` is asked between batches: when it
    says True the copy ends there, its last batch's position kept (``report.stopped``), so that
    a run again sends nothing twice. While it runs it holds a lease on each queue there, by its
    name and the endpoint's URL (lease.py, ``bookmark.copy_lease_key``): a copy started meanwhile
    to one of these queues there raises CopyInProgress before it asks anything of the endpoint,
    so it has made no queue there, set no attribute and sent no message."""
    names = list(queue_names) if queue_names is not None else db.queue_names()  # every one: list_queues stops at 1,000
    attributes = {}
    orphaned = {}  # a queue whose dead-letter queue is gone here: that queue's name

    def target_of(name: str) -> str | None:
        if name not in attributes:
            attributes[name] = db.queue(name).get_queue_attributes(["All"])
        policy = attributes[name].get("RedrivePolicy")
        if not policy or name in orphaned:
            return None
        target = queue_name(json.loads(policy)["deadLetterTargetArn"])
        if target not in attributes and not _holds(db, target):  # deleted since: copied without its redrive policy
            orphaned[name] = target
            return None
        return target

    ordered = _in_dependency_order(names, target_of)
    for name in ordered:
        target_of(name)  # every queue's attributes read
    report = CopyReport(queues=ordered)
    urls, arns, created, keys = {}, {}, {}, {}
    endpoint = getattr(getattr(client, "meta", None), "endpoint_url", None)
    with Leases(db.path) as leases:
        # Every queue's lease before anything is asked of the endpoint: a copy refused has made
        # no queue there, set no attribute and sent nothing.
        _take_leases(leases, ordered, endpoint)
        for name in ordered:
            plain = {k: attributes[name][k] for k in SETTABLE_ATTRIBUTES if k in attributes[name]}
            if attributes[name].get("Policy"):
                report.notes.append(policy_note(name))
            if db.archive_retention(name) is not None:  # sqsqlite's own setting: SQS has none
                report.notes.append(f"{name}: its archive of deleted messages was not copied: it is sqsqlite's own, which SQS has not")
            urls[name] = _ensure_queue(client, name, plain, db.queue(name).list_queue_tags())
            got = call(
                f"{name}: could not read its ARN there",
                client.get_queue_attributes,
                QueueUrl=urls[name],
                AttributeNames=["QueueArn", "CreatedTimestamp"],
            )["Attributes"]
            arns[name], created[name] = got["QueueArn"], got.get("CreatedTimestamp", "")
            keys[name] = copy_key(arns[name], created[name], endpoint, db.queue_arn(name))
        for name in ordered:
            kept = [k for k in REDRIVE_ATTRIBUTES if attributes[name].get(k) and not (k == "RedrivePolicy" and name in orphaned)]
            if name in orphaned:
                report.notes.append(f"{name}: its RedrivePolicy was not copied: its dead-letter queue {orphaned[name]} does not exist here")
            if kept:
                there = functools.partial(operator.add, arns[name].rsplit(":", 1)[0] + ":")  # a queue name -> its ARN there
                redrive = {k: rewrite_arns(attributes[name][k], there) for k in kept}
                call(
                    f"{name}: could not set its redrive policy there", client.set_queue_attributes, QueueUrl=urls[name], Attributes=redrive
                )
        for name in ordered:
            named = _adopt_older_bookmark(db, keys[name], arns[name], created[name], endpoint)
            if named:
                report.notes.append(
                    f"{name}: continues from the position an older sqsqlite kept for {arns[name]} ({named}, "
                    f"so for whichever queue had it last); from now on it is kept for {db.queue_arn(name)} here and that queue there"
                )
            report.messages[name], report.stopped = _copy_messages(db, client, name, urls[name], keys[name], progress, stop)
            if report.stopped:
                break
    return report


def _take_leases(leases: Leases, names: list[str], endpoint: str | None) -> None:
    """The lease on each queue there (copy_lease_key), or CopyInProgress naming the first another
    copy holds (those taken are let go with ``leases``). Taken in one order by every copy, so
    that of two wanting some of the same queues at once, one gets them all."""
    for name in sorted(names):
        try:
            holder = leases.take(copy_lease_key(name, endpoint))
        except OSError as exc:
            raise CopyError(
                f"{name}: could not lock {exc.filename or 'its lease file'} beside the database ({exc.strerror or exc}), "
                "which keeps a second copy to that queue there from running at once: this one changed nothing there"
            ) from None
        if holder is not None:
            raise CopyInProgress(name, endpoint, holder)
