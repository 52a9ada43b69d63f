"""SQS's two wire protocols over the action layer's shapes.

JSON 1.0 (``X-Amz-Target: AmazonSQS.<Action>``) carries the API's member names as they are;
only binary values need base64. The query protocol (``Action=...`` form fields, XML answers)
flattens lists and maps into numbered fields (``Attribute.1.Name``) under singular names
(``MessageAttribute``, ``SendMessageBatchRequestEntry``), which this module folds into and out
of the action layer's shapes. The element names are those of SQS's query model (botocore's
``locationName`` / ``locationNameForQueryCompatibility``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from itertools import chain
from typing import Any
from xml.sax.saxutils import escape

from ..errors import InvalidParameterValue, SQSError, wire_error

XML_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
XML_CONTENT_TYPE = "text/xml"
QUERY_JSON_CONTENT_TYPE = "application/json"


class WireError(SQSError):
    """An error raised by the endpoint itself (authentication, protocol), with its wire form
    given directly: the query code, the JSON ``__type`` and the HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400, json_type: str | None = None, sender_fault: bool = True):
        super().__init__(message)
        self.code = code
        self.status = status
        self.json_type = json_type or f"com.amazonaws.sqs#{code}"
        self.sender_fault = sender_fault


def _not_serializable(message: str) -> WireError:
    """A body SQS's JSON protocol can't read into a request."""
    return WireError("SerializationException", message, json_type="com.amazon.coral.service#SerializationException")


def error_parts(err: SQSError) -> tuple[str, str, int]:
    """(x-amzn-query-error code, JSON ``__type``, HTTP status) for any error."""
    if isinstance(err, WireError):
        return err.code, err.json_type, err.status
    header, shape, status = wire_error(err.code)
    return header, f"com.amazonaws.sqs#{shape}", status


# ---------------------------------------------------------------------- JSON 1.0


