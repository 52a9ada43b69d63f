"""Copy queues and their messages to another SQS endpoint (Amazon SQS, or any that speaks its
API), and drain queues from one into this database, resumably.

To an endpoint (:func:`copy_to`): each queue is created there with its attributes, tags and
redrive policies (ARNs rewritten to the endpoint's account and region), then its messages are
sent in send order, in batches, without receiving them here: bodies, message attributes, group
and deduplication ids, and what is left of a delay. After each batch the position of its last
message is kept in this database (a bookmark), so a copy run again continues after it, and sends
messages that arrived since.

From an endpoint (:func:`copy_from`): each remote queue is created here, then drained: a
batch is received there, imported here (with the remote MessageIds) in one transaction together
with a note of each message's id, deleted there, and the notes removed. A message received
again after a crash between the import and the remote delete is recognised by its note and only
deleted there, so nothing is imported twice and nothing is deleted remotely before it is
committed here.

Both take any boto3-shaped SQS client: ``boto3.client("sqs", endpoint_url=...)``.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import defaults as D
from ..core import Database
from ..errors import QueueDoesNotExist

# The queue attributes a queue is made with; the rest are counts and stamps the endpoint keeps.
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
    "Policy",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
)
# Set once every queue exists at the other end: they name other queues by ARN.
REDRIVE_ATTRIBUTES = ("RedrivePolicy", "RedriveAllowPolicy")


class CopyError(Exception):
    """The other endpoint refused something; the message names the queue, the message and why."""


@dataclass
class CopyReport:
    """What a copy did: queue names (source side) and messages sent or imported, by queue."""

    queues: list[str] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)
    left_remotely: dict[str, int] = field(default_factory=dict)  # copy_from: in flight or delayed there
    stopped: bool = False  # copy_to: ended early, when asked to


def _name(url_or_arn: str) -> str:
    return url_or_arn.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]


def _error(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        return f"{response['Error'].get('Code')}: {response['Error'].get('Message')}"
    return f"{type(exc).__name__}: {exc}"


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
        code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code", "")
        if "QueueAlreadyExists" not in code and "QueueNameExists" not in code:
            raise CopyError(f"could not create queue {name}: {_error(exc)}") from None
    # Made by an earlier run, since changed: brought to these attributes.
    url = client.get_queue_url(QueueName=name)["QueueUrl"]
    settable = {k: v for k, v in attributes.items() if k != "FifoQueue"}
    if settable:
        client.set_queue_attributes(QueueUrl=url, Attributes=settable)
    if tags:
        client.tag_queue(QueueUrl=url, Tags=tags)
    return url


# ---------------------------------------------------------------------------------- to


def _entry(number: int, record: dict[str, Any], fifo: bool, now_ms: int) -> dict[str, Any]:
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
        # The message's own id, not its deduplication id: two live messages here may share one
        # (sent over five minutes apart), and the endpoint would drop the second. The MessageId is
        # unique and the same on a re-run, so a batch sent again within five minutes is dropped.
        entry["MessageDeduplicationId"] = record["MessageId"]
    elif not record["ApproximateReceiveCount"] and record["VisibleAt"] > now_ms:
        # Still delayed here: the rest of its delay there. (An in-flight message is sent visible:
        # its lease belongs to a consumer of this database.)
        entry["DelaySeconds"] = min(D.MAX_DELAY_SECONDS, math.ceil((record["VisibleAt"] - now_ms) / 1000))
    return entry


def _size(entry: dict[str, Any]) -> int:
    size = len(entry["MessageBody"].encode("utf-8"))
    for name, value in entry.get("MessageAttributes", {}).items():
        raw = value.get("BinaryValue")
        size += len(name) + len(value["DataType"]) + (len(raw) if raw is not None else len(value["StringValue"].encode("utf-8")))
    return size


def _batches(records: Iterable[tuple[int, dict]], fifo: bool, now: Callable[[], int]) -> Iterable[list[tuple[int, dict]]]:
    batch: list[tuple[int, dict]] = []
    size = 0
    for position, record in records:
        entry = _entry(len(batch), record, fifo, now())
        if batch and (len(batch) == D.MAX_BATCH_ENTRIES or size + _size(entry) > D.MAX_BATCH_PAYLOAD):
            yield batch
            batch, size = [], 0
            entry = _entry(0, record, fifo, now())
        batch.append((position, entry))
        size += _size(entry)
    if batch:
        yield batch


def _send(client: Any, url: str, name: str, batch: list[tuple[int, dict]]) -> None:
    """Send one batch; entries that fail are tried again twice, then the copy stops."""
    entries = {entry["Id"]: entry for _, entry in batch}
    for _ in range(3):
        try:
            result = client.send_message_batch(QueueUrl=url, Entries=list(entries.values()))
        except Exception as exc:
            raise CopyError(f"{name}: sending a batch failed: {_error(exc)}") from None
        failed = {f["Id"]: f for f in result.get("Failed", [])}
        if not failed:
            return
        if any(f.get("SenderFault") for f in failed.values()):
            first = next(iter(failed.values()))
            raise CopyError(f"{name}: the endpoint refused a message: {first.get('Code')}: {first.get('Message')}")
        entries = {k: v for k, v in entries.items() if k in failed}
    first = next(iter(failed.values()))
    raise CopyError(f"{name}: the endpoint kept failing a message: {first.get('Code')}: {first.get('Message')}")


def copy_to(
    db: Database,
    client: Any,
    destination: str,
    queue_names: Iterable[str] | None = None,
    progress: Callable[[str, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> CopyReport:
    """Copy queues (all, or those named, with the dead-letter queues they need) and their
    messages to the endpoint ``client`` talks to. ``destination`` names that endpoint in the
    bookmarks (its URL): a copy to another endpoint starts from the beginning. ``stop`` is asked
    between batches: when it says True the copy ends there, its last batch's position kept
    (``report.stopped``), so that a run again sends nothing twice."""
    names = list(queue_names) if queue_names is not None else [_name(url) for url in db.list_queues()[0]]
    attributes = {}

    def target_of(name: str) -> str | None:
        if name not in attributes:
            attributes[name] = db.queue(name).get_queue_attributes(["All"])
        policy = attributes[name].get("RedrivePolicy")
        return _name(json.loads(policy)["deadLetterTargetArn"]) if policy else None

    ordered = _in_dependency_order(names, target_of)
    for name in ordered:
        target_of(name)  # every queue's attributes read
    report = CopyReport(queues=ordered)
    urls = {}
    for name in ordered:
        plain = {k: attributes[name][k] for k in SETTABLE_ATTRIBUTES if k in attributes[name]}
        urls[name] = _ensure_queue(client, name, plain, db.queue(name).list_queue_tags())
    arn_prefix = ""
    for name in ordered:
        if any(attributes[name].get(k) for k in REDRIVE_ATTRIBUTES):
            if not arn_prefix:
                arn = client.get_queue_attributes(QueueUrl=urls[name], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
                arn_prefix = arn.rsplit(":", 1)[0] + ":"
            there = functools.partial(operator.add, arn_prefix)  # a queue name -> its ARN there
            redrive = {k: _rewrite_arns(attributes[name][k], there) for k in REDRIVE_ATTRIBUTES if attributes[name].get(k)}
            try:
                client.set_queue_attributes(QueueUrl=urls[name], Attributes=redrive)
            except Exception as exc:
                raise CopyError(f"{name}: could not set its redrive policy there: {_error(exc)}") from None
    for name in ordered:
        queue = db.queue(name)
        key = f"copy-to {destination} {name}"
        after = int(db.bookmark(key) or b"0")
        sent = 0
        for batch in _batches(queue.message_records(after=after), name.endswith(".fifo"), db.now):
            if stop and stop():
                report.stopped = True
                break
            _send(client, urls[name], name, batch)
            db.set_bookmark(key, str(batch[-1][0]).encode())
            sent += len(batch)
            if progress:
                progress(name, sent)
        report.messages[name] = sent
        if report.stopped:
            break
    return report


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


def copy_from(
    db: Database,
    client: Any,
    queue_urls: Iterable[str],
    wait_seconds: int = 2,
    visibility_timeout: int = 60,
    progress: Callable[[str, int], None] | None = None,
) -> CopyReport:
    """Drain the remote queues at ``queue_urls`` into this database: their attributes, tags and
    redrive policies (where the dead-letter queue is copied too), then every message they
    deliver, each deleted there only once committed here. Stops when a receive waiting
    ``wait_seconds`` gets nothing; messages in flight or delayed there are counted in the
    report's ``left_remotely`` (run again to take them)."""
    urls = list(queue_urls)
    report = CopyReport(queues=[_name(u) for u in urls])
    remote_attributes = {}
    for url in urls:
        name = _name(url)
        try:
            remote = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
            tags = client.list_queue_tags(QueueUrl=url).get("Tags", {})
        except Exception as exc:
            raise CopyError(f"{url}: {_error(exc)}") from None
        remote_attributes[name] = remote
        plain = {k: remote[k] for k in SETTABLE_ATTRIBUTES if k in remote and k not in ("KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds")}
        try:
            db.queue(name)
        except QueueDoesNotExist:
            db.create_queue(name, attributes=plain, tags=tags or None)
    for name, remote in remote_attributes.items():
        policy = remote.get("RedrivePolicy")
        if policy and _name(json.loads(policy)["deadLetterTargetArn"]) in remote_attributes:
            db.queue(name).set_queue_attributes({"RedrivePolicy": _rewrite_arns(policy, db.queue_arn)})
    for url in urls:
        name = _name(url)
        queue = db.queue(name)
        fifo = name.endswith(".fifo")
        prefix = f"copy-from {url} "
        imported = 0
        while True:
            try:
                got = client.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=D.MAX_MESSAGES_PER_RECEIVE,
                    WaitTimeSeconds=wait_seconds,
                    VisibilityTimeout=visibility_timeout,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
            except Exception as exc:
                raise CopyError(f"{url}: receiving failed: {_error(exc)}") from None
            if not got:
                break
            noted = db.bookmarks(prefix)
            fresh = [m for m in got if prefix + m["MessageId"] not in noted]
            if fresh:
                now = db.now()
                queue.import_messages([_record(m, fifo, now) for m in fresh], bookmarks={prefix + m["MessageId"]: b"1" for m in fresh})
                imported += len(fresh)
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
            try:
                result = client.delete_message_batch(QueueUrl=url, Entries=entries)
            except Exception as exc:
                raise CopyError(f"{url}: deleting what was imported failed (it is imported; run again): {_error(exc)}") from None
            failed = {f["Id"] for f in result.get("Failed", [])}
            for i, m in enumerate(got):
                if str(i) not in failed:
                    db.set_bookmark(prefix + m["MessageId"], None)
            if progress:
                progress(name, imported)
        report.messages[name] = imported
        left = client.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
        )["Attributes"]
        report.left_remotely[name] = sum(int(v) for v in left.values())
    return report
