"""One asyncio scenario, run through aiobotocore against ``sqsqlite serve`` and through
``sqsqlite.aio`` in process: the answers agree member by member (ids, receipt handles,
timestamps and request ids as placeholders), errors included."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError

import sqsqlite.aio
from sqsqlite.server import BackgroundServer

aiobotocore_session = pytest.importorskip("aiobotocore.session")
pytestmark = pytest.mark.slow  # a real server in a thread

_IDS = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_PLACEHOLDERS = {
    "MessageId": "<id>",
    "ReceiptHandle": "<handle>",
    "SequenceNumber": "<sequence>",
    "SentTimestamp": "<ms>",
    "ApproximateFirstReceiveTimestamp": "<ms>",
    "CreatedTimestamp": "<s>",
    "LastModifiedTimestamp": "<s>",
}


def normalised(value: Any, endpoint: str) -> Any:
    """value with what differs per run or per endpoint replaced by placeholders."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "ResponseMetadata":
                # The server's answer carries its HTTP headers; both name the request id SQS's way.
                out[key] = {
                    "HTTPStatusCode": item["HTTPStatusCode"],
                    "RequestId": "<id>" if item["RequestId"] else "",
                    "x-amzn-requestid": item["HTTPHeaders"]["x-amzn-requestid"] == item["RequestId"],
                    "RetryAttempts": item["RetryAttempts"],
                }
            elif key in _PLACEHOLDERS:
                out[key] = _PLACEHOLDERS[key]
            else:
                out[key] = normalised(item, endpoint)
        return out
    if isinstance(value, list):
        return [normalised(item, endpoint) for item in value]
    if isinstance(value, str):
        return _IDS.sub("<id>", value.replace(endpoint, "<endpoint>"))
    return value


async def scenario(sqs) -> list[tuple[str, Any]]:
    """Every answer (or error) in order, as (step, answer)."""
    steps: list[tuple[str, Any]] = []

    async def step(name: str, call) -> Any:
        try:
            answer = await call
        except ParamValidationError as err:
            steps.append((name, ("ParamValidationError", str(err))))
            return None
        except ClientError as err:
            steps.append((name, (type(err).__name__, err.response["Error"], err.response["ResponseMetadata"]["HTTPStatusCode"])))
            return None
        steps.append((name, answer))
        return answer

    url = (await step("create", sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "30"}, tags={"team": "a"})))[
        "QueueUrl"
    ]
    attributes = {"priority": {"DataType": "Number", "StringValue": "3"}, "raw": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}}
    await step("send", sqs.send_message(QueueUrl=url, MessageBody="one", MessageAttributes=attributes))
    await step(
        "send batch",
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": "a", "MessageBody": "two", "MessageAttributes": {"kind": {"DataType": "String", "StringValue": "x"}}},
                {"Id": "b", "MessageBody": "three", "DelaySeconds": 0},
                {"Id": "bad", "MessageBody": "four", "DelaySeconds": 901},
            ],
        ),
    )
    got = await step(
        "receive",
        sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
        ),
    )
    messages = sorted(got["Messages"], key=lambda m: m["Body"])
    await step(
        "change visibility", sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0)
    )
    await step("delete", sqs.delete_message(QueueUrl=url, ReceiptHandle=messages[1]["ReceiptHandle"]))
    await step(
        "delete batch",
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": "x", "ReceiptHandle": messages[2]["ReceiptHandle"]}, {"Id": "y", "ReceiptHandle": "not-a-handle"}]
        ),
    )
    again = await step("receive again", sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1, AttributeNames=["ApproximateReceiveCount"]))
    await step("delete last", sqs.delete_message(QueueUrl=url, ReceiptHandle=again["Messages"][0]["ReceiptHandle"]))
    await step("empty long poll", sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1))

    fifo = (await step("create fifo", sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"})))["QueueUrl"]
    for body in ("first", "first", "second"):
        await step(f"fifo send {body}", sqs.send_message(QueueUrl=fifo, MessageBody=body, MessageGroupId="g", MessageDeduplicationId=body))
    await step("fifo receive", sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]))
    await step("fifo attributes", sqs.get_queue_attributes(QueueUrl=fifo, AttributeNames=["All"]))

    await step("tag", sqs.tag_queue(QueueUrl=url, Tags={"env": "test"}))
    await step("untag", sqs.untag_queue(QueueUrl=url, TagKeys=["team"]))
    await step("tags", sqs.list_queue_tags(QueueUrl=url))
    for name in ("p1", "p2", "p3"):
        await step(f"create {name}", sqs.create_queue(QueueName=name))
    pages = [page async for page in sqs.get_paginator("list_queues").paginate(PaginationConfig={"PageSize": 2})]
    steps.append(("pages", [sorted(p.get("QueueUrls", [])) for p in pages]))
    full = await sqs.get_paginator("list_queues").paginate(QueueNamePrefix="p", PaginationConfig={"MaxItems": 2}).build_full_result()
    steps.append(("full result", full))

    await step("missing queue", sqs.get_queue_url(QueueName="missing"))
    await step("send to a missing queue", sqs.send_message(QueueUrl=url + "-gone", MessageBody="x"))
    await step("bad visibility", sqs.change_message_visibility(QueueUrl=url, ReceiptHandle="nope", VisibilityTimeout=5))
    await step("bad attribute", sqs.create_queue(QueueName="bad", Attributes={"VisibilityTimeout": "99999"}))
    await step("bad parameter type", sqs.send_message(QueueUrl=url, MessageBody=5))
    await step("unknown parameter", sqs.list_queues(Prefix="p"))
    return steps


async def through_aiobotocore(url: str) -> list:
    session = aiobotocore_session.get_session()
    async with session.create_client(
        "sqs", region_name="us-east-1", endpoint_url=url, aws_access_key_id="testing", aws_secret_access_key="testing"
    ) as sqs:
        return await scenario(sqs)


async def through_sqsqlite_aio(path: str) -> list:
    async with sqsqlite.aio.client(path, endpoint="http://sqsqlite.test") as sqs:
        return await scenario(sqs)


def test_aiobotocore_against_the_endpoint_and_sqsqlite_aio_in_process_answer_alike(tmp_path):
    with BackgroundServer(str(tmp_path / "served.db")) as server:
        served = asyncio.run(through_aiobotocore(server.url))
    local = asyncio.run(through_sqsqlite_aio(str(tmp_path / "local.db")))
    assert [name for name, _ in local] == [name for name, _ in served]
    for (name, theirs), (_, ours) in zip(served, local):
        assert normalised(ours, "http://sqsqlite.test") == normalised(theirs, server.url), name
