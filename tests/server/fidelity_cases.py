"""The requests behind each recorded AWS answer in fidelity_aws.json, replayed on sqsqlite.

Each driver makes the same calls the recording made and returns ``{key: response}`` for the
keys the recording holds. ``match`` compares one response with AWS's: the same members, the
same values, where a placeholder in the recording (``<uuid:1>``, ``timestamp``) stands for any
value. The harness (test_fidelity.py) runs every driver over both wire protocols.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from sqsqlite.clock import ManualClock

from .server_helpers import boto3_client, query_protocol_client

_names = itertools.count()


class Ctx:
    """One driver run: the client of the protocol under test, a JSON client, the clock."""

    def __init__(self, url: str, protocol: str, clock: ManualClock):
        self.protocol = protocol
        self.json = boto3_client(url)
        self.query = query_protocol_client(url)
        self.sqs = self.json if protocol == "json" else self.query
        self.clock = clock

    def name(self, prefix: str = "queue", fifo: bool = False) -> str:
        return f"{prefix}-{next(_names)}" + (".fifo" if fifo else "")

    def create(self, fifo: bool = False, attributes: dict | None = None, name: str | None = None) -> str:
        attrs = dict(attributes or {})
        if fifo:
            attrs.setdefault("FifoQueue", "true")
        return self.sqs.create_queue(QueueName=name or self.name(fifo=fifo), Attributes=attrs)["QueueUrl"]

    def arn(self, url: str) -> str:
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def answer(call: Callable[[], Any]) -> dict:
    """The response as the recordings keep it: members, or the error, and the HTTP status."""
    try:
        response = call()
    except ClientError as err:
        response = err.response
    return clean(response)


def clean(response: Any) -> Any:
    if not isinstance(response, dict):
        return response
    out = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    if "ResponseMetadata" in response:
        out["ResponseMetadata"] = {"HTTPStatusCode": response["ResponseMetadata"]["HTTPStatusCode"]}
    if "Error" in out:
        out["Error"] = {k: v for k, v in out["Error"].items() if k != "Detail" or v}
    return out


# ---------------------------------------------------------------------------- comparison

_PLACEHOLDER = re.compile(r"<[^<>]+>")


def _text_matches(expected: str, actual: Any) -> bool:
    if expected == "timestamp":
        return actual is not None
    if isinstance(actual, bytes):
        actual = repr(actual)  # the recordings keep a binary value as its Python repr
    if not isinstance(actual, str):
        actual = str(actual)
    if "<" not in expected and "111111111111" not in expected:
        return expected == actual
    # The recordings write the account as 111111111111; any 12-digit account stands for it.
    pattern = ".+".join(re.escape(part) for part in _PLACEHOLDER.split(expected)).replace("111111111111", r"\d{12}")
    return re.fullmatch(pattern, actual, re.S) is not None


def _without_message(response: dict) -> dict:
    return {k: v for k, v in response.items() if k != "message"} if "Error" in response else response


def differences(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Where actual departs from AWS's recorded answer (empty: it matches)."""
    if isinstance(expected, dict):
        if isinstance(actual, str):
            try:
                actual = json.loads(actual)  # the recordings keep JSON documents (Policy) parsed
            except ValueError:
                pass
        if not isinstance(actual, dict):
            return [f"{path}: AWS has an object, got {actual!r}"]
        diffs = []
        if path == "$":  # botocore repeats Error.Message as "message" in some versions only
            expected, actual = _without_message(expected), _without_message(actual)
        for key in expected.keys() - actual.keys():
            diffs.append(f"{path}.{key}: missing (AWS: {expected[key]!r})")
        for key in actual.keys() - expected.keys():
            diffs.append(f"{path}.{key}: not in AWS's answer ({actual[key]!r})")
        for key in expected.keys() & actual.keys():
            diffs += differences(expected[key], actual[key], f"{path}.{key}")
        return diffs
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: AWS has {len(expected)} items, got {actual!r}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in differences(e, a, f"{path}[{i}]")]
    if isinstance(expected, str):
        return [] if _text_matches(expected, actual) else [f"{path}: AWS {expected!r}, got {actual!r}"]
    if isinstance(actual, bytes) and isinstance(expected, str):
        actual = actual.decode()
    return [] if expected == actual else [f"{path}: AWS {expected!r}, got {actual!r}"]


# ---------------------------------------------------------------------------- drivers

DRIVERS: dict[str, Callable[[Ctx], dict]] = {}


def driver(name: str):
    def register(fn):
        DRIVERS[name] = fn
        return fn

    return register


@driver("test_send_receive_max_number_of_messages")
def _max_number(c: Ctx) -> dict:
    url = c.create()
    return {"send_max_number_of_messages": answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=11))}


