"""Behaviours AWS's validated tests recorded, each over both wire protocols (JSON 1.0 through
boto3, the query protocol through a query-model botocore client) against ``sqsqlite serve``."""

from __future__ import annotations

import json

import pytest

from sqsqlite.clock import ManualClock
from sqsqlite.server import BackgroundServer

from .server_helpers import boto3_client, query_protocol_client


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    clock = ManualClock()
    with BackgroundServer(str(tmp_path_factory.mktemp("aws") / "q.db"), clock=clock) as server:
        server.clock = clock
        yield server


@pytest.fixture(params=["json", "query"])
def sqs(served, request):
    return boto3_client(served.url) if request.param == "json" else query_protocol_client(served.url)


@pytest.fixture
def name(request):
    """A queue name of the test's own, per protocol."""
    return "q-" + "".join(c if c.isalnum() else "-" for c in request.node.name)[-60:].strip("-")


def test_a_message_attribute_name_with_letters_of_any_script_is_sent_and_received(sqs, name):
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    attributes = {"attr.1øßä": {"StringValue": "Valida", "DataType": "String"}}
    sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attributes)  # the client checks the MD5
    [message] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert message["MessageAttributes"] == attributes


@pytest.mark.parametrize(
    "attribute",
    [
        {"attr1": {"StringValue": f"Invalid-{chr(8)},{chr(11)}", "DataType": "String"}},
        *({f"{prefix}-Invalid-attr": {"StringValue": "Valid", "DataType": "String"}} for prefix in ("aWs.", "AMAZON.", ".")),
        *({f"Invalid-{c}-attr": {"StringValue": "Valid", "DataType": "String"}} for c in ("!", '"', "§", "(", "?")),
        {"L" * 257: {"StringValue": "Valid", "DataType": "String"}},
        {"Attribute_name": {"StringValue": "Valid", "DataType": "Invalid"}},
        {"Invalid.": {"StringValue": "Valid", "DataType": "String"}},
    ],
)
def test_a_message_attribute_sqs_refuses_is_refused_as_invalid(sqs, name, attribute):
    url = sqs.create_queue(QueueName=name[:70])["QueueUrl"]
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attribute)
    assert err.value.response["Error"]["Code"] in ("InvalidParameterValue", "InvalidParameterValueException")


def test_an_empty_redrive_policy_removes_it_and_a_queue_may_be_its_own_dead_letter_queue(sqs, name):
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": ""})
    assert "RedrivePolicy" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "42"})
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": policy})
    assert arn in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]["RedrivePolicy"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": ""})
    assert "RedrivePolicy" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]


def test_purging_a_fifo_queue_clears_its_deduplication_window(sqs, name):
    url = sqs.create_queue(QueueName=name[:70] + ".fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="message-1", MessageGroupId="g", MessageDeduplicationId="d")
    sqs.purge_queue(QueueUrl=url)
    sqs.send_message(QueueUrl=url, MessageBody="message-2", MessageGroupId="g", MessageDeduplicationId="d")
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert message["Body"] == "message-2"


def _get_json(url: str, params: dict) -> tuple[int, str, bytes]:
    import urllib.error
    import urllib.parse
    import urllib.request

    request = urllib.request.Request(f"{url}?{urllib.parse.urlencode(params)}", headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


@pytest.mark.parametrize("body", ['{"foo": "ba\rr", "foo2": "ba&quot;r&quot;"}', json.dumps('{"foo": "ba\rr"}')])
def test_a_query_get_asking_for_json_is_answered_in_json_in_sqs_shape(served, name, body):
    sqs = boto3_client(served.url)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=body)
    status, kind, raw = _get_json(
        served.url, {"Action": "ReceiveMessage", "QueueUrl": url, "Version": "2012-11-05", "VisibilityTimeout": "0"}
    )
    assert (status, kind) == (200, "application/json")
    assert json.loads(raw)["ReceiveMessageResponse"]["ReceiveMessageResult"]["messages"][0]["Body"] == body
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == body

    status, _, raw = _get_json(served.url, {"Action": "ListQueues", "Version": "2012-11-05"})
    assert status == 200 and url in json.loads(raw)["ListQueuesResponse"]["ListQueuesResult"]["queueUrls"]
    status, _, raw = _get_json(url, {"Action": "GetQueueAttributes", "AttributeName.1": "All"})
    attributes = json.loads(raw)["GetQueueAttributesResponse"]["GetQueueAttributesResult"]["Attributes"]
    assert {"Name": "QueueArn", "Value": f"arn:aws:sqs:us-east-1:000000000000:{name}"} in attributes


def test_a_query_error_asking_for_json_is_json_and_a_queue_url_asked_nothing_is_still_xml(served, name):
    url = boto3_client(served.url).create_queue(QueueName=name)["QueueUrl"]
    status, kind, raw = _get_json(url, {"Action": "ListQueues"})
    assert (status, kind) == (400, "application/json")
    error = json.loads(raw)["Error"]
    assert (error["Code"], error["Message"]) == ("InvalidAction", "The action ListQueues is not valid for this endpoint.")
    status, _, raw = _get_json(url, {})
    assert status == 404 and b"<UnknownOperationException" in raw


def test_a_sequence_number_is_twenty_digits_and_increases_per_queue(sqs, name):
    url = sqs.create_queue(QueueName=name[:70] + ".fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    numbers = [
        sqs.send_message(QueueUrl=url, MessageBody=f"message-{i}", MessageGroupId="group", MessageDeduplicationId=f"m{i}")["SequenceNumber"]
        for i in range(3)
    ]
    assert all(len(n) == 20 and n.isdigit() for n in numbers)
    assert int(numbers[0]) < int(numbers[1]) < int(numbers[2])
    standard = sqs.create_queue(QueueName=name[:70])["QueueUrl"]
    assert "SequenceNumber" not in sqs.send_message(QueueUrl=standard, MessageBody="x")
