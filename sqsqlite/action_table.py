"""Every SQS action sqsqlite offers, described once.

Each :class:`Action` names an SQS action as SQS's API reference does (``SendMessage``), its
request members in the API model's order with their types, the required ones, what it does in a
line, and for the two paginated actions the member whose items a page holds. Every layer offers
each action under names taken from here: ``Actions.SendMessage`` (the action layer, which runs it
and shapes its answer, and which the HTTP endpoint serves), ``client.send_message`` (the
boto3-shaped client, and ``sqsqlite.aio``'s coroutine of that name) and ``sqsqlite send-message``
(the CLI's aws-sqs command). Plain data, imported by the CLI at start-up: nothing heavy here.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Action(NamedTuple):
    name: str  # SQS's own, as the wire and the action layer take it
    members: dict[str, str]  # request member -> its type in the SQS model, in the model's order
    required: tuple[str, ...]
    summary: str  # what it does, in a line (the client's docstrings)
    pages: str | None = None  # paginated: the member whose items each page holds
    # Whether it may write: the endpoint and sqsqlite.aio take the write lock up front, briefly,
    # for the calls they run on an event loop (Store.call_with_lock); a read never waits for it.
    writes: bool = True

    @property
    def method(self) -> str:
        """The client's method: ``send_message_batch``."""
        return method_name(self.name)

    @property
    def command(self) -> str:
        """The CLI's command: ``send-message-batch``."""
        return self.method.replace("_", "-")

    def doc(self) -> str:
        """The docstring of the client's method (and the asyncio client's coroutine)."""
        optional = [m for m in self.members if m not in self.required]
        text = f"{self.name}: {self.summary}\n\nKeyword arguments (SQS's members): "
        text += ", ".join(self.required) + " required" if self.required else "none required"
        if optional:
            text += "; " + ", ".join(optional) + " optional"
        return text + ". Returns the response dict boto3 returns."


def method_name(action: str) -> str:
    """The client's method for an SQS action: ``SendMessageBatch`` -> ``send_message_batch``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action).lower()


_S, _I, _L, _M = "string", "integer", "list", "map"
_URL = {"QueueUrl": _S}
_PAGE = {"NextToken": _S, "MaxResults": _I}
_BATCH = {**_URL, "Entries": _L}

TABLE: tuple[Action, ...] = (
    Action(
        "CreateQueue",
        {"QueueName": _S, "Attributes": _M, "tags": _M},
        ("QueueName",),
        "Creates a queue (the existing one, for equal attributes).",
    ),
    Action("DeleteQueue", _URL, ("QueueUrl",), "Deletes a queue and its messages."),
    Action("ListQueues", {"QueueNamePrefix": _S, **_PAGE}, (), "Lists queue URLs, by name.", pages="QueueUrls", writes=False),
    Action("GetQueueUrl", {"QueueName": _S, "QueueOwnerAWSAccountId": _S}, ("QueueName",), "Returns a queue's URL.", writes=False),
    Action(
        "GetQueueAttributes",
        {**_URL, "AttributeNames": _L},
        ("QueueUrl",),
        "Returns a queue's attributes (values are strings).",
        writes=False,
    ),
    Action("SetQueueAttributes", {**_URL, "Attributes": _M}, ("QueueUrl", "Attributes"), "Changes a queue's attributes."),
    Action(
        "SendMessage",
        {
            **_URL,
            "MessageBody": _S,
            "DelaySeconds": _I,
            "MessageAttributes": _M,
            "MessageSystemAttributes": _M,
            "MessageDeduplicationId": _S,
            "MessageGroupId": _S,
        },
        ("QueueUrl", "MessageBody"),
        "Sends one message.",
    ),
    Action("SendMessageBatch", _BATCH, ("QueueUrl", "Entries"), "Sends up to 10 messages; each entry succeeds or fails on its own."),
    Action(
        "ReceiveMessage",
        {
            **_URL,
            "AttributeNames": _L,
            "MessageSystemAttributeNames": _L,
            "MessageAttributeNames": _L,
            "MaxNumberOfMessages": _I,
            "VisibilityTimeout": _I,
            "WaitTimeSeconds": _I,
            "ReceiveRequestAttemptId": _S,
        },
        ("QueueUrl",),
        "Receives up to 10 messages, each in flight with a fresh receipt handle; WaitTimeSeconds long-polls.",
    ),
    Action("DeleteMessage", {**_URL, "ReceiptHandle": _S}, ("QueueUrl", "ReceiptHandle"), "Deletes a received message."),
    Action("DeleteMessageBatch", _BATCH, ("QueueUrl", "Entries"), "Deletes up to 10 received messages; each entry on its own."),
    Action(
        "ChangeMessageVisibility",
        {**_URL, "ReceiptHandle": _S, "VisibilityTimeout": _I},
        ("QueueUrl", "ReceiptHandle", "VisibilityTimeout"),
        "Hides a received message until now + VisibilityTimeout seconds (0: visible at once).",
    ),
    Action(
        "ChangeMessageVisibilityBatch",
        _BATCH,
        ("QueueUrl", "Entries"),
        "Changes the visibility of up to 10 messages; each entry on its own.",
    ),
    Action("PurgeQueue", _URL, ("QueueUrl",), "Deletes every message in a queue (once per 60 seconds)."),
    Action(
        "ListDeadLetterSourceQueues",
        {**_URL, **_PAGE},
        ("QueueUrl",),
        "Lists the queues whose RedrivePolicy names this one as their dead-letter queue.",
        pages="queueUrls",
        writes=False,
    ),
    Action(
        "StartMessageMoveTask",
        {"SourceArn": _S, "DestinationArn": _S, "MaxNumberOfMessagesPerSecond": _I},
        ("SourceArn",),
        "Starts moving a dead-letter queue's messages back to their sources (or to DestinationArn).",
    ),
    Action(
        "ListMessageMoveTasks",
        {"SourceArn": _S, "MaxResults": _I},
        ("SourceArn",),
        "Lists a queue's message move tasks, newest first.",
        writes=False,
    ),
    Action("CancelMessageMoveTask", {"TaskHandle": _S}, ("TaskHandle",), "Cancels a running message move task."),
    Action(
        "AddPermission",
        {**_URL, "Label": _S, "AWSAccountIds": _L, "Actions": _L},
        ("QueueUrl", "Label", "AWSAccountIds", "Actions"),
        "Adds a statement to the queue's Policy (kept, not enforced: a local file has no IAM).",
    ),
    Action("RemovePermission", {**_URL, "Label": _S}, ("QueueUrl", "Label"), "Removes a statement AddPermission added."),
    Action("TagQueue", {**_URL, "Tags": _M}, ("QueueUrl", "Tags"), "Adds or replaces a queue's tags."),
    Action("UntagQueue", {**_URL, "TagKeys": _L}, ("QueueUrl", "TagKeys"), "Removes tags from a queue."),
    Action("ListQueueTags", _URL, ("QueueUrl",), "Returns a queue's tags.", writes=False),
)

BY_NAME: dict[str, Action] = {a.name: a for a in TABLE}
BY_METHOD: dict[str, Action] = {a.method: a for a in TABLE}
# The paginated actions, by SQS name: the member whose items a page holds.
PAGINATED: dict[str, str] = {a.name: a.pages for a in TABLE if a.pages}