@driver("test_send_oversized_message")
def _oversized(c: Ctx) -> dict:
    url = c.create()
    return {"send_oversized_message": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody="a" * (1048576 + 1)))}


@driver("test_send_message_with_updated_maximum_message_size")
def _updated_max(c: Ctx) -> dict:
    url = c.create()
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaximumMessageSize": "1024"})
    c.sqs.send_message(QueueUrl=url, MessageBody="a" * 1024)
    attrs = {"k": {"DataType": "String", "StringValue": "x"}}
    body = "a" * (1024 - len("kStringx") + 1)
    return {"send_oversized_message": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attrs))}


@driver("test_send_message_batch_with_oversized_contents")
def _batch_oversized(c: Ctx) -> dict:
    return oversized_batch(c, c.create(), 1048576)


def oversized_batch(c: Ctx, url: str, limit: int) -> dict:
    """A batch whose first entry, body and attribute, comes to ``limit`` bytes: one over it once
    the second entry's body is counted."""
    attrs = {"k": {"DataType": "String", "StringValue": "x"}}
    entries = [
        {"Id": "1", "MessageBody": "a" * (limit - len("kStringx")), "MessageAttributes": attrs},
        {"Id": "2", "MessageBody": "a"},
    ]
    return {"send_oversized_message_batch": answer(lambda: c.sqs.send_message_batch(QueueUrl=url, Entries=entries))}


@driver("test_tag_untag_queue")
def _tags(c: Ctx) -> dict:
    url = c.create()
    c.sqs.tag_queue(QueueUrl=url, Tags={"tag1": "value1", "tag2": "value2", "tag3": ""})
    out = {"get-tag-1": answer(lambda: c.sqs.list_queue_tags(QueueUrl=url))}
    c.sqs.untag_queue(QueueUrl=url, TagKeys=["tag1", "tag3"])
    out["get-tag-2"] = answer(lambda: c.sqs.list_queue_tags(QueueUrl=url))
    c.sqs.untag_queue(QueueUrl=url, TagKeys=["tag2"])
    out["get-tag-after-untag"] = answer(lambda: c.sqs.list_queue_tags(QueueUrl=url))
    return out


@driver("test_create_fifo_queue_with_different_attributes_raises_error")
def _fifo_exists(c: Ctx) -> dict:
    name = c.name(fifo=True)
    c.json.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    call = lambda: c.json.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false"})  # noqa: E731
    return {"queue-already-exists": answer(call)}


@driver("test_create_queue_with_different_attributes_raises_exception")
def _exists(c: Ctx) -> dict:
    name = c.name()
    url = c.json.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "1"})["QueueUrl"]
    c.json.create_queue(QueueName=name)
    c.json.create_queue(QueueName=name, Attributes={"DelaySeconds": "1"})
    out = {
        "create_queue_01": answer(
            lambda: c.json.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "2"})
        )
    }
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "2"})
    c.json.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "2"})
    out["create_queue_02"] = answer(
        lambda: c.json.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "1"})
    )
    return out


@driver("test_create_and_update_queue_attributes")
def _create_update(c: Ctx) -> dict:
    url = c.create(attributes={"MessageRetentionPeriod": "604800", "VisibilityTimeout": "20", "ReceiveMessageWaitTimeSeconds": "10"})
    out = {"get_queue_attributes": answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))}
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "420", "VisibilityTimeout": "69", "MaximumMessageSize": "2048"})
    out["get_updated_queue_attributes"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
    return out


@driver("test_fifo_queue_send_message_with_delay_seconds_fails")
def _fifo_delay(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"ContentBasedDeduplication": "true"})
    call = lambda: c.sqs.send_message(QueueUrl=url, MessageBody="message-1", MessageGroupId="1", DelaySeconds=2)  # noqa: E731
    return {"send_message": answer(call)}


@driver("test_fifo_message_attributes")
def _fifo_attrs(c: Ctx) -> dict:
    url = c.create(
        fifo=True,
        attributes={
            "ContentBasedDeduplication": "true",
            "VisibilityTimeout": "0",
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
        },
    )
    out = {
        "send_message": answer(
            lambda: c.sqs.send_message(
                QueueUrl=url, MessageBody="message-body-1", MessageGroupId="group-1", MessageDeduplicationId="dedup-1"
            )
        )
    }
    for i in range(2):
        out[f"receive_message_{i}"] = answer(lambda: c.sqs.receive_message(QueueUrl=url, AttributeNames=["All"], WaitTimeSeconds=10))
    return out


