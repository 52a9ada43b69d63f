"""Copy queues and their messages to another SQS endpoint (Amazon SQS, or any that speaks its
API), and drain queues from one into this database, resumably.

To an endpoint (:func:`copy_to`): each queue is created there with its attributes, tags and
redrive policies (ARNs rewritten to the endpoint's account and region; a Policy is left out,
with a note), then its messages are sent, in batches, without receiving them here: bodies,
message attributes, group ids, deduplication ids (a FIFO message's own within its five minutes,
else its MessageId: see _deduplication_id), and what is left of a delay. A standard
queue's go in row order, a FIFO queue's group by group, each group in the queue's order
(bookmark.py). After each batch how far it has come is kept in this database (a bookmark named
by the queue there: its ARN, its creation time and the endpoint's URL), so a copy run again to
that queue continues after it, and sends messages that arrived since. One copy at a time works
on a queue there: a second is refused before it asks anything of the endpoint (lease.py).

From an endpoint (:func:`copy_from`): each remote queue is created here, then drained: a
batch is received there and imported here (with the remote MessageIds) in one transaction that
also notes each message's id, leaving out any already noted; then it is deleted there. A
message delivered again (after a crash between the import and the remote delete, to a second
drain, or by the endpoint after its delete) is recognised by its note and only deleted there,
so nothing is imported twice while its note is kept, and nothing is deleted remotely before it
is committed here.

Both take any boto3-shaped SQS client: ``boto3.client("sqs", endpoint_url=...)``.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import operator
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import defaults as D
from ..core import Database
from ..errors import QueueDoesNotExist
from .bookmark import GroupBookmark, RowBookmark, copy_key, copy_lease_key, legacy_copy_key, read_bookmark
from .lease import Leases

# The queue attributes a queue is made with; the rest are counts and stamps the endpoint keeps.
# Policy is not among them: it names ARNs and principals that mean something else at the other
# end (the copy says so when a queue has one).
SETTABLE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
)
# Set once every queue exists at the other end: they name other queues by ARN.
REDRIVE_ATTRIBUTES = ("RedrivePolicy", "RedriveAllowPolicy")


class CopyError(Exception):
    """The other endpoint refused something, or could not be reached, or another copy holds a
    queue's position there; the message names the queue, the message and why. ``what``: that
    message without the why. ``service``: where the endpoint answered with an SQS error, its
    (code, operation, message), for the line the aws CLI would print of it. ``hint``: what to do
    about it, where sqsqlite can say."""

    def __init__(self, message: str, what: str | None = None, service: tuple[str, str, str] | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.what = what or message
        self.service = service
        self.hint = hint

    @property
    def sqs_error(self) -> bool:
        """Whether the endpoint answered with an SQS error code."""
        return self.service is not None


class CopyInProgress(CopyError):
    """Another copy is sending ``queue``'s messages to the queue of that name there (at
    ``endpoint``), from the same kept position: this one was refused before it asked anything
    of the endpoint. ``pid``: that copy's process, 0 where it is not known."""

    def __init__(self, queue: str, endpoint: str | None, pid: int) -> None:
        if pid == os.getpid():
            who = "this process"
        else:
            who = f"process {pid}" if pid else "another process"
        where = f" at {endpoint}" if endpoint else ""
        super().__init__(
            f"{queue}: another copy to {queue}{where} is running ({who}): this one changed nothing there",
            hint="one copy at a time to a queue there: run this again once that one has ended, and it continues where that one stopped",
        )
        self.queue, self.endpoint, self.pid = queue, endpoint, pid


@dataclass
class CopyReport:
    """What a copy did: queue names (source side) and messages sent or imported, by queue."""

    queues: list[str] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)
    left_remotely: dict[str, int] = field(default_factory=dict)  # copy_from: in flight or delayed there
    stopped: bool = False  # copy_to: ended early, when asked to
    notes: list[str] = field(default_factory=list)  # what was left out, and why


def _name(url_or_arn: str) -> str:
    return url_or_arn.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]


def _code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        return response["Error"].get("Code") or None
    return None


def _error(exc: Exception) -> str:
    code = _code(exc)
    if code is not None:
        return f"{code}: {getattr(exc, 'response', {})['Error'].get('Message')}"
    return f"{type(exc).__name__}: {exc}"


