"""The action layer: SQS's own request and response shapes over a :class:`Database`.

``Actions(db).call("SendMessage", {"QueueUrl": ..., "MessageBody": ...})`` takes the members
SQS's API reference names (PascalCase, attribute values as strings) and returns the response
members SQS returns, raising :class:`sqsqlite.errors.SQSError` with SQS's codes. The CLI, the
in-process boto3-style client and the HTTP endpoint all sit on this one layer, so an action
behaves the same through each of them.

Binary message attribute values are ``bytes`` here (as boto3 hands them over); the wire
protocols base64-encode them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from itertools import repeat
from operator import contains
from typing import Any

from . import batches as B
from . import defaults as D
from . import validation as V
from .action_table import TABLE
from .core import BatchResult, Database, Message, MoveTask, Queue, SendResult, SentMessages, Wait, name_after, page_token, receiving
from .errors import InvalidParameterValue, MissingParameter, QueueDoesNotExist, UnsupportedOperation

Request = Mapping[str, Any]
Response = dict[str, Any]

# Members each action accepts (action_table.TABLE's); anything else is refused, as SQS refuses
# unknown parameters. Each is a method of Actions below, of the same name.
MEMBERS: dict[str, tuple[str, ...]] = {a.name: tuple(a.members) for a in TABLE}
# Known to SQS, deliberately not offered (none today: AddPermission and RemovePermission keep
# their statements in the Policy attribute, enforced by nobody, as a local file has no IAM).
UNSUPPORTED: tuple[str, ...] = ()

ACTIONS = tuple(MEMBERS)
_ALLOWED = {action: frozenset(members) for action, members in MEMBERS.items()}


def _required(request: Request, name: str) -> Any:
    value = request.get(name)
    if value is None or value == "":
        raise MissingParameter(f"The request must contain the parameter {name}.")
    return value


def _int(request: Request, name: str, low: int, high: int, default: int | None = None) -> int | None:
    value = request.get(name)
    if value is None:
        return default
    return V.int_value(name, value, low, high)


def _message_attributes_in(raw: Any) -> Any:
    """BinaryValue may arrive as bytes (boto3) or base64 text (JSON wire, CLI). A value that is
    no structure (the Python API's shorthand, a bare str or number) has no DataType here, as
    SQS reads it, and is refused so."""
    if not isinstance(raw, Mapping):
        return raw
    out = {}
    for name, value in raw.items():
        if not isinstance(value, Mapping):
            value = {}
        elif isinstance(value.get("BinaryValue"), str):
            try:
                value = {**value, "BinaryValue": base64.b64decode(value["BinaryValue"], validate=True)}
            except (binascii.Error, ValueError):
                raise InvalidParameterValue(f"Message attribute {name!r}: BinaryValue is not valid base64.") from None
        out[name] = value
    return out


def _send_result(r: SendResult, with_id: bool = False) -> Response:
    out: Response = {}
    if with_id:
        out["Id"] = r.id
    out["MessageId"] = r.message_id
    out["MD5OfMessageBody"] = r.md5_of_message_body
    if r.md5_of_message_attributes:
        out["MD5OfMessageAttributes"] = r.md5_of_message_attributes
    if r.sequence_number:
        out["SequenceNumber"] = r.sequence_number
    return out


def _batch(result: BatchResult, success: Callable[[Any], Response]) -> Response:
    """A batch action's response. SQS leaves an empty list out (no "Failed" when every entry
    succeeded, no "Successful" when none did), and so must we: code that reads resp["Failed"]
    unguarded would pass here and fail against SQS."""
    out: Response = {}
    if result.successful:
        out["Successful"] = [success(s) for s in result.successful]
    if result.failed:
        out["Failed"] = [{"Id": f.id, "SenderFault": f.sender_fault, "Code": f.code, "Message": f.message} for f in result.failed]
    return out


def message_out(m: Message) -> Response:
    body = m.body
    out: Response = {
        "MessageId": m.message_id,
        "ReceiptHandle": m.receipt_handle,
        "MD5OfBody": V.md5_hex(body.encode()),  # m.md5_of_body, without its cache
        "Body": body,
    }
    if m.attributes:
        out["Attributes"] = dict(m.attributes)
    if m.message_attributes:
        out["MD5OfMessageAttributes"] = m.md5_of_message_attributes
        out["MessageAttributes"] = {name: a.to_sqs() for name, a in m.message_attributes.items()}
    return out


def _move_task_out(t: MoveTask) -> Response:
    out: Response = {
        "Status": t.status,
        "SourceArn": t.source_arn,
        "ApproximateNumberOfMessagesMoved": t.approximate_number_of_messages_moved,
        "ApproximateNumberOfMessagesToMove": t.approximate_number_of_messages_to_move,
        "StartedTimestamp": t.started_timestamp,
    }
    if t.task_handle:
        out["TaskHandle"] = t.task_handle
    if t.destination_arn:
        out["DestinationArn"] = t.destination_arn
    if t.max_number_of_messages_per_second:
        out["MaxNumberOfMessagesPerSecond"] = t.max_number_of_messages_per_second
    if t.failure_reason:
        out["FailureReason"] = t.failure_reason
    return out


class Actions:
    """Every SQS action sqsqlite supports, by its SQS name.

    ``background_moves=False`` makes StartMessageMoveTask only record the task; the caller then
    runs it with ``db.run_message_move_task(handle)`` (the CLI does, having no server to run it).
    """

    def __init__(self, db: Database, *, background_moves: bool = True, queues: dict[tuple[Database, str], Queue] | None = None):
        self.db = db
        self.background_moves = background_moves
        # (database, QueueUrl) -> Queue: a URL's queue name is checked once, not on every call.
        # ``queues``: one such cache that the action layers of many scopes share, so that its
        # bound (QUEUE_URLS_KEPT) holds for them all, however many scopes requests name.
        self._queues: dict[tuple[Database, str], Queue] = {} if queues is None else queues

    def call(self, action: str, request: Request | None = None) -> Response:
        return getattr(self, action)(self._checked(action, request))

    def _checked(self, action: str, request: Request | None) -> dict:
        """``request`` as a dict of ``action``'s members; UnsupportedOperation for an action
        sqsqlite has not, InvalidParameterValue for a member the action has not."""
        if type(request) is not dict:  # a plain dict is read, never changed: no copy of it
            request = dict(request or {})
        allowed = _ALLOWED.get(action)
        if allowed is None:
            if action in UNSUPPORTED:
                raise UnsupportedOperation(
                    f"{action} is not supported: sqsqlite has no IAM principals; use the Policy attribute to keep a policy document."
                )
            raise UnsupportedOperation(f"Unknown action {V.shorten(action)}; supported actions: {', '.join(ACTIONS)}.")
        if not request.keys() <= allowed:
            unknown = sorted(set(request) - allowed)
            raise InvalidParameterValue(
                f"Unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for {action}; "
                f"it accepts: {', '.join(MEMBERS[action])}."
            )
        return request

    def _queue(self, request: Request) -> Queue:
        # No existence check here: every queue operation checks inside its own transaction.
        url = request.get("QueueUrl")
        if type(url) is not str:
            return Queue(*self.db.for_queue_url(url))  # refused there, as SQS words it
        key = (self.db, url)
        queue = self._queues.get(key)
        if queue is None:
            queue = Queue(*self.db.for_queue_url(url))
            if len(self._queues) >= D.QUEUE_URLS_KEPT:
                self._queues.clear()
            self._queues[key] = queue
        return queue

    # ------------------------------------------------------------ queues

    def CreateQueue(self, r: Request) -> Response:
        q = self.db.create_queue(_required(r, "QueueName"), attributes=r.get("Attributes"), tags=r.get("tags"))
        return {"QueueUrl": q.url}

    def DeleteQueue(self, r: Request) -> Response:
        self.db.delete_queue(_required(r, "QueueUrl"))
        return {}

    def ListQueues(self, r: Request) -> Response:
        urls, token = self.db.list_queues(r.get("QueueNamePrefix") or "", r.get("MaxResults"), r.get("NextToken"))
        out: Response = {}
        if urls:
            out["QueueUrls"] = urls
        if token:
            out["NextToken"] = token
        return out

    def GetQueueUrl(self, r: Request) -> Response:
        owner = r.get("QueueOwnerAWSAccountId")
        name = V.queue_name(_required(r, "QueueName"))
        if owner not in (None, "", self.db.account_id):
            raise QueueDoesNotExist(
                "The specified queue does not exist.",
                f"The queue {name!r} does not exist in account {owner}; this database holds account {self.db.account_id}.",
            )
        return {"QueueUrl": self.db.get_queue_url(name)}

    def GetQueueAttributes(self, r: Request) -> Response:
        names = r.get("AttributeNames") or []
        if isinstance(names, str):
            names = [names]
        attrs = self._queue(r).get_queue_attributes(names)  # no names: nothing, after checking the queue
        return {"Attributes": attrs} if attrs else {}

    def SetQueueAttributes(self, r: Request) -> Response:
        self._queue(r).set_queue_attributes(_required(r, "Attributes"))
        return {}

    def AddPermission(self, r: Request) -> Response:
        self._queue(r).add_permission(_required(r, "Label"), _required(r, "AWSAccountIds"), _required(r, "Actions"))
        return {}

    def RemovePermission(self, r: Request) -> Response:
        self._queue(r).remove_permission(_required(r, "Label"))
        return {}

    def TagQueue(self, r: Request) -> Response:
        self._queue(r).tag_queue(_required(r, "Tags"))
        return {}

    def UntagQueue(self, r: Request) -> Response:
        self._queue(r).untag_queue(_required(r, "TagKeys"))
        return {}

    def ListQueueTags(self, r: Request) -> Response:
        tags = self._queue(r).list_queue_tags()
        return {"Tags": tags} if tags else {}

    def PurgeQueue(self, r: Request) -> Response:
        self._queue(r).purge_queue()
        return {}

    def ListDeadLetterSourceQueues(self, r: Request) -> Response:
        urls = self._queue(r).list_dead_letter_source_queues()  # in name order
        limit = _int(r, "MaxResults", 1, D.MAX_LIST_QUEUES_RESULTS)
        token = r.get("NextToken")
        if token is not None and token != "":  # absent or empty lists from the start, as ListQueues does
            after = name_after(token, "ListDeadLetterSourceQueues")
            urls = [u for u in urls if V.queue_name_from_url(u) > after]
        page = urls if limit is None else urls[:limit]
        out: Response = {"queueUrls": page}  # SQS spells this member in lower camel case
        if len(page) < len(urls):
            out["NextToken"] = page_token(V.queue_name_from_url(page[-1]))
        return out

    # ------------------------------------------------------------ messages

    def SendMessage(self, r: Request) -> Response:
        result = self._queue(r).send_message(
            _required(r, "MessageBody"),
            delay_seconds=r.get("DelaySeconds"),
            message_attributes=_message_attributes_in(r.get("MessageAttributes")),
            message_group_id=r.get("MessageGroupId"),
            message_deduplication_id=r.get("MessageDeduplicationId"),
            message_system_attributes=r.get("MessageSystemAttributes"),
        )
        out = _send_result(result)
        system = r.get("MessageSystemAttributes")
        if system:
            out["MD5OfMessageSystemAttributes"] = _md5_of_system_attributes(system)
        return out

    def SendMessageBatch(self, r: Request) -> Response:
        batch = B.batch_entry_ids(r.get("Entries"), "SendMessageBatch")  # checked once, here: the queue takes the Batch as it is
        digests = {}
        entries = batch.entries
        if batch.members_of("MessageBody") is None and (
            any(map(contains, entries, repeat("MessageAttributes"))) or any(map(contains, entries, repeat("MessageSystemAttributes")))
        ):
            # Each entry's MessageSystemAttributes are checked before anything is sent, as
            # SendMessage's are, and digested into its own result (SDKs compare per entry).
            entries = []
            for e in batch.entries:
                if e.get("MessageSystemAttributes"):
                    digests[e["Id"]] = _md5_of_system_attributes(e["MessageSystemAttributes"])
                if e.get("MessageAttributes") is not None:
                    e = {**e, "MessageAttributes": _message_attributes_in(e["MessageAttributes"])}
                entries.append(e)
            batch = batch._replace(entries=entries)
        result = self._queue(r).send_message_batch(batch)
        if type(result.successful) is SentMessages:
            # Bodies alone, all sent: the entries written out in one comprehension (a call
            # and a SendResult a message cost as much again as the digest).
            ids, bodies, entry_ids = result.successful.columns()
            return {
                "Successful": [
                    {"Id": i, "MessageId": m, "MD5OfMessageBody": V.md5_hex(b.encode())} for i, m, b in zip(entry_ids, ids, bodies)
                ]
            }

        def success(s):
            out = _send_result(s, with_id=True)
            if s.id in digests:
                out["MD5OfMessageSystemAttributes"] = digests[s.id]
            return out

        return _batch(result, success)

    def ReceiveMessage(self, r: Request) -> Response:
        queue = self._queue(r)
        return receive_response([message_out(m) for m in receiving.receive(queue.context, queue, _receive_request(r))])

    def receive_round(self, r: Request, shared: bool = False) -> Response | Wait:
        """One round of the ReceiveMessage ``r``, which never waits: its response, or Wait (what
        to wait for before the next round: sqsqlite.longpoll's). ``shared``: a claim for several
        long polls at once (receiving.claim_round)."""
        r = self._checked("ReceiveMessage", r)
        queue = self._queue(r)
        got = receiving.claim_round(queue.context, queue, _receive_request(r), shared=shared)
        if isinstance(got, Wait):
            return got
        return receive_response([message_out(m) for m in got])

    def DeleteMessage(self, r: Request) -> Response:
        self._queue(r).delete_message(_required(r, "ReceiptHandle"))
        return {}

    def DeleteMessageBatch(self, r: Request) -> Response:
        result = self._queue(r).delete_message_batch(r.get("Entries") or [])
        if not result.failed:  # the engine's own {"Id": ...} dicts, made for this call
            return {"Successful": result.successful}
        return _batch(result, lambda s: {"Id": s["Id"]})

    def ChangeMessageVisibility(self, r: Request) -> Response:
        if r.get("VisibilityTimeout") is None:
            raise MissingParameter("The request must contain the parameter VisibilityTimeout.")
        self._queue(r).change_message_visibility(_required(r, "ReceiptHandle"), r["VisibilityTimeout"])
        return {}

    def ChangeMessageVisibilityBatch(self, r: Request) -> Response:
        return _batch(self._queue(r).change_message_visibility_batch(r.get("Entries") or []), lambda s: {"Id": s["Id"]})

    # ------------------------------------------------------------ message move tasks

    def StartMessageMoveTask(self, r: Request) -> Response:
        handle = self.db.start_message_move_task(
            _required(r, "SourceArn"),
            r.get("DestinationArn"),
            r.get("MaxNumberOfMessagesPerSecond"),
            background=self.background_moves,
        )
        return {"TaskHandle": handle}

    def ListMessageMoveTasks(self, r: Request) -> Response:
        limit = r.get("MaxResults")  # absent, or JSON's null: the default
        tasks = self.db.list_message_move_tasks(_required(r, "SourceArn"), D.MOVE_TASKS_LISTED.default if limit is None else limit)
        return {"Results": [_move_task_out(t) for t in tasks]}

    def CancelMessageMoveTask(self, r: Request) -> Response:
        return {"ApproximateNumberOfMessagesMoved": self.db.cancel_message_move_task(_required(r, "TaskHandle"))}


def _receive_request(r: Request) -> receiving.ReceiveRequest:
    """A ReceiveMessage's members, checked, as the engine's receive takes them."""
    count = r.get("MaxNumberOfMessages")
    if count is None:  # absent, or JSON's null, as SQS reads it
        count = D.MAX_MESSAGES.default
    # Most receives ask for no names: no check of an empty list.
    names, system_names = r.get("AttributeNames"), r.get("MessageSystemAttributeNames")
    system = (V.name_list(names, "AttributeNames") if names else []) + (
        V.name_list(system_names, "MessageSystemAttributeNames") if system_names else []
    )
    # SQS accepts a few queue-attribute spellings in the deprecated AttributeNames member.
    system = [n for n in system if n not in ("SqsManagedSseEnabled",)]
    return receiving.receive_request(
        count,
        r.get("VisibilityTimeout"),
        r.get("WaitTimeSeconds"),
        system,
        r.get("MessageAttributeNames"),
        r.get("ReceiveRequestAttemptId"),
    )


def _md5_of_system_attributes(system: Mapping[str, Any]) -> str | None:
    """MD5OfMessageSystemAttributes (SQS's attribute digest over AWSTraceHeader), which SDKs
    check."""
    if not isinstance(system, Mapping):
        raise InvalidParameterValue(f"Invalid MessageSystemAttributes {V.shorten(system)}: expected a map with AWSTraceHeader.")
    unknown = set(system) - {"AWSTraceHeader"}
    if unknown:
        raise InvalidParameterValue(
            f"Unknown message system attribute {', '.join(sorted(map(repr, unknown)))}; only AWSTraceHeader can be sent."
        )
    return V.md5_of_attributes(V.message_attributes(_message_attributes_in(system), what="message system attribute"))


# ---------------------------------------------------------------- a receive's rounds (sqsqlite.longpoll)


def receive_count(request: Request) -> int:
    """How many messages a ReceiveMessage asks for: what makes its answer full (1 where the
    count can't be read; the action refuses such a request anyway)."""
    try:
        return int(request.get("MaxNumberOfMessages", D.MAX_MESSAGES.default))
    except (TypeError, ValueError):
        return 1


def received(response: Response) -> list[dict]:
    """The messages of a ReceiveMessage's response (an empty list for none)."""
    return response.get("Messages") or []


def receive_response(messages: list[dict]) -> Response:
    """A ReceiveMessage's response with ``messages`` (a share of a claim several polls made)."""
    return {"Messages": messages} if messages else {}


def receive_again(request: Request, wait: int, count: int | None = None) -> dict:
    """The same ReceiveMessage for a later round of its poll: waiting ``wait`` seconds at most,
    and for ``count`` messages where several polls claim together."""
    again = {**request, "WaitTimeSeconds": wait}
    if count is not None:
        again["MaxNumberOfMessages"] = count
    return again


def receive_share(request: Request, queue: str) -> tuple[int, tuple] | None:
    """(its count, the key of the receives it may claim together with) for a ReceiveMessage
    whose claim can be shared with other polls' of the same key (same request but for the count
    and the wait), the messages shared out in turn; None for one that claims alone: a count that
    is no whole 1 to 10 (its own claim says what is wrong), a FIFO queue (``queue``: the name
    the engine parked the poll under, as ``.../q.fifo/`` names the same queue as ``.../q.fifo``),
    a ReceiveRequestAttemptId."""
    want = request.get("MaxNumberOfMessages", D.MAX_MESSAGES.default)
    if type(want) is str and want.isdigit():
        want = int(want)
    url = request.get("QueueUrl")
    if (
        type(want) is not int
        or not D.MAX_MESSAGES.low <= want <= D.MAX_MESSAGES.high
        or type(url) is not str
        # The key's first word is the queue's name (outside the default account and region the
        # account and region follow it); only FIFO queues' names end so.
        or queue.split(" ", 1)[0].endswith(".fifo")
        or "ReceiveRequestAttemptId" in request
    ):
        return None
    # queue: the engine's key, its account and region included (a URL of style off names neither).
    return want, (queue, url, repr(sorted((k, v) for k, v in request.items() if k not in ("MaxNumberOfMessages", "WaitTimeSeconds"))))


def hand_back_request(request: Request, messages: list[dict]) -> dict:
    """The ChangeMessageVisibilityBatch that makes visible again now the ``messages`` a
    ReceiveMessage ``request`` claimed."""
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0} for i, m in enumerate(messages)]
    return {"QueueUrl": request["QueueUrl"], "Entries": entries}