@driver("test_fifo_set_content_based_deduplication_strategy")
def _fifo_cbd(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"SqsManagedSseEnabled": "true", "ContentBasedDeduplication": "true"})
    out = {"before-update": answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))}
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"ContentBasedDeduplication": "false"})
    out["after-update"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
    return out


@driver("test_too_many_entries_in_batch_request")
def _too_many(c: Ctx) -> dict:
    url = c.create()
    entries = [{"Id": f"message-{i}", "MessageBody": f"messageBody-{i}"} for i in range(20)]
    return {"test_too_many_entries_in_batch_request": answer(lambda: c.sqs.send_message_batch(QueueUrl=url, Entries=entries))}


@driver("test_invalid_batch_id")
def _invalid_batch_id(c: Ctx) -> dict:
    url = c.create()
    entries = [{"Id": "message:abc", "MessageBody": "messageBody-abc"}]
    return {"test_invalid_batch_id": answer(lambda: c.sqs.send_message_batch(QueueUrl=url, Entries=entries))}


@driver("test_send_batch_missing_deduplication_id_for_fifo_queue")
def _batch_no_dedup(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"ContentBasedDeduplication": "false"})
    entries = [
        {"Id": "message-1", "MessageBody": "messageBody", "MessageGroupId": "test-group", "MessageDeduplicationId": "dedup-1"},
        {"Id": "message-2", "MessageBody": "messageBody", "MessageGroupId": "test-group"},
    ]
    return {"test_missing_deduplication_id_for_fifo_queue": answer(lambda: c.sqs.send_message_batch(QueueUrl=url, Entries=entries))}


@driver("test_send_batch_missing_message_group_id_for_fifo_queue")
def _batch_no_group(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"ContentBasedDeduplication": "false"})
    entries = [
        {"Id": "message-1", "MessageBody": "messageBody", "MessageGroupId": "test-group", "MessageDeduplicationId": "dedup-1"},
        {"Id": "message-2", "MessageBody": "messageBody", "MessageDeduplicationId": "dedup-2"},
    ]
    return {"test_missing_message_group_id_for_fifo_queue": answer(lambda: c.sqs.send_message_batch(QueueUrl=url, Entries=entries))}


def _delete_batch_id(entry_id: str):
    def run(c: Ctx) -> dict:
        url = c.create()
        entries = [{"Id": entry_id, "ReceiptHandle": "testHandle1"}]
        return {"error_response": answer(lambda: c.sqs.delete_message_batch(QueueUrl=url, Entries=entries))}

    return run


for _id in ("", "testLongId" * 10, "invalid:id"):
    DRIVERS[f"test_delete_message_batch_invalid_msg_id[{_id}]"] = _delete_batch_id(_id)


@driver("test_delete_message_batch_with_too_large_batch")
def _delete_too_many(c: Ctx) -> dict:
    url = c.create()
    entries = [{"Id": f"id-{i}", "ReceiptHandle": f"handle-{i}"} for i in range(20)]
    return {"error_response": answer(lambda: c.sqs.delete_message_batch(QueueUrl=url, Entries=entries))}


@driver("test_change_message_visibility_batch_with_too_large_batch")
def _change_too_many(c: Ctx) -> dict:
    url = c.create()
    entries = [{"Id": f"id-{i}", "ReceiptHandle": f"handle-{i}", "VisibilityTimeout": 30} for i in range(20)]
    return {"error_response": answer(lambda: c.sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries))}


@driver("test_send_message_with_binary_attributes")
def _binary(c: Ctx) -> dict:
    url = c.create()
    attrs = {"attr1": {"BinaryValue": b"traceparent\x1e00-774062d6c37081a5a0b9b5b88e30627c-2d2482211f6489da-01", "DataType": "Binary"}}
    c.sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attrs)
    return {"binary-attrs-msg": answer(lambda: c.sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"]))}


@driver("test_send_message_with_empty_string_attribute")
def _empty_attr(c: Ctx) -> dict:
    url = c.create()
    attrs = {"ErrorDetails": {"StringValue": "", "DataType": "String"}}
    return {"empty-string-attr": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attrs))}


@driver("test_dead_letter_queue_message_attributes")
def _dlq_attrs(c: Ctx) -> dict:
    dlq = c.create()
    dlq_arn = c.arn(dlq)
    src = c.create(attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})})
    trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    c.sqs.send_message(
        QueueUrl=src,
        MessageBody="message-1",
        MessageSystemAttributes={"AWSTraceHeader": {"StringValue": trace, "DataType": "String"}},
        MessageAttributes={"MyAttribute": {"StringValue": "foobar", "DataType": "String"}},
    )
    c.sqs.send_message(QueueUrl=src, MessageBody="message-2")

    def collect(url: str, times: int) -> list:
        messages = []
        for _ in range(times):
            got = c.sqs.receive_message(
                QueueUrl=url, VisibilityTimeout=0, AttributeNames=["All"], MessageAttributeNames=["All"], MaxNumberOfMessages=10
            )
            messages += [clean(m) for m in got.get("Messages", [])]
        messages.sort(key=lambda m: m["Body"])
        for m in messages:
            m.get("Attributes", {}).pop("SenderId", None)
        return messages

    pre = collect(src, 4)
    return {"dlq-arn": dlq_arn, "sourcen-arn": c.arn(src), "rec-pre-dlq": pre, "dlq-messages": collect(dlq, 1)}


