"""The SQS scenario suite, written once against a boto3-shaped client.

Every entry point runs it (tests/contract/test_scenarios.py): the in-process ``sqsqlite.client``, a real
boto3 client on ``sqsqlite serve``, and any other adapter that offers boto3's methods, keyword
arguments, response dicts and ``client.exceptions``. Each scenario gets a ``World``
(tests/contract/world.py): the client, the ManualClock behind it (time moves only when a
scenario says so) and a fresh name prefix.

A scenario is a function ``scenario_<what it shows>(w)``; ``ALL`` lists them in file order:
this file's (queues, sending and receiving, visibility, receipt handles), then
tests/contract/scenarios_lifecycle.py's (delays, retention, purge, batches, dead-letter queues,
FIFO), which the end of this file imports.
"""

from __future__ import annotations

import base64
import hashlib
import json

from tests.contract.world import ALL, Refusal, World, expect_error, md5, scenario

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
def scenario_more_than_50_tags_are_refused_in_sqs_words_and_change_nothing(w: World):
    name = w.name("many-tags")
    fifty_one = {f"k{i}": "v" for i in range(51)}
    with expect_error(w.client, "InvalidParameterValue") as refusal:
        w.client.create_queue(QueueName=name, tags=fifty_one)
    assert refusal.message == f"Too many tags added for queue {name}."
    assert w.client.list_queues(QueueNamePrefix=name).get("QueueUrls", []) == []
    url = w.client.create_queue(QueueName=name, tags={f"k{i}": "v" for i in range(40)})["QueueUrl"]
    with expect_error(w.client, "InvalidParameterValue") as refusal:  # 40 kept and 11 more: 51 in all
        w.client.tag_queue(QueueUrl=url, Tags={f"new{i}": "v" for i in range(11)})
    assert refusal.message == f"Too many tags added for queue {name}."
    assert refusal.hint in (None, "Too many tags: 51; a queue can have at most 50.")
    assert len(w.client.list_queue_tags(QueueUrl=url)["Tags"]) == 40


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


# The suite's second half, registered in ALL after this file's scenarios.
from tests.contract import scenarios_lifecycle  # noqa: E402, F401

__all__ = ["ALL", "Refusal", "World", "expect_error", "md5", "scenario"]
