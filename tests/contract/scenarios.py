"""The SQS scenario suite, written once against a boto3-shaped client.

Every entry point runs it (tests/contract/test_scenarios.py): the in-process ``sqsqlite.client``, a real
boto3 client on ``sqsqlite serve``, and any other adapter that offers boto3's methods, keyword
arguments, response dicts and ``client.exceptions``. Each scenario gets a ``World``: the client,
the ManualClock behind it (time moves only when a scenario says so) and a fresh name prefix.

A scenario is a function ``scenario_<what it shows>(w)``; ``ALL`` lists them in file order.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqsqlite.errors import BOTOCORE_NAMES, wire_error

ALL: list[Callable] = []


def scenario(fn: Callable) -> Callable:
    ALL.append(fn)
    return fn


@dataclass
class World:
    client: Any
    clock: Any  # a ManualClock shared with whatever serves the client
    prefix: str = "s"

    def name(self, base: str) -> str:
        return f"{self.prefix}-{base}"

    def queue(self, base: str = "q", **attributes: Any) -> str:
        attrs = {k: str(v) for k, v in attributes.items()}
        return self.client.create_queue(QueueName=self.name(base), Attributes=attrs)["QueueUrl"]

    def fifo(self, base: str = "f", **attributes: Any) -> str:
        attrs = {"FifoQueue": "true", **{k: str(v) for k, v in attributes.items()}}
        return self.client.create_queue(QueueName=self.name(base) + ".fifo", Attributes=attrs)["QueueUrl"]

    def arn(self, url: str) -> str:
        return self.client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def attrs(self, url: str, *names: str) -> dict[str, str]:
        return self.client.get_queue_attributes(QueueUrl=url, AttributeNames=list(names) or ["All"]).get("Attributes", {})

    def counts(self, url: str) -> tuple[int, int, int]:
        a = self.attrs(url, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
        return (
            int(a["ApproximateNumberOfMessages"]),
            int(a["ApproximateNumberOfMessagesNotVisible"]),
            int(a["ApproximateNumberOfMessagesDelayed"]),
        )

    def receive(self, url: str, n: int = 10, **kwargs: Any) -> list[dict]:
        kwargs.setdefault("WaitTimeSeconds", 0)
        return self.client.receive_message(QueueUrl=url, MaxNumberOfMessages=n, **kwargs).get("Messages", [])

    def bodies(self, url: str, n: int = 10, **kwargs: Any) -> list[str]:
        return [m["Body"] for m in self.receive(url, n, **kwargs)]


@dataclass
class Refusal:
    """What an expected error said: SQS's message, and sqsqlite's hint where the client carries
    one (the in-process client and the CLI; over HTTP only SQS's message travels)."""

    message: str = ""
    hint: str | None = None


@contextmanager
def expect_error(client: Any, code: str):
    """The call fails with SQS error ``code`` (sqsqlite's name), raised as the client's modelled
    exception when it has one, with the code SQS puts on the wire. Yields a Refusal, filled in
    once the call has failed."""
    header = wire_error(code)[0]
    refusal = Refusal()
    try:
        yield refusal
    except Exception as exc:  # noqa: BLE001 - we inspect it
        response = getattr(exc, "response", None)
        assert response is not None, f"expected {code}, got {exc!r}"
        assert response["Error"]["Code"] == header, f"expected {code} ({header}), got {response['Error']}"
        modelled = getattr(client.exceptions, BOTOCORE_NAMES.get(code, code), None)
        if modelled is not None:
            assert isinstance(exc, modelled), f"{exc!r} is not {modelled}"
        assert response["Error"]["Message"], "an error names the offending value"
        refusal.message, refusal.hint = response["Error"]["Message"], getattr(exc, "hint", None)
        return
    raise AssertionError(f"expected {code}, the call succeeded")


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------- queues


@scenario
def scenario_create_queue_is_idempotent_for_equal_attributes_and_refuses_different_ones(w: World):
    url = w.queue("orders", VisibilityTimeout=60)
    assert url.endswith("/000000000000/" + w.name("orders"))
    assert w.queue("orders", VisibilityTimeout=60) == url
    with expect_error(w.client, "QueueAlreadyExists"):
        w.queue("orders", VisibilityTimeout=61)


@scenario
def scenario_a_deleted_queue_name_is_reusable_only_after_60_seconds(w: World):
    url = w.queue("gone")
    w.client.send_message(QueueUrl=url, MessageBody="lost with the queue")
    w.client.delete_queue(QueueUrl=url)
    with expect_error(w.client, "QueueDoesNotExist"):
        w.client.get_queue_url(QueueName=w.name("gone"))
    with expect_error(w.client, "QueueDeletedRecently"):
        w.queue("gone")
    w.clock.advance(61)
    url = w.queue("gone")
    assert w.receive(url) == []


@scenario
def scenario_queue_urls_and_bare_names_both_address_a_queue(w: World):
    url = w.queue("named")
    assert w.client.get_queue_url(QueueName=w.name("named"))["QueueUrl"] == url
    w.client.send_message(QueueUrl=w.name("named"), MessageBody="by name")
    assert w.bodies(url) == ["by name"]
    with expect_error(w.client, "QueueDoesNotExist"):
        w.client.send_message(QueueUrl=url + "-missing", MessageBody="x")
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.create_queue(QueueName="bad name!")


@scenario
def scenario_list_queues_filters_by_prefix_and_pages_with_next_token(w: World):
    urls = sorted(w.queue(f"list-{i}") for i in range(3))
    w.queue("other")
    assert sorted(w.client.list_queues(QueueNamePrefix=w.name("list-")).get("QueueUrls", [])) == urls
    first = w.client.list_queues(QueueNamePrefix=w.name("list-"), MaxResults=2)
    assert len(first["QueueUrls"]) == 2 and first["NextToken"]
    rest = w.client.list_queues(QueueNamePrefix=w.name("list-"), MaxResults=2, NextToken=first["NextToken"])
    assert sorted(first["QueueUrls"] + rest["QueueUrls"]) == urls and "NextToken" not in rest
    assert "QueueUrls" not in w.client.list_queues(QueueNamePrefix=w.name("nothing-"))


@scenario
def scenario_queue_attributes_are_read_set_and_validated(w: World):
    url = w.queue("attrs", VisibilityTimeout=60)
    a = w.attrs(url)
    assert a["VisibilityTimeout"] == "60" and a["DelaySeconds"] == "0" and a["MessageRetentionPeriod"] == "345600"
    assert a["QueueArn"] == f"arn:aws:sqs:us-east-1:000000000000:{w.name('attrs')}"
    w.client.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "120", "DelaySeconds": "5"})
    assert w.attrs(url, "VisibilityTimeout", "DelaySeconds") == {"VisibilityTimeout": "120", "DelaySeconds": "5"}
    with expect_error(w.client, "InvalidAttributeValue"):
        w.client.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "43201"})
    with expect_error(w.client, "InvalidAttributeName"):
        w.client.get_queue_attributes(QueueUrl=url, AttributeNames=["Colour"])
    assert w.attrs(url, "VisibilityTimeout") == {"VisibilityTimeout": "120"}  # the failed call changed nothing