def _failure(what: str, exc: Exception) -> CopyError:
    code = _code(exc)
    if code is None:
        return CopyError(f"{what}: {_error(exc)}", what)
    service = (code, getattr(exc, "operation_name", None) or "SQS", getattr(exc, "response", {})["Error"].get("Message") or "")
    return CopyError(f"{what}: {_error(exc)}", what, service)


def _call(what: str, method: Callable[..., Any], **kwargs: Any) -> Any:
    """One request to the other endpoint; any failure a CopyError that starts with ``what``."""
    try:
        return method(**kwargs)
    except Exception as exc:
        raise _failure(what, exc) from None


def _policy_note(name: str) -> str:
    return (
        f"{name}: its Policy was not copied: it names the queue's ARN and principals where it is now, "
        "which mean something else at the other end; set the policy there anew"
    )


def _rewrite_arns(value: str, arn_of: Callable[[str], str]) -> str:
    """A RedrivePolicy or RedriveAllowPolicy with its queue ARNs pointing at the other side."""
    if not value:
        return value
    policy = json.loads(value)
    if "deadLetterTargetArn" in policy:
        policy["deadLetterTargetArn"] = arn_of(_name(policy["deadLetterTargetArn"]))
    if policy.get("sourceQueueArns"):
        policy["sourceQueueArns"] = [arn_of(_name(arn)) for arn in policy["sourceQueueArns"]]
    return json.dumps(policy, separators=(",", ":"))


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
        code = _code(exc) or ""
        if "QueueAlreadyExists" not in code and "QueueNameExists" not in code:
            raise _failure(f"could not create queue {name}", exc) from None
    # Made by an earlier run, since changed: brought to these attributes.
    url = _call(f"{name}: could not find the queue there", client.get_queue_url, QueueName=name)["QueueUrl"]
    settable = {k: v for k, v in attributes.items() if k != "FifoQueue"}
    if settable:
        _call(f"{name}: could not set its attributes there", client.set_queue_attributes, QueueUrl=url, Attributes=settable)
    if tags:
        _call(f"{name}: could not tag it there", client.tag_queue, QueueUrl=url, Tags=tags)
    return url


# ---------------------------------------------------------------------------------- to


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
            return accepted, _failure(f"{name}: sending a batch failed", exc)
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


def _adopt_legacy_bookmark(db: Database, key: str, arn: str) -> bool:
    """Move a position an older sqsqlite kept by the ARN alone to ``key``, once, where ``key``
    has none: most such positions are of the queue a run again goes to, and starting over would
    send every message again. Whether one was moved."""
    legacy = legacy_copy_key(arn)
    value = db.bookmark(legacy)
    if value is None or db.bookmark(key) is not None:
        return False
    db.set_bookmarks({key: value, legacy: None})
    return True