@driver("test_set_unsupported_attribute_fifo")
def _unsupported_fifo(c: Ctx) -> dict:
    url = c.create()
    out = {"invalid-attr-name-1": answer(lambda: c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "true"}))}
    fifo = c.create(fifo=True)
    c.sqs.set_queue_attributes(QueueUrl=fifo, Attributes={"FifoQueue": "true"})
    out["invalid-attr-name-2"] = answer(lambda: c.sqs.set_queue_attributes(QueueUrl=fifo, Attributes={"FifoQueue": "false"}))
    return out


@driver("test_set_unsupported_attribute_standard")
def _unsupported_standard(c: Ctx) -> dict:
    url = c.create()
    return {
        "invalid-attr-name-1": answer(lambda: c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "true"})),
        "invalid-attr-name-2": answer(lambda: c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "false"})),
    }


@driver("test_posting_to_fifo_requires_deduplicationid_group_id")
def _fifo_requires(c: Ctx) -> dict:
    url = c.create(fifo=True)
    out = {}
    for suffix, client in (("", c.sqs), ("-query", c.json)):  # the recording's "-query" keys came over JSON
        out[f"invalid-parameter-value{suffix}"] = answer(
            lambda c=client: c.send_message(QueueUrl=url, MessageBody="test", MessageGroupId="g")
        )
        out[f"missing-parameter{suffix}"] = answer(
            lambda c=client: c.send_message(QueueUrl=url, MessageBody="test", MessageDeduplicationId="d")
        )
    return out


@driver("test_successive_purge_calls_fail")
def _purge_twice(c: Ctx) -> dict:
    url = c.create()
    c.sqs.purge_queue(QueueUrl=url)
    return {"purge_queue_error": answer(lambda: c.sqs.purge_queue(QueueUrl=url))}


@driver("test_sse_queue_attributes")
def _sse(c: Ctx) -> dict:
    names = ["KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"]
    url = c.create()
    c.sqs.set_queue_attributes(
        QueueUrl=url, Attributes={"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000", "SqsManagedSseEnabled": "false"}
    )
    out = {"sse_kms_attributes": answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names))}
    url2 = c.create()
    c.sqs.set_queue_attributes(QueueUrl=url2, Attributes={"SqsManagedSseEnabled": "true"})
    out["sse_sqs_attributes"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url2, AttributeNames=names))
    return out


@driver("test_receive_message_message_attribute_names_filters")
def _attr_name_filters(c: Ctx) -> dict:
    url = c.create(attributes={"VisibilityTimeout": "0"})
    attrs = {
        "Help.Me": {"DataType": "String", "StringValue": "Me"},
        "Hello": {"DataType": "String", "StringValue": "There"},
        "General": {"DataType": "String", "StringValue": "Kenobi"},
    }
    out = {"send_message_response": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody="msg", MessageAttributes=attrs))}

    def receive(names: list[str]) -> dict:
        return answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=names))

    def first(names: list[str]) -> Any:
        got = receive(names)
        return got["Messages"][0] if got.get("Messages") else got

    out["empty_filter"] = receive([])
    out["all_name"] = receive(["All"])
    out["all_wildcard_asterisk"] = first(["*"])
    out["all_wildcard"] = first([".*"])
    out["only_non_existing_names"] = first(["Foo", "Help"])
    out["only_existing"] = first(["Hello", "General"])
    out["existing_and_non_existing"] = first(["Foo", "Hello"])
    out["prefix_filter"] = first(["Hel.*"])
    out["illegal_name_1"] = receive(["AWS."])
    out["illegal_name_2"] = receive(["..foo"])
    return out


def _system_names(member: str):
    def run(c: Ctx) -> dict:
        url = c.create(attributes={"VisibilityTimeout": "0"})
        c.sqs.send_message(QueueUrl=url, MessageBody="msg", MessageAttributes={"Foo": {"DataType": "String", "StringValue": "Bar"}})

        def receive(names: list[str], message_names: list[str] | None = None) -> dict:
            kw = {member: names, "MessageAttributeNames": message_names or []}
            return answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, **kw))

        return {
            "all_attributes": receive(["All"]),
            "all_system_and_message_attributes": receive(["All"], ["All"]),
            "single_attribute": receive(["SenderId"]),
            "multiple_attributes": receive(["SenderId", "SequenceNumber"]),
        }

    return run