@scenario
def scenario_a_bad_queue_attribute_value_is_refused_in_sqs_words_with_sqsqlite_s_reason_in_the_hint(w: World):
    fifo = w.fifo("valued")
    refusals = [
        ({"FifoQueue": "yes"}, "FifoQueue", "Invalid value 'yes' for FifoQueue: must be true or false."),
        (
            {"ContentBasedDeduplication": "maybe"},
            "ContentBasedDeduplication",
            "Invalid value 'maybe' for ContentBasedDeduplication: must be true or false.",
        ),
        (
            {"DeduplicationScope": "group"},
            "DeduplicationScope",
            "Invalid value 'group' for DeduplicationScope: must be one of queue, messageGroup.",
        ),
        (
            {"FifoThroughputLimit": "perGroup"},
            "FifoThroughputLimit",
            "Invalid value 'perGroup' for FifoThroughputLimit: must be one of perQueue, perMessageGroupId.",
        ),
        (
            {"FifoThroughputLimit": "perMessageGroupId"},
            "FifoThroughputLimit",
            "FifoThroughputLimit perMessageGroupId needs DeduplicationScope messageGroup.",
        ),
    ]
    for attributes, name, hint in refusals:
        with expect_error(w.client, "InvalidAttributeValue") as refused:
            w.client.create_queue(QueueName=w.name("never") + ".fifo", Attributes={"FifoQueue": "true", **attributes})
        assert (refused.message, refused.hint or hint) == (f"Invalid value for the parameter {name}.", hint)
        if name != "FifoQueue":  # set only at creation; SQS's own answer to a change is tested elsewhere
            with expect_error(w.client, "InvalidAttributeValue") as refused:
                w.client.set_queue_attributes(QueueUrl=fifo, Attributes=attributes)
            assert (refused.message, refused.hint or hint) == (f"Invalid value for the parameter {name}.", hint)
    standard = w.queue("plain")
    for name, value, hint in [
        ("SqsManagedSseEnabled", "on", "Invalid value 'on' for SqsManagedSseEnabled: must be true or false."),
        (
            "RedriveAllowPolicy",
            '{"redrivePermission": "byQueue", "sourceQueueArns": ["not-an-arn"]}',
            "Invalid RedriveAllowPolicy: Invalid sourceQueueArns entry 'not-an-arn': "
            "expected arn:aws:sqs:<region>:<12-digit account>:<queue name>.",
        ),
    ]:
        with expect_error(w.client, "InvalidAttributeValue") as refused:
            w.client.set_queue_attributes(QueueUrl=standard, Attributes={name: value})
        assert (refused.message, refused.hint or hint) == (f"Invalid value for the parameter {name}.", hint)
    assert "RedriveAllowPolicy" not in w.attrs(standard)
    assert w.attrs(fifo, "DeduplicationScope", "FifoThroughputLimit") == {"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"}
    assert "QueueUrls" not in w.client.list_queues(QueueNamePrefix=w.name("never"))