def _b64_bytes(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _b64_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_b64_bytes(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def json_request(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except RecursionError:
        raise _not_serializable("The request body nests too deeply to be a request.") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _not_serializable(f"The request body is not valid JSON ({exc}).") from None
    if not isinstance(data, dict):
        raise _not_serializable("The request body must be a JSON object of the action's members.")
    # A body that parses but nests nearly as deep as the parser allows would overflow the
    # recursion limit later, in whatever reprs or walks it (a 500 and a traceback). Fewer
    # brackets than the limit can't nest past it: counting them costs microseconds a MiB, and
    # only a body with more is walked.
    if body.count(b"[") + body.count(b"{") > _JSON_DEPTH and _nests_past(data, _JSON_DEPTH):
        raise _not_serializable("The request body nests too deeply to be a request.")
    _integers_are_numbers(data)
    return data


# The deepest SQS request nests 5 deep (Entries, an entry, MessageAttributes, an attribute,
# StringListValues); the rest is room to spare.
_JSON_DEPTH = 32


def _nests_past(data: Any, limit: int) -> bool:
    """Whether lists and objects in data nest more than ``limit`` deep (a walk, not recursion)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


# The SQS model's Integer members, at the top of a request and in a batch's entries. A JSON
# string there is refused as SQS refuses it (recorded); the query protocol has only strings.
_INTEGER_MEMBERS = frozenset(
    ("MaxNumberOfMessages", "VisibilityTimeout", "WaitTimeSeconds", "DelaySeconds", "MaxResults", "MaxNumberOfMessagesPerSecond")
)


def _integers_are_numbers(data: dict[str, Any]) -> None:
    entries = data.get("Entries")
    groups = [data]
    if isinstance(entries, list):
        entries = [e for e in entries if type(e) is dict]  # any other is the batch's check's to refuse
        # One pass over every entry's member names in C: a batch's entries seldom carry these.
        if not _INTEGER_MEMBERS.isdisjoint(chain.from_iterable(entries)):
            groups += entries
    for members in groups:
        if any(isinstance(members[name], str) for name in _INTEGER_MEMBERS.intersection(members)):
            raise _not_serializable("STRING_VALUE can not be converted to an Integer")


def json_response(result: Mapping[str, Any]) -> bytes:
    return json.dumps(_b64_bytes(dict(result)), separators=(",", ":")).encode("utf-8")


def json_error(err: SQSError) -> bytes:
    _, json_type, _ = error_parts(err)
    return json.dumps({"__type": json_type, "message": err.message}).encode("utf-8")


# ---------------------------------------------------------------------- query: requests

# Singular flattened list names -> the action layer's member names.
_QUERY_LISTS = {
    "AttributeName": "AttributeNames",
    "MessageAttributeName": "MessageAttributeNames",
    "MessageSystemAttributeName": "MessageSystemAttributeNames",
    "TagKey": "TagKeys",
    "AWSAccountId": "AWSAccountIds",
    "ActionName": "Actions",
    "SendMessageBatchRequestEntry": "Entries",
    "DeleteMessageBatchRequestEntry": "Entries",
    "ChangeMessageVisibilityBatchRequestEntry": "Entries",
    "StringListValue": "StringListValues",
    "BinaryListValue": "BinaryListValues",
}
# A list may also come under its member's own name (MessageSystemAttributeNames.1=...): the
# names SQS's query API had are gone from botocore's current model, so a client built from it
# numbers the member name itself.
_QUERY_LIST_MEMBERS = frozenset(_QUERY_LISTS.values())
# Singular flattened map names -> (member name, key field, value field).
_QUERY_MAPS = {
    "Attribute": ("Attributes", "Name", "Value"),
    "Tag": ("Tags", "Key", "Value"),
    "MessageAttribute": ("MessageAttributes", "Name", "Value"),
    "MessageSystemAttribute": ("MessageSystemAttributes", "Name", "Value"),
}
# And a map under its member's own name, its entries numbered with lower-case key and value
# (Attributes.1.key=DelaySeconds, Attributes.1.value=5), as a client built from botocore's
# current model sends it.
_QUERY_MAP_MEMBERS = frozenset(member for member, _, _ in _QUERY_MAPS.values()) | {"tags"}
# Fields that belong to the request's signature or envelope, not to the action.
_ENVELOPE = {
    "Action",
    "Version",
    "AWSAccessKeyId",
    "Signature",
    "SignatureMethod",
    "SignatureVersion",
    "Timestamp",
    "Expires",
    "SecurityToken",
}


def _bad(field: str, why: str) -> InvalidParameterValue:
    return InvalidParameterValue(f"Invalid query parameter {field!r}: {why}.")


# The deepest SQS query key has 7 dotted parts
# (SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1); a few to spare.
_QUERY_DEPTH = 10


def _tree(params: list[tuple[str, str]]) -> dict[str, Any]:
    """``a.1.b=v`` pairs as nested dicts keyed by each dotted part."""
    root: dict[str, Any] = {}
    for key, value in params:
        parts = key.split(".")
        if len(parts) > _QUERY_DEPTH:
            raise _bad(key, f"more than {_QUERY_DEPTH} name parts")
        node = root
        for i, part in enumerate(parts):
            if part == "":
                raise _bad(key, "empty name part")
            if i == len(parts) - 1:
                if isinstance(node.get(part), dict):
                    raise _bad(key, "given both as a value and as a list or map")
                node[part] = value
            else:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise _bad(key, "given both as a value and as a list or map")
                node = child
    return root


def _numbered(name: str, node: Any) -> list[Any]:
    if not isinstance(node, dict):
        return [node]  # a lone "AttributeName=All" is a one-item list
    try:
        indexed = sorted((int(k), v) for k, v in node.items() if k.isdigit() and int(k) >= 1)
    except ValueError:  # pragma: no cover - isdigit guards int()
        indexed = []
    if len(indexed) != len(node):
        raise _bad(name, f"expected numbered members {name}.1, {name}.2, ...")
    return [v for _, v in indexed]


def _numbered_entries(node: Any, field: str) -> bool:
    """Whether node is N -> {field: ...}: a map's numbered entries, not a map given whole."""
    return isinstance(node, dict) and bool(node) and all(k.isdigit() and isinstance(v, dict) and field in v for k, v in node.items())


def _fold_map(name: str, node: Any, k_field: str, v_field: str, action: str) -> dict[str, Any]:
    """A map's numbered entries (name.N.k_field, name.N.v_field) as the map."""
    mapping: dict[str, Any] = {}
    for item in _numbered(name, node):
        if not isinstance(item, dict) or k_field not in item:
            raise _bad(name, f"each {name}.N needs {name}.N.{k_field} and {name}.N.{v_field}")
        k, v = item[k_field], item.get(v_field)
        if not isinstance(k, str):
            raise _bad(name, f"{name}.N.{k_field} is a name, not a list or map")
        mapping[k] = _fold(v, action) if isinstance(v, dict) else v
    return mapping


def _fold(node: dict[str, Any], action: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _QUERY_MAPS:
            member, k_field, v_field = _QUERY_MAPS[key]
            if action == "CreateQueue" and key == "Tag":
                member = "tags"  # CreateQueue spells this member in lower case
            out[member] = _fold_map(key, value, k_field, v_field, action)
        elif key in _QUERY_MAP_MEMBERS and _numbered_entries(value, "key"):
            out[key] = _fold_map(key, value, "key", "value", action)
        elif key in _QUERY_LISTS or (key in _QUERY_LIST_MEMBERS and isinstance(value, dict)):
            out[_QUERY_LISTS.get(key, key)] = [_fold(i, action) if isinstance(i, dict) else i for i in _numbered(key, value)]
        elif isinstance(value, dict):
            out[key] = _fold(value, action)
        else:
            out[key] = value
    return out


def query_request(params: list[tuple[str, str]], action: str) -> dict[str, Any]:
    """The action layer's request from query-protocol fields (the envelope removed)."""
    fields = [(k, v) for k, v in params if k not in _ENVELOPE and not k.startswith("X-Amz-")]
    return _fold(_tree(fields), action)


# ---------------------------------------------------------------------- query: responses

# Response list members -> the element each item is written as (lists are flattened).
_XML_LIST_ITEMS = {
    "QueueUrls": "QueueUrl",
    "queueUrls": "QueueUrl",
    "Messages": "Message",
    "Results": "ListMessageMoveTasksResultEntry",
    "Failed": "BatchResultErrorEntry",
    "StringListValues": "StringListValue",
    "BinaryListValues": "BinaryListValue",
}
_XML_BATCH_SUCCESS = {
    "SendMessageBatch": "SendMessageBatchResultEntry",
    "DeleteMessageBatch": "DeleteMessageBatchResultEntry",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibilityBatchResultEntry",
}
_XML_MAPS = {
    "Attributes": ("Attribute", "Name", "Value"),
    "Tags": ("Tag", "Key", "Value"),
    "MessageAttributes": ("MessageAttribute", "Name", "Value"),
}
# Actions whose response has no members, so no <Action>Result element (as in SQS's model).
_NO_RESULT = {
    "DeleteQueue",
    "SetQueueAttributes",
    "DeleteMessage",
    "ChangeMessageVisibility",
    "PurgeQueue",
    "TagQueue",
    "UntagQueue",
    "AddPermission",
    "RemovePermission",
}
# A carriage return would come back as a line feed after XML parsing; SQS writes it as a reference.
_XML_ENTITIES = {"\r": "&#xD;", '"': "&quot;"}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return escape(str(value), _XML_ENTITIES)


def _xml(parts: list[str], name: str, value: Any, action: str) -> None:
    if value is None:
        return
    if name in _XML_MAPS and isinstance(value, Mapping):
        element, k_field, v_field = _XML_MAPS[name]
        for k, v in value.items():
            parts.append(f"<{element}><{k_field}>{_text(k)}</{k_field}>")
            _xml(parts, v_field, v, action)
            parts.append(f"</{element}>")
    elif isinstance(value, Mapping):
        parts.append(f"<{name}>")
        for k, v in value.items():
            _xml(parts, k, v, action)
        parts.append(f"</{name}>")
    elif isinstance(value, (list, tuple)):
        element = _XML_BATCH_SUCCESS.get(action, name) if name == "Successful" else _XML_LIST_ITEMS.get(name, name)
        for item in value:
            _xml(parts, element, item, action)
    else:
        parts.append(f"<{name}>{_text(value)}</{name}>")


def xml_response(action: str, result: Mapping[str, Any], request_id: str) -> bytes:
    parts = [f'<?xml version="1.0"?><{action}Response xmlns="{XML_NAMESPACE}">']
    if action not in _NO_RESULT and not result:
        parts.append(f"<{action}Result/>")  # as SQS writes an empty result (<ReceiveMessageResult/>)
    elif action not in _NO_RESULT:
        parts.append(f"<{action}Result>")
        for k, v in result.items():
            _xml(parts, k, v, action)
        parts.append(f"</{action}Result>")
    parts.append(f"<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata></{action}Response>")
    return "".join(parts).encode("utf-8")


def xml_error(err: SQSError, request_id: str) -> bytes:
    code, _, _ = error_parts(err)
    kind = "Sender" if err.sender_fault else "Receiver"
    message = err.message
    if err.code == "QueueDoesNotExist" and message == "The specified queue does not exist.":
        message = "The specified queue does not exist for this wsdl version."  # SQS's query wording
    return (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{XML_NAMESPACE}"><Error><Type>{kind}</Type>'
        f"<Code>{_text(code)}</Code><Message>{_text(message)}</Message><Detail/></Error>"
        f"<RequestId>{request_id}</RequestId></ErrorResponse>"
    ).encode()


# ---------------------------------------------------------------------- query: JSON answers

# A query request with Accept: application/json is answered in JSON, in SQS's shape (AWS's
# validated tests read ReceiveMessageResponse.ReceiveMessageResult.messages[0].Body, a
# ListQueuesResponse, GetQueueAttributesResult.Attributes as Name/Value entries, and an error's
# Error.Code and Error.Message): the query answer's elements, a list under its model member's
# camel-case name and a map as a list of its entries. JSON escapes control characters itself
# (a body's carriage return travels as \r and comes back as one).
_JSON_LIST_NAMES = {"Messages": "messages", "QueueUrls": "queueUrls", "queueUrls": "queueUrls"}


def _query_json(name: str, value: Any) -> Any:
    if name in _XML_MAPS and isinstance(value, Mapping):
        _, k_field, v_field = _XML_MAPS[name]
        return [{k_field: k, v_field: _query_json(v_field, v)} for k, v in value.items()]
    if isinstance(value, Mapping):
        return {k: _query_json(k, v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_query_json("", v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def query_json_response(action: str, result: Mapping[str, Any], request_id: str) -> bytes:
    body: dict[str, Any] = {}
    if action not in _NO_RESULT:
        body[f"{action}Result"] = {_JSON_LIST_NAMES.get(k, k): _query_json(k, v) for k, v in result.items() if v is not None}
    body["ResponseMetadata"] = {"RequestId": request_id}
    return json.dumps({f"{action}Response": body}).encode("utf-8")


def query_json_error(err: SQSError, request_id: str) -> bytes:
    code, _, _ = error_parts(err)
    error = {"Type": "Sender" if err.sender_fault else "Receiver", "Code": code, "Message": err.message}
    return json.dumps({"Error": error, "RequestId": request_id}).encode("utf-8")
