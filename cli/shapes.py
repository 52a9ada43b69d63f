"""The SQS API model's request and response members, as the aws CLI's skeletons and checks need them.

Taken from the SQS API model (version 2012-11-05): each operation's request members in the model's
order with their types, the required ones, the input skeleton `--generate-cli-skeleton` prints (strings
empty, numbers 0, an enum's first value, maps as one ``KeyName`` entry, lists of one item) and the
sample response `--generate-cli-skeleton output` prints (strings named after their member, binary
values null). Plain data, so the base install needs no botocore.
"""

from __future__ import annotations

from typing import Any

from sqsqlite.action_table import TABLE

# Each operation's request members with their types, and the required ones: the action table's.
MEMBERS: dict[str, dict[str, str]] = {a.name: a.members for a in TABLE}
REQUIRED: dict[str, tuple[str, ...]] = {a.name: a.required for a in TABLE}

# The members of MEMBERS that nest, as the model nests them: ("list", item) or ("map", value),
# where an item or value is a scalar's type or a structure of STRUCTURES (map keys are strings).
NESTED: dict[str, dict[str, tuple[str, Any]]] = {
    "AddPermission": {"AWSAccountIds": ("list", "string"), "Actions": ("list", "string")},
    "ChangeMessageVisibilityBatch": {"Entries": ("list", "ChangeMessageVisibilityBatchRequestEntry")},
    "CreateQueue": {"Attributes": ("map", "string"), "tags": ("map", "string")},
    "DeleteMessageBatch": {"Entries": ("list", "DeleteMessageBatchRequestEntry")},
    "GetQueueAttributes": {"AttributeNames": ("list", "string")},
    "ReceiveMessage": {
        "AttributeNames": ("list", "string"),
        "MessageSystemAttributeNames": ("list", "string"),
        "MessageAttributeNames": ("list", "string"),
    },
    "SendMessage": {
        "MessageAttributes": ("map", "MessageAttributeValue"),
        "MessageSystemAttributes": ("map", "MessageSystemAttributeValue"),
    },
    "SendMessageBatch": {"Entries": ("list", "SendMessageBatchRequestEntry")},
    "SetQueueAttributes": {"Attributes": ("map", "string")},
    "TagQueue": {"Tags": ("map", "string")},
    "UntagQueue": {"TagKeys": ("list", "string")},
}
_ATTRIBUTE_VALUE: tuple[dict[str, Any], tuple[str, ...]] = (
    {
        "StringValue": "string",
        "BinaryValue": "blob",
        "StringListValues": ("list", "string"),
        "BinaryListValues": ("list", "blob"),
        "DataType": "string",
    },
    ("DataType",),
)
# The structures inside requests: each one's members (typed as in NESTED) and required ones.
STRUCTURES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "ChangeMessageVisibilityBatchRequestEntry": (
        {"Id": "string", "ReceiptHandle": "string", "VisibilityTimeout": "integer"},
        ("Id", "ReceiptHandle"),
    ),
    "DeleteMessageBatchRequestEntry": ({"Id": "string", "ReceiptHandle": "string"}, ("Id", "ReceiptHandle")),
    "MessageAttributeValue": _ATTRIBUTE_VALUE,
    "MessageSystemAttributeValue": _ATTRIBUTE_VALUE,
    "SendMessageBatchRequestEntry": (
        {
            "Id": "string",
            "MessageBody": "string",
            "DelaySeconds": "integer",
            "MessageAttributes": ("map", "MessageAttributeValue"),
            "MessageSystemAttributes": ("map", "MessageSystemAttributeValue"),
            "MessageDeduplicationId": "string",
            "MessageGroupId": "string",
        },
        ("Id", "MessageBody"),
    ),
}

# The members whose list's skeleton is the enum's first value rather than an empty string.
_ENUM_LISTS = ("AttributeNames", "MessageSystemAttributeNames")
_SCALAR_SKELETONS = {"string": "", "integer": 0, "blob": None}