@scenario
def scenario_an_empty_or_absent_attributes_tags_or_tag_keys_is_missing_parameter_in_one_wording(w: World):
    # An empty map travels as {} in JSON and in process, and as no member at all in the query
    # protocol's form: either way the same SQS sentence.
    url = w.queue("bare")
    for call, member, hint in [
        (lambda: w.client.set_queue_attributes(QueueUrl=url, Attributes={}), "Attributes", "Give one or more queue attributes to set."),
        (lambda: w.client.tag_queue(QueueUrl=url, Tags={}), "Tags", "Give one or more tags, each a key and a value."),
        (lambda: w.client.untag_queue(QueueUrl=url, TagKeys=[]), "TagKeys", "Give one or more tag keys to remove."),
    ]:
        with expect_error(w.client, "MissingParameter") as refused:
            call()
        assert refused.message == f"The request must contain the parameter {member}."
        assert refused.hint in (None, hint)


@scenario
def scenario_tags_are_added_listed_and_removed(w: World):
    url = w.client.create_queue(QueueName=w.name("tagged"), tags={"team": "a"})["QueueUrl"]
    w.client.tag_queue(QueueUrl=url, Tags={"env": "dev"})
    assert w.client.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "a", "env": "dev"}
    w.client.untag_queue(QueueUrl=url, TagKeys=["team", "env"])
    assert "Tags" not in w.client.list_queue_tags(QueueUrl=url)


@scenario
def scenario_permissions_are_kept_as_statements_of_the_queue_policy(w: World):
    url = w.queue("perm")
    arn = w.arn(url)
    w.client.add_permission(QueueUrl=url, Label="l", AWSAccountIds=["111111111111"], Actions=["SendMessage"])
    policy = json.loads(w.attrs(url, "Policy")["Policy"])
    assert policy["Statement"] == [
        {
            "Sid": "l",
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
            "Action": "SQS:SendMessage",
            "Resource": arn,
        }
    ]
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.add_permission(QueueUrl=url, Label="l", AWSAccountIds=["111111111111"], Actions=["SendMessage"])
    w.client.remove_permission(QueueUrl=url, Label="l")
    assert "Policy" not in w.attrs(url, "Policy")
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.remove_permission(QueueUrl=url, Label="l")


# ---------------------------------------------------------------------- sending and receiving


@scenario
def scenario_a_message_is_received_once_then_deleted_for_good(w: World):
    url = w.queue("basic")
    sent = w.client.send_message(QueueUrl=url, MessageBody="hello")
    assert sent["MD5OfMessageBody"] == md5("hello")
    [m] = w.receive(url, AttributeNames=["All"])
    assert (m["Body"], m["MessageId"], m["MD5OfBody"]) == ("hello", sent["MessageId"], md5("hello"))
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    assert int(m["Attributes"]["SentTimestamp"]) == w.clock.now_ms()
    assert w.receive(url) == []
    w.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert w.counts(url) == (0, 0, 0)