def copy_to(
    db: Database,
    client: Any,
    queue_names: Iterable[str] | None = None,
    progress: Callable[[str, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> CopyReport:
    """Copy queues (all, or those named, with the dead-letter queues they need) and their
    messages to the endpoint ``client`` talks to. What each queue has sent is kept in a bookmark
    named by the queue there: its ARN and CreatedTimestamp as the endpoint gives them, and the
    endpoint's URL (``client.meta.endpoint_url``; see ``bookmark.copy_key``). A copy run again to
    that queue through that URL continues; a copy to another queue (another account or region, a
    queue deleted and made again, another endpoint) starts from the beginning. ``stop`` is asked between batches: when it
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
        target = _name(json.loads(policy)["deadLetterTargetArn"])
        if target not in attributes and not _holds(db, target):  # deleted since: copied without its redrive policy
            orphaned[name] = target
            return None
        return target

    ordered = _in_dependency_order(names, target_of)
    for name in ordered:
        target_of(name)  # every queue's attributes read
    report = CopyReport(queues=ordered)
    urls, arns, keys = {}, {}, {}
    endpoint = getattr(getattr(client, "meta", None), "endpoint_url", None)
    with Leases(db.path) as leases:
        # Every queue's lease before anything is asked of the endpoint: a copy refused has made
        # no queue there, set no attribute and sent nothing.
        _take_leases(leases, ordered, endpoint)
        for name in ordered:
            plain = {k: attributes[name][k] for k in SETTABLE_ATTRIBUTES if k in attributes[name]}
            if attributes[name].get("Policy"):
                report.notes.append(_policy_note(name))
            urls[name] = _ensure_queue(client, name, plain, db.queue(name).list_queue_tags())
            got = _call(
                f"{name}: could not read its ARN there",
                client.get_queue_attributes,
                QueueUrl=urls[name],
                AttributeNames=["QueueArn", "CreatedTimestamp"],
            )["Attributes"]
            arns[name] = got["QueueArn"]
            keys[name] = copy_key(arns[name], got.get("CreatedTimestamp", ""), endpoint)
        for name in ordered:
            kept = [k for k in REDRIVE_ATTRIBUTES if attributes[name].get(k) and not (k == "RedrivePolicy" and name in orphaned)]
            if name in orphaned:
                report.notes.append(f"{name}: its RedrivePolicy was not copied: its dead-letter queue {orphaned[name]} does not exist here")
            if kept:
                there = functools.partial(operator.add, arns[name].rsplit(":", 1)[0] + ":")  # a queue name -> its ARN there
                redrive = {k: _rewrite_arns(attributes[name][k], there) for k in kept}
                _call(
                    f"{name}: could not set its redrive policy there", client.set_queue_attributes, QueueUrl=urls[name], Attributes=redrive
                )
        for name in ordered:
            if _adopt_legacy_bookmark(db, keys[name], arns[name]):
                report.notes.append(
                    f"{name}: continues from the position an older sqsqlite kept for {arns[name]} (by the ARN alone, "
                    "so for whichever queue had it last); it is kept by this queue there from now on"
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


# ---------------------------------------------------------------------------------- from


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


def read_remote(client: Any, queue_urls: Iterable[str]) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Each remote queue's attributes and tags, by URL; CopyError for one that is not there or
    cannot be read. Asked before anything is made here (the database file too, for a command)."""
    out = {}
    for url in queue_urls:
        attributes = _call(url, client.get_queue_attributes, QueueUrl=url, AttributeNames=["All"])["Attributes"]
        out[url] = (attributes, _call(url, client.list_queue_tags, QueueUrl=url).get("Tags", {}))
    return out


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
    report = CopyReport(queues=[_name(u) for u in urls])
    there = dict(remote_queues) if remote_queues is not None else read_remote(client, urls)
    remote_attributes = {}
    for url in urls:
        name = _name(url)
        remote, tags = there[url]
        remote_attributes[name] = remote
        plain = {k: remote[k] for k in SETTABLE_ATTRIBUTES if k in remote and k not in ("KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds")}
        if remote.get("Policy"):
            report.notes.append(_policy_note(name))
        try:
            db.queue(name)
        except QueueDoesNotExist:
            db.create_queue(name, attributes=plain, tags=tags or None)
    for name, remote in remote_attributes.items():
        redrive = {}
        policy = remote.get("RedrivePolicy")
        if policy:
            target = _name(json.loads(policy)["deadLetterTargetArn"])
            if target in remote_attributes:
                redrive["RedrivePolicy"] = _rewrite_arns(policy, db.queue_arn)
            else:
                report.notes.append(f"{name}: its RedrivePolicy was not copied: its dead-letter queue {target} is not drained with it")
        if remote.get("RedriveAllowPolicy"):
            redrive["RedriveAllowPolicy"] = _rewrite_arns(remote["RedriveAllowPolicy"], db.queue_arn)
        if redrive:
            db.queue(name).set_queue_attributes(redrive)
    for url in urls:
        name = _name(url)
        queue = db.queue(name)
        fifo = name.endswith(".fifo")
        # By the queue's ARN as the endpoint gives it, not by the URL: one queue, however spelled.
        prefix = f"copy-from {remote_attributes[name].get('QueueArn') or url} "
        _prune_notes(db, prefix, note_seconds)
        imported = 0
        while True:
            got = _call(
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
            _call(
                f"{url}: deleting what was imported failed (it is imported; run again)",
                client.delete_message_batch,
                QueueUrl=url,
                Entries=entries,
            )
            if progress:
                progress(name, imported)
        report.messages[name] = imported
        left = _call(
            f"{url}: counting what is left there failed (what was received is imported)",
            client.get_queue_attributes,
            QueueUrl=url,
            # Visible ones too: a FIFO group's messages behind one in flight can't be received yet.
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        report.left_remotely[name] = sum(int(v) for v in left.values())
    return report
