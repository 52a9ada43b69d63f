"""The export format: one record per message, as Queue.export_messages writes it and
Queue.import_messages (and ``sqsqlite import``) takes it back, and the check every record passes
before an import writes anything."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from .errors import InvalidExportRecord, InvalidParameterValue
from .validation import MessageAttribute, dedup_id, is_text, message_attributes, message_body, parse_arn, shorten

_INT64 = 2**63 - 1  # SQLite's INTEGER, where every timestamp and count is stored

# What export_messages writes for each message and import_messages takes back: the JSON type of
# each field, and for integers what they count. Null is taken for every field but the required ones.
EXPORTED_FIELDS: dict[str, tuple[type, str]] = {
    "MessageId": (str, "a string (a UUID)"),
    "Body": (str, "a string"),
    "MD5OfBody": (str, "a string"),
    "MessageAttributes": (dict, "an object of attribute names to {DataType, StringValue or BinaryValue}"),
    "MD5OfMessageAttributes": (str, "a string"),
    "SenderId": (str, "a string"),
    "SentTimestamp": (int, "epoch milliseconds"),
    "VisibleAt": (int, "epoch milliseconds"),
    "ApproximateReceiveCount": (int, "a count"),
    "ApproximateFirstReceiveTimestamp": (int, "epoch milliseconds"),
    "MessageGroupId": (str, "a string"),
    "MessageDeduplicationId": (str, "a string"),
    "SequenceNumber": (int, "a sequence number"),
    "DeadLetterQueueSourceArn": (str, "a string (a queue ARN)"),
}
_EXPORTED_REQUIRED = ("MessageId", "Body", "SentTimestamp")
# A standard queue takes MessageGroupId too (fair queues); these two it never has.
_EXPORTED_FIFO_ONLY = ("MessageDeduplicationId", "SequenceNumber")


def imported_message_id(value: Any) -> str:
    """An imported message keeps its id, which must be a UUID (receipt handles carry its 16
    bytes); stored in canonical form, as the engine makes them."""
    try:
        return str(uuid.UUID(value))
    except (TypeError, ValueError, AttributeError):
        raise InvalidParameterValue(
            f"MessageId {shorten(value)} is not a UUID: an imported message keeps its id, and SQS message ids are UUIDs."
        ) from None


def exported_message(value: Any, queue: str, fifo: bool) -> dict[str, Any]:
    """One record as export_messages writes it, checked for everything import_messages would
    refuse or crash on, so that an import can check all its records before its first write.

    Returns the record with its MessageId canonical and its MessageAttributes parsed (a record
    returned passes again). A record of the wrong shape raises InvalidExportRecord; a value SQS
    itself refuses (a body, an attribute, an id) raises the error send_message would."""

    missing = [k for k in _EXPORTED_REQUIRED if k not in value] if isinstance(value, Mapping) else list(_EXPORTED_REQUIRED)
    if missing:
        raise InvalidExportRecord(f"is not an exported message (no {', '.join(missing)}).")
    unknown = sorted(set(value) - set(EXPORTED_FIELDS), key=str)
    if unknown:
        raise InvalidExportRecord(
            f"has unknown field {', '.join(map(str, unknown))}; an exported message has {', '.join(EXPORTED_FIELDS)}."
        )
    for name, (kind, what) in EXPORTED_FIELDS.items():
        field = value.get(name)
        if field is None:
            if name in _EXPORTED_REQUIRED:
                raise InvalidExportRecord(f"has a null {name}; it must be {what}.")
            continue
        if kind is int:
            # bool is an int to Python, not to JSON
            if type(field) is not int or not 0 <= field <= _INT64:
                raise InvalidExportRecord(f"has {name} {shorten(field)}; it must be an integer from 0 to {_INT64} ({what}).")
        elif not isinstance(field, Mapping if kind is dict else kind):
            raise InvalidExportRecord(f"has {name} {shorten(field)}; it must be {what}.")
        elif kind is str and name not in ("MessageId", "Body") and not is_text(str(field)):
            # a lone surrogate from a \ud800 escape cannot be stored (Body's own check names it)
            raise InvalidExportRecord(f"has {name} {shorten(field)}, which is not valid Unicode text.")
    if not fifo:
        for name in _EXPORTED_FIFO_ONLY:
            if value.get(name) is not None:
                raise InvalidExportRecord(
                    f"has {name} {shorten(value[name])}; it is for FIFO queues only, and {queue!r} is a standard queue."
                )
    elif value.get("MessageGroupId") is None:
        raise InvalidExportRecord(f"has no MessageGroupId, which every message of FIFO queue {queue!r} needs.")
    raw_attributes = value.get("MessageAttributes") or {}
    for name, attribute in raw_attributes.items():
        if not isinstance(attribute, (Mapping, MessageAttribute)):  # parsed, as this returns them
            raise InvalidExportRecord(
                f"has message attribute {name!r} {shorten(attribute)}; it must be an object with DataType and StringValue or BinaryValue."
            )
    record = dict(value)
    record["MessageId"] = imported_message_id(value["MessageId"])
    message_body(value["Body"])
    record["MessageAttributes"] = message_attributes(raw_attributes)
    for name in ("MessageGroupId", "MessageDeduplicationId"):
        if value.get(name) is not None:
            dedup_id(name, value[name])
    if value.get("DeadLetterQueueSourceArn") is not None:
        source = parse_arn(value["DeadLetterQueueSourceArn"], "DeadLetterQueueSourceArn")[2]
        if source.endswith(".fifo") != fifo:
            # A dead-letter queue serves queues of its own kind; a move task would send it there.
            raise InvalidExportRecord(
                f"has DeadLetterQueueSourceArn {shorten(value['DeadLetterQueueSourceArn'])}, a {'FIFO' if source.endswith('.fifo') else 'standard'} "
                f"queue's; {queue!r} is a {'FIFO' if fifo else 'standard'} queue, and a dead-letter queue serves queues of its own kind."
            )
    return record