@scenario
def scenario_message_attributes_round_trip_with_sqs_digests(w: World):
    url = w.queue("mattrs")
    attributes = {
        "text": {"DataType": "String", "StringValue": "héllo"},
        "n": {"DataType": "Number", "StringValue": "42"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xffraw"},
        "custom": {"DataType": "String.json", "StringValue": "{}"},
    }
    sent = w.client.send_message(QueueUrl=url, MessageBody="with attributes", MessageAttributes=attributes)
    [m] = w.receive(url, MessageAttributeNames=["All"])
    assert m["MessageAttributes"] == attributes
    assert m["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    w.client.send_message(QueueUrl=url, MessageBody="again", MessageAttributes=attributes)
    [m] = w.receive(url, MessageAttributeNames=["text", "n"])
    assert set(m["MessageAttributes"]) == {"text", "n"}
    # The digest covers the attributes returned: what SQS sends and what the AWS SDKs check
    # (the Java SDK's MD5 interceptor digests the response's MessageAttributes).
    assert m["MD5OfMessageAttributes"] == _sqs_md5_of_attributes({k: attributes[k] for k in ("text", "n")})
    w.client.send_message(QueueUrl=url, MessageBody="none asked", MessageAttributes=attributes)
    [m] = w.receive(url)
    assert "MessageAttributes" not in m and "MD5OfMessageAttributes" not in m


def _sqs_md5_of_attributes(attributes: dict) -> str:
    """SPEC's algorithm, written out independently of the engine's."""
    out = b""
    for name in sorted(attributes):
        a = attributes[name]
        for part in (name.encode(), a["DataType"].encode()):
            out += len(part).to_bytes(4, "big") + part
        value = a["BinaryValue"] if "BinaryValue" in a else a["StringValue"].encode()
        out += (b"\x02" if "BinaryValue" in a else b"\x01") + len(value).to_bytes(4, "big") + value
    return hashlib.md5(out).hexdigest()


@scenario
def scenario_the_md5_of_message_attributes_is_the_one_sqs_computes(w: World):
    url = w.queue("digest")
    # The digest AWS's documentation example gives for this attribute.
    sent = w.client.send_message(QueueUrl=url, MessageBody="x", MessageAttributes={"attr": {"DataType": "String", "StringValue": "value"}})
    payload = b"".join(len(p).to_bytes(4, "big") + p for p in (b"attr", b"String")) + b"\x01" + len(b"value").to_bytes(4, "big") + b"value"
    assert sent["MD5OfMessageAttributes"] == hashlib.md5(payload).hexdigest()


@scenario
def scenario_bodies_with_forbidden_characters_are_refused_and_nothing_is_stored(w: World):
    url = w.queue("chars")
    with expect_error(w.client, "InvalidMessageContents"):
        w.client.send_message(QueueUrl=url, MessageBody="bad \x01 char")
    w.client.send_message(QueueUrl=url, MessageBody="tab\tnewline\ncr\r emoji \U0001f600 <xml & amp>")
    assert w.bodies(url) == ["tab\tnewline\ncr\r emoji \U0001f600 <xml & amp>"]
    assert w.counts(url) == (0, 1, 0)


@scenario
def scenario_receive_parameters_out_of_range_name_the_range(w: World):
    url = w.queue("ranges")
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.receive_message(QueueUrl=url, MaxNumberOfMessages=11)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.receive_message(QueueUrl=url, WaitTimeSeconds=21)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901)


@scenario
def scenario_a_message_larger_than_the_queue_allows_is_refused(w: World):
    url = w.queue("small", MaximumMessageSize=1024)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.send_message(QueueUrl=url, MessageBody="x" * 1025)
    w.client.send_message(QueueUrl=url, MessageBody="x" * 1024)
    assert w.counts(url) == (1, 0, 0)


# ---------------------------------------------------------------------- visibility


@scenario
def scenario_an_undeleted_message_reappears_when_its_visibility_timeout_ends(w: World):
    url = w.queue("vis", VisibilityTimeout=30)
    w.client.send_message(QueueUrl=url, MessageBody="work")
    [first] = w.receive(url)
    w.clock.advance(29)
    assert w.receive(url) == []
    w.clock.advance(1)
    [again] = w.receive(url, AttributeNames=["ApproximateReceiveCount"])
    assert again["MessageId"] == first["MessageId"] and again["ReceiptHandle"] != first["ReceiptHandle"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"


@scenario
def scenario_a_receive_may_set_its_own_visibility_timeout(w: World):
    url = w.queue("vis-own", VisibilityTimeout=30)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    w.receive(url, VisibilityTimeout=5)
    w.clock.advance(5)
    assert w.bodies(url) == ["m"]
    w.clock.advance(29)
    assert w.receive(url) == []  # that receive used the queue's 30 s again


@scenario
def scenario_change_message_visibility_counts_from_the_call_and_is_not_remembered(w: World):
    url = w.queue("cmv", VisibilityTimeout=60)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    [m] = w.receive(url)
    w.clock.advance(20)
    w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=300)
    w.clock.advance(299)
    assert w.receive(url) == []
    w.clock.advance(1)
    [m] = w.receive(url)
    w.clock.advance(60)
    assert len(w.receive(url)) == 1  # the next receive used the queue's 60 s, not 300


@scenario
def scenario_visibility_zero_makes_a_message_receivable_at_once(w: World):
    url = w.queue("cmv0", VisibilityTimeout=60)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    [m] = w.receive(url)
    w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    assert w.bodies(url) == ["m"]


@scenario
def scenario_total_visibility_for_one_receive_is_capped_at_12_hours(w: World):
    url = w.queue("cap", VisibilityTimeout=60)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    [m] = w.receive(url)
    w.clock.advance(30)
    w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=43170)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=43171)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=43201)


