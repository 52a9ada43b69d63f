"""Calls as an application writes them, for tests/unit/test_typed_methods.py to type-check with
mypy: each line marked ``# mypy: CODE`` must be reported with that error code, every other line
passes. Never run; no test module (pytest collects only test_*.py)."""

from __future__ import annotations

from sqsqlite.aio import client as aio_client
from sqsqlite.client import client


def with_the_client() -> None:
    sqs = client(":memory:")
    url: str = sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hello", DelaySeconds=5)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "a"}])
    for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", []):
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    sqs.sned_message(QueueUrl=url, MessageBody="hello")  # mypy: attr-defined
    sqs.send_message(QueueUrl=url, MessageBdy="hello")  # mypy: call-arg
    sqs.send_message(QueueUrl=url)  # mypy: call-arg
    sqs.send_message(QueueUrl=url, MessageBody="hello", DelaySeconds="5")  # mypy: arg-type
    sqs.receive_message(QueueUrl=url, AttributeNames="All")  # mypy: arg-type


async def with_the_asyncio_client() -> None:
    async with aio_client(":memory:") as sqs:
        url: str = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
        await sqs.send_message(QueueUrl=url, MessageBody="hello")
        received = await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)
        await sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]} for m in received["Messages"]]
        )
        await sqs.sned_message(QueueUrl=url, MessageBody="hello")  # mypy: attr-defined
        await sqs.receive_message(QueueUrl=url, WaitTimeSecond=20)  # mypy: call-arg
        sqs.send_message(QueueUrl=url, MessageBody="not awaited")["MessageId"]  # mypy: index