DRIVERS["test_receive_message_attribute_names_filters"] = _system_names("AttributeNames")
DRIVERS["test_receive_message_message_system_attribute_names_filters"] = _system_names("MessageSystemAttributeNames")


@driver("test_message_system_attribute_names_with_attribute_names")
def _both_names(c: Ctx) -> dict:
    url = c.create(attributes={"VisibilityTimeout": "0"})
    c.sqs.send_message(QueueUrl=url, MessageBody="msg", MessageAttributes={"Foo": {"DataType": "String", "StringValue": "Bar"}})

    def receive(system: list[str], names: list[str]) -> dict:
        return answer(
            lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageSystemAttributeNames=system, AttributeNames=names)
        )

    return {"same_values": receive(["All"], ["All"]), "different_values": receive(["All"], ["SenderId"])}


@driver("test_sqs_permission_lifecycle")
def _permissions(c: Ctx) -> dict:
    url = c.create()
    me = "000000000000"
    out: dict[str, Any] = {}

    def policy() -> dict:
        got = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"]))
        if "Policy" in got.get("Attributes", {}):
            doc = json.loads(got["Attributes"]["Policy"])
            principals = doc["Statement"][0]["Principal"]["AWS"]
            if isinstance(principals, list):
                principals.sort(key=lambda x: 0 if "668614515564" in x else 1)
            got["Attributes"]["Policy"] = doc
        return got

    def add(accounts: list[str], label: str) -> dict:
        return answer(lambda: c.sqs.add_permission(QueueUrl=url, AWSAccountIds=accounts, Actions=["ReceiveMessage"], Label=label))

    def remove(label: str) -> dict:
        return answer(lambda: c.sqs.remove_permission(QueueUrl=url, Label=label))

    out["add-permission-response"] = add([me, "668614515564"], "crossaccountpermission")
    out["get-queue-policy-attribute"] = policy()
    out["remove-permission-response"] = remove("crossaccountpermission")
    out["get-queue-policy-attribute-after-removal"] = policy()
    add([me], "crossaccountpermission")
    out["get-queue-policy-attribute-first-account-same-label"] = policy()
    out["get-queue-policy-attribute-second-account-same-label"] = add(["668614515564"], "crossaccountpermission")
    add([me], "crossaccountpermission2")
    out["get-queue-policy-attribute-second-account-different-label"] = policy()
    remove("crossaccountpermission")
    out["get-queue-policy-attribute-delete-first-permission"] = policy()
    remove("crossaccountpermission2")
    out["get-queue-policy-attribute-delete-second-permission"] = policy()
    out["get-queue-policy-attribute-delete-non-existent-label"] = remove("crossaccountpermission2")
    return out


@driver("test_non_existent_queue")
def _non_existent(c: Ctx) -> dict:
    name = c.name()
    url = c.json.create_queue(QueueName=name)["QueueUrl"]
    c.json.delete_queue(QueueUrl=url)
    return {
        "queue-does-not-exist": answer(lambda: c.json.get_queue_attributes(QueueUrl=url)),
        "queue-does-not-exist-url": answer(lambda: c.json.get_queue_url(QueueName=name)),
        "queue-does-not-exist-query": answer(lambda: c.query.get_queue_attributes(QueueUrl=url)),
    }


@driver("test_create_standard_queue_with_fifo_attribute_raises_error")
def _standard_with_fifo_attrs(c: Ctx) -> dict:
    name = c.name()

    def create(attrs: dict) -> dict:
        return answer(lambda: c.json.create_queue(QueueName=name, Attributes=attrs))

    return {
        "invalid-attribute-fifo-queue": create({"FifoQueue": "false"}),
        "invalid-attribute-content-based-deduplication": create({"ContentBasedDeduplication": "false"}),
        "invalid-attribute-deduplication-scope": create({"DeduplicationScope": "queue"}),
        "invalid-attribute-throughput-limit": create({"FifoThroughputLimit": "perQueue"}),
    }


@driver("test_send_receive_wait_time_seconds")
def _wait_time(c: Ctx) -> dict:
    url = c.create()
    c.sqs.send_message(QueueUrl=url, MessageBody="message")
    c.sqs.send_message(QueueUrl=url, MessageBody="message")
    out = {
        "recieve_message_error_too_large": answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=21)),
        "recieve_message_error_too_small": answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=-1)),
    }
    out["empty_short_poll_by_default_resp"] = answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1))
    out["empty_short_poll_explicit_resp"] = answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=0))
    return out


