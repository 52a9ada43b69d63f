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