@scenario
def scenario_changing_visibility_of_a_message_not_in_flight_fails(w: World):
    url = w.queue("notinflight", VisibilityTimeout=10)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    [m] = w.receive(url)
    w.clock.advance(10)
    with expect_error(w.client, "MessageNotInflight"):
        w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=30)
    w.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=30)


@scenario
def scenario_changing_the_queue_timeout_affects_only_later_receives(w: World):
    url = w.queue("later", VisibilityTimeout=30)
    w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "a"}])
    w.receive(url)
    w.client.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "100"})
    w.clock.advance(30)
    [m] = w.receive(url)
    w.clock.advance(99)
    assert w.receive(url) == []
    w.clock.advance(1)
    assert w.bodies(url) == ["a"]


# ---------------------------------------------------------------------- receipt handles


@scenario
def scenario_a_superseded_receipt_handle_can_neither_delete_nor_extend(w: World):
    url = w.queue("stale", VisibilityTimeout=10)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    [old] = w.receive(url)
    w.clock.advance(10)
    [new] = w.receive(url)
    with expect_error(w.client, "ReceiptHandleIsInvalid"):
        w.client.delete_message(QueueUrl=url, ReceiptHandle=old["ReceiptHandle"])
    with expect_error(w.client, "ReceiptHandleIsInvalid"):
        w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=old["ReceiptHandle"], VisibilityTimeout=100)
    assert w.counts(url) == (0, 1, 0)
    w.client.delete_message(QueueUrl=url, ReceiptHandle=new["ReceiptHandle"])
    assert w.counts(url) == (0, 0, 0)


@scenario
def scenario_the_latest_handle_deletes_even_after_visibility_ended_and_deleting_twice_is_fine(w: World):
    url = w.queue("late", VisibilityTimeout=10)
    w.client.send_message(QueueUrl=url, MessageBody="m")
    [m] = w.receive(url)
    w.clock.advance(60)
    w.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    w.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert w.receive(url) == []


@scenario
def scenario_forged_and_foreign_receipt_handles_are_invalid(w: World):
    a, b = w.queue("ha"), w.queue("hb")
    w.client.send_message(QueueUrl=a, MessageBody="m")
    [m] = w.receive(a)
    with expect_error(w.client, "ReceiptHandleIsInvalid"):
        w.client.delete_message(QueueUrl=b, ReceiptHandle=m["ReceiptHandle"])
    with expect_error(w.client, "ReceiptHandleIsInvalid"):
        w.client.delete_message(QueueUrl=a, ReceiptHandle="not-a-handle")
    forged = base64.urlsafe_b64encode(b"\x01" + b"\x00" * 80).decode().rstrip("=")
    with expect_error(w.client, "ReceiptHandleIsInvalid"):
        w.client.delete_message(QueueUrl=a, ReceiptHandle=forged)
    assert w.counts(a) == (0, 1, 0)