@driver("test_receive_empty_queue")
def _receive_empty(c: Ctx) -> dict:
    url = c.create()
    return {
        "empty_short_poll_resp_no_param": answer(lambda: c.sqs.receive_message(QueueUrl=url)),
        "empty_short_poll_resp": answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)),
        "empty_long_poll_resp": answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=1)),
    }


@driver("test_send_empty_message")
def _empty_message(c: Ctx) -> dict:
    url = c.create()
    return {"send_empty_message": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody=""))}


@driver("test_delete_after_visibility_timeout")
def _delete_after_timeout(c: Ctx) -> dict:
    url = c.create(attributes={"VisibilityTimeout": "1"})
    c.sqs.send_message(QueueUrl=url, MessageBody="foobar")
    handle = c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"][0]["ReceiptHandle"]
    c.clock.advance(1)
    c.sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
    return {"delete_after_timeout_queue_empty": answer(lambda: c.sqs.receive_message(QueueUrl=url))}


@driver("test_fifo_delete_after_visibility_timeout")
def _fifo_delete_after_timeout(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"VisibilityTimeout": "1", "ContentBasedDeduplication": "True"})
    c.sqs.send_message(QueueUrl=url, MessageBody="foobar", MessageGroupId="1")
    received = answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5))
    handle = received["Messages"][0]["ReceiptHandle"]
    c.clock.advance(1)
    return {
        "received_sqs_message": received,
        "delete_after_timeout_fifo": answer(lambda: c.sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)),
    }


@driver("test_aws_trace_header_propagation")
def _trace_header(c: Ctx) -> dict:
    trace = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1"

    def add_header(request, **_):
        request.headers["X-Amzn-Trace-Id"] = trace

    c.sqs.meta.events.register("before-send.sqs.SendMessage", add_header)
    try:
        url = c.create()
        attrs = {"timestamp": {"StringValue": "1493147359900", "DataType": "Number"}}
        c.sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attrs)
        got = c.sqs.receive_message(
            QueueUrl=url,
            AttributeNames=["SentTimestamp", "AWSTraceHeader"],
            MaxNumberOfMessages=1,
            MessageAttributeNames=["All"],
            VisibilityTimeout=2,
            WaitTimeSeconds=2,
        )
    finally:
        c.sqs.meta.events.unregister("before-send.sqs.SendMessage", add_header)
    return {"xray-msg": clean(got["Messages"][0]) if got.get("Messages") else clean(got)}


def _bad_id(member: str, value: str):
    def run(c: Ctx) -> dict:
        url = c.json.create_queue(QueueName=c.name())["QueueUrl"]
        kw = {member: value}
        if member == "MessageDeduplicationId":
            url = c.json.create_queue(QueueName=c.name(fifo=True), Attributes={"FifoQueue": "true"})["QueueUrl"]
            kw["MessageGroupId"] = "group"
        return {"error-response": answer(lambda: c.json.send_message(QueueUrl=url, MessageBody="message", **kw))}

    return run


for _param, _value in (("empty", ""), ("too_long", "a" * 129), ("spaces", "group 123")):
    DRIVERS[f"test_send_message_to_standard_queue_with_invalid_message_group_id[{_param}]"] = _bad_id("MessageGroupId", _value)
    DRIVERS[f"test_message_deduplication_id_invalid[{_param}]"] = _bad_id("MessageDeduplicationId", _value)