def _skeleton(kind: Any, member: str = "") -> Any:
    """A member's input skeleton from its kind, as the aws CLI's generator writes it."""
    if isinstance(kind, tuple):
        if kind[0] == "list":
            return ["All"] if member in _ENUM_LISTS else [_skeleton(kind[1])]
        return {"KeyName": _skeleton(kind[1])}
    if kind in STRUCTURES:
        return {name: _skeleton(inner, name) for name, inner in STRUCTURES[kind][0].items()}
    return _SCALAR_SKELETONS[kind]


INPUT_SKELETONS: dict[str, dict[str, Any]] = {
    action: {name: _skeleton(NESTED.get(action, {}).get(name, kind), name) for name, kind in members.items()}
    for action, members in MEMBERS.items()
}

_FAILED = {"Id": "Id", "SenderFault": True, "Code": "Code", "Message": "Message"}

OUTPUT_SKELETONS: dict[str, dict[str, Any]] = {
    "AddPermission": {},
    "RemovePermission": {},
    "CancelMessageMoveTask": {"ApproximateNumberOfMessagesMoved": 0},
    "ChangeMessageVisibility": {},
    "ChangeMessageVisibilityBatch": {
        "Successful": [{"Id": "Id"}],
        "Failed": [_FAILED],
    },
    "CreateQueue": {"QueueUrl": "QueueUrl"},
    "DeleteMessage": {},
    "DeleteMessageBatch": {
        "Successful": [{"Id": "Id"}],
        "Failed": [_FAILED],
    },
    "DeleteQueue": {},
    "GetQueueAttributes": {"Attributes": {"KeyName": ""}},
    "GetQueueUrl": {"QueueUrl": "QueueUrl"},
    "ListDeadLetterSourceQueues": {"queueUrls": ["String"], "NextToken": "NextToken"},
    "ListMessageMoveTasks": {
        "Results": [
            {
                "TaskHandle": "TaskHandle",
                "Status": "Status",
                "SourceArn": "SourceArn",
                "DestinationArn": "DestinationArn",
                "MaxNumberOfMessagesPerSecond": 0,
                "ApproximateNumberOfMessagesMoved": 0,
                "ApproximateNumberOfMessagesToMove": 0,
                "FailureReason": "FailureReason",
                "StartedTimestamp": 0,
            }
        ]
    },
    "ListQueueTags": {"Tags": {"KeyName": ""}},
    "ListQueues": {"QueueUrls": ["String"], "NextToken": "NextToken"},
    "PurgeQueue": {},
    "ReceiveMessage": {
        "Messages": [
            {
                "MessageId": "MessageId",
                "ReceiptHandle": "ReceiptHandle",
                "MD5OfBody": "MD5OfBody",
                "Body": "Body",
                "Attributes": {"KeyName": ""},
                "MD5OfMessageAttributes": "MD5OfMessageAttributes",
                "MessageAttributes": {
                    "KeyName": {
                        "StringValue": "StringValue",
                        "BinaryValue": None,
                        "StringListValues": ["String"],
                        "BinaryListValues": [None],
                        "DataType": "DataType",
                    }
                },
            }
        ]
    },
    "SendMessage": {
        "MD5OfMessageBody": "MD5OfMessageBody",
        "MD5OfMessageAttributes": "MD5OfMessageAttributes",
        "MD5OfMessageSystemAttributes": "MD5OfMessageSystemAttributes",
        "MessageId": "MessageId",
        "SequenceNumber": "SequenceNumber",
    },
    "SendMessageBatch": {
        "Successful": [
            {
                "Id": "Id",
                "MessageId": "MessageId",
                "MD5OfMessageBody": "MD5OfMessageBody",
                "MD5OfMessageAttributes": "MD5OfMessageAttributes",
                "MD5OfMessageSystemAttributes": "MD5OfMessageSystemAttributes",
                "SequenceNumber": "SequenceNumber",
            }
        ],
        "Failed": [_FAILED],
    },
    "SetQueueAttributes": {},
    "StartMessageMoveTask": {"TaskHandle": "TaskHandle"},
    "TagQueue": {},
    "UntagQueue": {},
}