# ---------------------------------------------------------------------- delays, retention, purge


@scenario
def scenario_delayed_messages_wait_for_their_delay(w: World):
    url = w.queue("delay", DelaySeconds=10)
    w.client.send_message(QueueUrl=url, MessageBody="queue delay")
    w.client.send_message(QueueUrl=url, MessageBody="own delay", DelaySeconds=0)
    w.client.send_message(QueueUrl=url, MessageBody="longer", DelaySeconds=20)
    assert w.counts(url) == (1, 0, 2)
    assert w.bodies(url) == ["own delay"]
    w.clock.advance(10)
    assert w.bodies(url) == ["queue delay"]
    w.clock.advance(10)
    assert w.bodies(url) == ["longer"]


@scenario
def scenario_a_long_poll_returns_a_message_whose_delay_ends_during_the_wait(w: World):
    url = w.queue("poll-delay")
    w.client.send_message(QueueUrl=url, MessageBody="soon", DelaySeconds=5)
    start = w.clock.now_ms()
    assert w.bodies(url, WaitTimeSeconds=20) == ["soon"]
    assert w.clock.now_ms() - start <= 6000


@scenario
def scenario_a_long_poll_on_an_empty_queue_ends_empty_at_its_deadline(w: World):
    url = w.queue("poll-empty", ReceiveMessageWaitTimeSeconds=3)
    start = w.clock.now_ms()
    assert w.client.receive_message(QueueUrl=url).get("Messages", []) == []  # the queue's 3 s wait
    assert w.clock.now_ms() - start >= 3000


@scenario
def scenario_messages_expire_after_the_retention_period_unseen_and_uncounted(w: World):
    url = w.queue("retention", MessageRetentionPeriod=60)
    w.client.send_message(QueueUrl=url, MessageBody="old")
    w.clock.advance(30)
    w.client.send_message(QueueUrl=url, MessageBody="young")
    w.clock.advance(30)
    assert w.counts(url) == (1, 0, 0)
    assert w.bodies(url) == ["young"]


@scenario
def scenario_purge_removes_every_message_and_is_allowed_once_a_minute(w: World):
    url = w.queue("purge")
    w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(5)])
    w.receive(url, 2)
    w.client.purge_queue(QueueUrl=url)
    assert w.counts(url) == (0, 0, 0)
    with expect_error(w.client, "PurgeQueueInProgress"):
        w.client.purge_queue(QueueUrl=url)
    w.clock.advance(60)
    w.client.purge_queue(QueueUrl=url)


# ---------------------------------------------------------------------- batches


@scenario
def scenario_a_batch_reports_each_entry_and_one_bad_entry_fails_alone(w: World):
    url = w.queue("batch")
    r = w.client.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "ok1", "MessageBody": "one"},
            {"Id": "bad", "MessageBody": "nul \x00"},
            {"Id": "ok2", "MessageBody": "two", "DelaySeconds": 0, "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}},
        ],
    )
    assert [s["Id"] for s in r["Successful"]] == ["ok1", "ok2"]
    assert r["Successful"][0]["MD5OfMessageBody"] == md5("one") and "MD5OfMessageAttributes" in r["Successful"][1]
    [f] = r["Failed"]
    assert (f["Id"], f["Code"], f["SenderFault"]) == ("bad", "InvalidMessageContents", True)
    got = w.receive(url)
    assert sorted(m["Body"] for m in got) == ["one", "two"]
    d = w.client.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "ReceiptHandle": got[0]["ReceiptHandle"]}, {"Id": "b", "ReceiptHandle": "forged"}],
    )
    assert [s["Id"] for s in d["Successful"]] == ["a"] and d["Failed"][0]["Code"] == "ReceiptHandleIsInvalid"
    c = w.client.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "c", "ReceiptHandle": got[1]["ReceiptHandle"], "VisibilityTimeout": 0},
            {"Id": "d", "ReceiptHandle": "x", "VisibilityTimeout": 0},
        ],
    )
    assert [s["Id"] for s in c["Successful"]] == ["c"] and [f["Id"] for f in c["Failed"]] == ["d"]
    assert len(w.receive(url)) == 1