@driver("test_set_queue_attributes_default_values")
def _defaults(c: Ctx) -> dict:
    url = c.create()
    out = {"get-queue-attributes-initial-values": answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))}
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"})
    out["get-queue-attributes-after-update"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"})
    out["get-queue-attributes-after-set-to-defaults"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
    return out


def _handle(task_id: str, source_arn: str) -> str:
    return base64.b64encode(json.dumps({"taskId": task_id, "sourceArn": source_arn}, separators=(",", ":")).encode()).decode()


def _dlq_pipe(c: Ctx) -> tuple[str, str]:
    dlq = c.json.create_queue(QueueName=c.name("dlq"))["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": c.arn(dlq), "maxReceiveCount": 1})
    src = c.json.create_queue(QueueName=c.name("src"), Attributes={"RedrivePolicy": policy})["QueueUrl"]
    return src, dlq


@driver("test_cancel_with_invalid_task_handle")
def _cancel_bad_handle(c: Ctx) -> dict:
    return {"error": answer(lambda: c.json.cancel_message_move_task(TaskHandle="foobared"))}


@driver("test_cancel_with_invalid_source_arn_in_task_handle")
def _cancel_bad_source(c: Ctx) -> dict:
    handle = _handle("10f57157-fc38-4da9-a113-4de7e12d05dd", "arn:aws:sqs:us-east-1:878966065785:test-queue-doesnt-exist-123456")
    return {"error": answer(lambda: c.json.cancel_message_move_task(TaskHandle=handle))}


@driver("test_cancel_with_invalid_task_id_in_task_handle")
def _cancel_bad_task(c: Ctx) -> dict:
    source = c.json.create_queue(QueueName=c.name())["QueueUrl"]
    handle = _handle("10f57157-fc38-4da9-a113-4de7e12d05aa", c.arn(source))
    return {"error": answer(lambda: c.json.cancel_message_move_task(TaskHandle=handle))}


@driver("test_source_needs_redrive_policy")
def _source_not_dlq(c: Ctx) -> dict:
    source = c.arn(c.json.create_queue(QueueName=c.name())["QueueUrl"])
    destination = c.arn(c.json.create_queue(QueueName=c.name())["QueueUrl"])
    return {"error": answer(lambda: c.json.start_message_move_task(SourceArn=source, DestinationArn=destination))}


@driver("test_destination_needs_to_exist")
def _destination_missing(c: Ctx) -> dict:
    _, dlq = _dlq_pipe(c)
    destination = c.arn(c.json.create_queue(QueueName=c.name())["QueueUrl"]) + "doesntexist"
    return {"error": answer(lambda: c.json.start_message_move_task(SourceArn=c.arn(dlq), DestinationArn=destination))}


@driver("test_start_multiple_move_tasks")
def _two_tasks(c: Ctx) -> dict:
    src, dlq = _dlq_pipe(c)
    destination = c.arn(c.json.create_queue(QueueName=c.name())["QueueUrl"])
    for i in range(10):
        c.json.send_message(QueueUrl=src, MessageBody=f"message-{i}")
    for _ in range(20):
        c.json.receive_message(QueueUrl=src, VisibilityTimeout=0, MaxNumberOfMessages=10)
    start = lambda: c.json.start_message_move_task(SourceArn=c.arn(dlq), DestinationArn=destination, MaxNumberOfMessagesPerSecond=1)  # noqa: E731
    start()
    return {"error": answer(start)}


def _dedup_after_delete(content_based: bool):
    def run(c: Ctx) -> dict:
        url = c.create(fifo=True, attributes={"ContentBasedDeduplication": "true"} if content_based else {})
        kw = {} if content_based else {"MessageDeduplicationId": "dedup1"}
        c.sqs.send_message(QueueUrl=url, MessageBody='{"foo": "bar"}', MessageGroupId="group-1", **kw)
        first = answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=3))
        c.sqs.delete_message(QueueUrl=url, ReceiptHandle=first["Messages"][0]["ReceiptHandle"])
        c.sqs.send_message(QueueUrl=url, MessageBody='{"foo": "bar"}', MessageGroupId="group-1", **kw)
        return {"get-messages": first, "get-messages-duplicate": answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1))}

    return run


def _dedup_across_groups(content_based: bool):
    def run(c: Ctx) -> dict:
        url = c.create(fifo=True, attributes={"ContentBasedDeduplication": "true"} if content_based else {})
        kw = {} if content_based else {"MessageDeduplicationId": "dedup1"}
        for group in ("group-1", "group-2"):
            c.sqs.send_message(QueueUrl=url, MessageBody='{"foo": "bar"}', MessageGroupId=group, **kw)
        return {
            "get-messages": answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=2)),
            "get-dedup-messages": answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=1)),
        }

    return run


for _proto in ("sqs", "sqs_query"):
    for _flag in (True, False):
        DRIVERS[f"test_fifo_deduplication_arrives_once_after_delete[{_flag}]"] = _dedup_after_delete(_flag)
        DRIVERS[f"test_fifo_deduplication_not_on_message_group_id[{_flag}]"] = _dedup_across_groups(_flag)


@driver("test_sqs_fifo_same_dedup_id_different_message_groups")
def _same_dedup_groups(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"FifoQueue": "True", "ContentBasedDeduplication": "False"})
    c.sqs.send_message(QueueUrl=url, MessageBody="Test", MessageGroupId="group1", MessageDeduplicationId="same-dedup")
    first = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    c.sqs.delete_message(QueueUrl=url, ReceiptHandle=first["Messages"][0]["ReceiptHandle"])
    c.sqs.send_message(QueueUrl=url, MessageBody="Test", MessageGroupId="group2", MessageDeduplicationId="same-dedup")
    return {"same-dedup-different-grp-1": first, "same-dedup-different-grp-2": answer(lambda: c.sqs.receive_message(QueueUrl=url))}


