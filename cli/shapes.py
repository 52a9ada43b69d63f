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

# Pieces the skeletons repeat, shared (the skeletons are only read).
_ATTRIBUTE_VALUES = {
    "KeyName": {"StringValue": "", "BinaryValue": None, "StringListValues": [""], "BinaryListValues": [None], "DataType": ""}
}
_SEND_MEMBERS: dict[str, Any] = {
    "MessageBody": "",
    "DelaySeconds": 0,
    "MessageAttributes": _ATTRIBUTE_VALUES,
    "MessageSystemAttributes": _ATTRIBUTE_VALUES,
    "MessageDeduplicationId": "",
    "MessageGroupId": "",
}
_FAILED = {"Id": "Id", "SenderFault": True, "Code": "Code", "Message": "Message"}

INPUT_SKELETONS: dict[str, dict[str, Any]] = {
    "AddPermission": {"QueueUrl": "", "Label": "", "AWSAccountIds": [""], "Actions": [""]},
    "RemovePermission": {"QueueUrl": "", "Label": ""},
    "CancelMessageMoveTask": {"TaskHandle": ""},
    "ChangeMessageVisibility": {"QueueUrl": "", "ReceiptHandle": "", "VisibilityTimeout": 0},
    "ChangeMessageVisibilityBatch": {"QueueUrl": "", "Entries": [{"Id": "", "ReceiptHandle": "", "VisibilityTimeout": 0}]},
    "CreateQueue": {"QueueName": "", "Attributes": {"KeyName": ""}, "tags": {"KeyName": ""}},
    "DeleteMessage": {"QueueUrl": "", "ReceiptHandle": ""},
    "DeleteMessageBatch": {"QueueUrl": "", "Entries": [{"Id": "", "ReceiptHandle": ""}]},
    "DeleteQueue": {"QueueUrl": ""},
    "GetQueueAttributes": {"QueueUrl": "", "AttributeNames": ["All"]},
    "GetQueueUrl": {"QueueName": "", "QueueOwnerAWSAccountId": ""},
    "ListDeadLetterSourceQueues": {"QueueUrl": "", "NextToken": "", "MaxResults": 0},
    "ListMessageMoveTasks": {"SourceArn": "", "MaxResults": 0},
    "ListQueueTags": {"QueueUrl": ""},
    "ListQueues": {"QueueNamePrefix": "", "NextToken": "", "MaxResults": 0},
    "PurgeQueue": {"QueueUrl": ""},
    "ReceiveMessage": {
        "QueueUrl": "",
        "AttributeNames": ["All"],
        "MessageSystemAttributeNames": ["All"],
        "MessageAttributeNames": [""],
        "MaxNumberOfMessages": 0,
        "VisibilityTimeout": 0,
        "WaitTimeSeconds": 0,
        "ReceiveRequestAttemptId": "",
    },
    "SendMessage": {"QueueUrl": "", **_SEND_MEMBERS},
    "SendMessageBatch": {"QueueUrl": "", "Entries": [{"Id": "", **_SEND_MEMBERS}]},
    "SetQueueAttributes": {"QueueUrl": "", "Attributes": {"KeyName": ""}},
    "StartMessageMoveTask": {"SourceArn": "", "DestinationArn": "", "MaxNumberOfMessagesPerSecond": 0},
    "TagQueue": {"QueueUrl": "", "Tags": {"KeyName": ""}},
    "UntagQueue": {"QueueUrl": "", "TagKeys": [""]},
}

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