@scenario
def scenario_a_batch_answer_leaves_out_an_empty_list_as_sqs_does(w: World):
    url = w.queue("lists")
    sent = w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "one"}, {"Id": "b", "MessageBody": "two"}])
    assert [s["Id"] for s in sent["Successful"]] == ["a", "b"] and "Failed" not in sent
    refused = w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": "c", "MessageBody": "nul \x00"}])
    assert [f["Id"] for f in refused["Failed"]] == ["c"] and "Successful" not in refused
    got = w.receive(url)
    deleted = w.client.delete_message_batch(QueueUrl=url, Entries=[{"Id": "d", "ReceiptHandle": got[0]["ReceiptHandle"]}])
    assert deleted["Successful"] == [{"Id": "d"}] and "Failed" not in deleted
    forged = w.client.delete_message_batch(QueueUrl=url, Entries=[{"Id": "e", "ReceiptHandle": "forged"}])
    assert [f["Code"] for f in forged["Failed"]] == ["ReceiptHandleIsInvalid"] and "Successful" not in forged
    changed = w.client.change_message_visibility_batch(
        QueueUrl=url, Entries=[{"Id": "f", "ReceiptHandle": got[1]["ReceiptHandle"], "VisibilityTimeout": 0}]
    )
    assert changed["Successful"] == [{"Id": "f"}] and "Failed" not in changed


@scenario
def scenario_malformed_batches_fail_as_a_whole_with_their_own_errors(w: World):
    url = w.queue("badbatch")
    with expect_error(w.client, "EmptyBatchRequest"):
        w.client.send_message_batch(QueueUrl=url, Entries=[])
    with expect_error(w.client, "TooManyEntriesInBatchRequest"):
        w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "x"} for i in range(11)])
    with expect_error(w.client, "BatchEntryIdsNotDistinct"):
        w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": "same", "MessageBody": "x"}] * 2)
    with expect_error(w.client, "InvalidBatchEntryId"):
        w.client.delete_message_batch(QueueUrl=url, Entries=[{"Id": "no spaces", "ReceiptHandle": "x"}])
    with expect_error(w.client, "BatchRequestTooLong"):
        w.client.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "x" * 110_000} for i in range(10)])
    assert w.counts(url) == (0, 0, 0)


# ---------------------------------------------------------------------- dead-letter queues and redrive


def _with_dlq(w: World, base: str, max_receives: int = 2) -> tuple[str, str]:
    dlq = w.queue(base + "-dlq")
    src = w.queue(
        base, VisibilityTimeout=10, RedrivePolicy=json.dumps({"deadLetterTargetArn": w.arn(dlq), "maxReceiveCount": max_receives})
    )
    return src, dlq


@scenario
def scenario_a_message_received_max_receive_count_times_moves_to_the_dead_letter_queue(w: World):
    src, dlq = _with_dlq(w, "poison", 2)
    sent = w.client.send_message(QueueUrl=src, MessageBody="poison")
    for _ in range(2):
        assert w.bodies(src) == ["poison"]
        w.clock.advance(10)
    assert w.receive(src) == []  # the third receive moved it instead
    [m] = w.receive(dlq, AttributeNames=["All"])
    assert m["MessageId"] == sent["MessageId"] and m["Body"] == "poison"
    assert m["Attributes"]["DeadLetterQueueSourceArn"] == w.arn(src)
    assert m["Attributes"]["ApproximateReceiveCount"] == "3"
    assert w.client.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == [src]


@scenario
def scenario_a_redrive_policy_must_name_an_existing_queue_of_the_same_kind(w: World):
    fifo = w.fifo("dl")
    with expect_error(w.client, "InvalidParameterValue"):
        w.queue("std", RedrivePolicy=json.dumps({"deadLetterTargetArn": w.arn(fifo), "maxReceiveCount": 3}))
    with expect_error(w.client, "InvalidParameterValue"):  # SQS's code for any bad RedrivePolicy
        w.queue("std2", RedrivePolicy=json.dumps({"deadLetterTargetArn": w.arn(fifo), "maxReceiveCount": 1001}))