@driver("test_fifo_change_to_high_throughput_after_creation")
def _to_high_throughput(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"FifoQueue": "True", "ContentBasedDeduplication": "False", "DeduplicationScope": "queue"})

    def send(body: str, group: str, dedup: str) -> None:
        c.sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=dedup)

    out = {}
    send("Test1", "group1", "same-dedup")
    out["same-dedup-different-grp-1"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    c.sqs.delete_message(QueueUrl=url, ReceiptHandle=out["same-dedup-different-grp-1"]["Messages"][0]["ReceiptHandle"])
    send("Test2", "group2", "same-dedup")
    out["same-dedup-different-grp-2"] = answer(lambda: c.sqs.receive_message(QueueUrl=url, VisibilityTimeout=0))
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
    out["set-to-high-throughput"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
    out["same-dedup-different-grp-high-throughput"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    send("Test3", "group3", "same-dedup")
    out["same-dedup-different-grp-high-throughput-2"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    send("Test4", "group4", "dedup_2")
    out["new-dedup2-high-throughput"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    c.sqs.delete_message(QueueUrl=url, ReceiptHandle=out["new-dedup2-high-throughput"]["Messages"][0]["ReceiptHandle"])
    send("Test5", "group5", "dedup_2")
    out["same-dedup2-high-throughput"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    return out


@driver("test_send_batch_message_size")
def _batch_entry_size(c: Ctx) -> dict:
    url = c.json.create_queue(QueueName=c.name(), Attributes={"MaximumMessageSize": "1024"})["QueueUrl"]
    entries = [
        {"Id": "a4cff0d1-1961-44bd-ae53-c6d5ed71ed08", "MessageBody": "a" * 1024},
        {"Id": "35b535ed-b76a-4ebd-b749-6eb35cdb55ee", "MessageBody": "a" * 1025},
    ]
    result = answer(lambda: c.json.send_message_batch(QueueUrl=url, Entries=entries))
    for entry in result.get("Successful", []) + result.get("Failed", []):
        entry["Id"] = "<uuid>"  # the recording masks the entry ids
    return {"send-message-batch-result": result}


@driver("test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay")
def _fifo_zero_delay(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"ContentBasedDeduplication": "true", "DelaySeconds": "2"})
    out = {
        "send_message_result": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody="message-1", MessageGroupId="1", DelaySeconds=0))
    }
    out["receive_message_initial_result"] = answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1))
    c.clock.advance(3)
    out["receive_message_after_delay_result"] = answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1))
    return out


@driver("test_change_message_visibility_after_visibility_timeout_expiration")
def _change_after_expiry(c: Ctx) -> dict:
    url = c.create(attributes={"VisibilityTimeout": "1"})
    c.sqs.send_message(QueueUrl=url, MessageBody="test")
    handle = c.sqs.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"]
    c.clock.advance(2)
    return {
        "visibility_timeout_expired": answer(
            lambda: c.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=2)
        )
    }


@driver("test_fifo_delete_after_visibility_timeout_extended")
def _fifo_delete_extended(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"VisibilityTimeout": "1", "ContentBasedDeduplication": "True"})
    c.sqs.send_message(QueueUrl=url, MessageBody="foobar", MessageGroupId="1")
    received = answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5))
    handle = received["Messages"][0]["ReceiptHandle"]
    c.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=5)
    c.clock.advance(1.5)
    c.sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
    return {"received_sqs_message": received, "delete_after_timeout_fifo_extended": answer(lambda: c.sqs.receive_message(QueueUrl=url))}


@driver("test_send_message_via_queue_url_with_json_protocol")
def _json_on_queue_url(c: Ctx) -> dict:
    url = c.json.create_queue(QueueName=c.name())["QueueUrl"]
    on_url = boto3_client(url)  # as the PHP SDK does: JSON requests sent to the queue's own URL
    response = on_url.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert response["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/x-amz-json-1.0"
    return {"receive-json-on-queue-url": clean(response)}


@driver("test_fair_queue_with_message_group_id")
def _fair_queue(c: Ctx) -> dict:
    url = c.create()
    return {
        "send_message": answer(lambda: c.sqs.send_message(QueueUrl=url, MessageBody="message", MessageGroupId="test")),
        "get-message-with-deduplication-id": answer(lambda: c.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, AttributeNames=["All"])),
    }


@driver("test_fifo_empty_message_groups_added_back_to_queue")
def _fifo_empty_group(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"FifoQueue": "True"})
    c.sqs.send_message(QueueUrl=url, MessageDeduplicationId="1", MessageGroupId="g1", MessageBody="Message 1")
    first = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    c.sqs.delete_message(QueueUrl=url, ReceiptHandle=first["Messages"][0]["ReceiptHandle"])
    out = {"inital-fifo-receive": first, "empty-fifo-receive": answer(lambda: c.sqs.receive_message(QueueUrl=url))}
    c.sqs.send_message(QueueUrl=url, MessageDeduplicationId="2", MessageGroupId="g1", MessageBody="Message 2")
    out["final-fifo-receive"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    return out