@scenario
def scenario_a_move_task_returns_dead_letters_to_their_source(w: World):
    src, dlq = _with_dlq(w, "redrive", 1)
    w.client.send_message(QueueUrl=src, MessageBody="back")
    w.receive(src)
    w.clock.advance(10)
    assert w.receive(src) == []
    handle = w.client.start_message_move_task(SourceArn=w.arn(dlq))["TaskHandle"]
    assert handle
    deadline = time.monotonic() + 10  # the task runs in a background thread
    while True:
        [task] = w.client.list_message_move_tasks(SourceArn=w.arn(dlq))["Results"]
        if task["Status"] != "RUNNING" or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert task["Status"] == "COMPLETED" and task["ApproximateNumberOfMessagesMoved"] == 1
    assert w.bodies(src) == ["back"]
    with expect_error(w.client, "ResourceNotFoundException"):
        w.client.cancel_message_move_task(TaskHandle=handle)  # finished: no task to cancel
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.cancel_message_move_task(TaskHandle=handle + "x")  # not a handle at all
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.start_message_move_task(SourceArn=w.arn(src))  # not a dead-letter queue


# ---------------------------------------------------------------------- FIFO


@scenario
def scenario_fifo_delivers_a_group_in_order_and_blocks_it_while_a_message_is_in_flight(w: World):
    url = w.fifo("order", VisibilityTimeout=30)
    for i in range(3):
        w.client.send_message(QueueUrl=url, MessageBody=f"a{i}", MessageGroupId="a", MessageDeduplicationId=f"a{i}")
    w.client.send_message(QueueUrl=url, MessageBody="b0", MessageGroupId="b", MessageDeduplicationId="b0")
    [first] = w.receive(url, 1)
    assert first["Body"] == "a0"
    assert w.bodies(url, 10) == ["b0"]  # group a is blocked behind a0
    w.client.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    assert w.bodies(url, 10) == ["a1", "a2"]


@scenario
def scenario_fifo_deduplicates_within_five_minutes(w: World):
    url = w.fifo("dedup", ContentBasedDeduplication="true")
    one = w.client.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    two = w.client.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    assert one["MessageId"] == two["MessageId"] and int(one["SequenceNumber"]) > 0
    w.clock.advance(301)
    three = w.client.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    assert three["MessageId"] != one["MessageId"] and int(three["SequenceNumber"]) > int(one["SequenceNumber"])
    assert w.counts(url)[0] == 2


@scenario
def scenario_a_standard_queue_takes_a_group_id_as_a_fair_queue_label_and_keeps_no_order(w: World):
    url = w.queue("fair")
    w.client.send_message(QueueUrl=url, MessageBody="t1-a", MessageGroupId="tenant-1")
    w.client.send_message(QueueUrl=url, MessageBody="t1-b", MessageGroupId="tenant-1")
    [first] = w.receive(url, 1, MessageSystemAttributeNames=["MessageGroupId"])
    assert first["Attributes"] == {"MessageGroupId": "tenant-1"}
    # No head-of-line blocking: the group's other message comes while the first is in flight.
    [second] = w.receive(url, 10, MessageSystemAttributeNames=["All"])
    assert second["Attributes"]["MessageGroupId"] == "tenant-1" and "SequenceNumber" not in second["Attributes"]
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.send_message(QueueUrl=url, MessageBody="x", MessageDeduplicationId="d")


@scenario
def scenario_fifo_sends_need_a_group_and_refuse_per_message_delay(w: World):
    url = w.fifo("rules")
    with expect_error(w.client, "MissingParameter"):
        w.client.send_message(QueueUrl=url, MessageBody="x", MessageDeduplicationId="d")
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d", DelaySeconds=5)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g")  # no dedup id, no content-based


@scenario
def scenario_a_fifo_handle_expires_with_its_visibility(w: World):
    url = w.fifo("expire", VisibilityTimeout=10)
    w.client.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="1")
    [m] = w.receive(url)
    w.clock.advance(10)
    with expect_error(w.client, "InvalidParameterValue"):
        w.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


@scenario
def scenario_repeating_a_receive_request_attempt_id_returns_the_same_messages(w: World):
    url = w.fifo("attempt", VisibilityTimeout=60)
    for i in range(2):
        w.client.send_message(QueueUrl=url, MessageBody=str(i), MessageGroupId=str(i), MessageDeduplicationId=str(i))
    first = w.receive(url, 10, ReceiveRequestAttemptId="try-1")
    again = w.receive(url, 10, ReceiveRequestAttemptId="try-1")
    assert [m["MessageId"] for m in again] == [m["MessageId"] for m in first] and len(first) == 2
    assert [m["ReceiptHandle"] for m in again] == [m["ReceiptHandle"] for m in first]
    assert w.receive(url, 10, ReceiveRequestAttemptId="try-2") == []
