"""More drivers for the recorded AWS answers in fidelity_aws.json (see fidelity_cases.py).

They register in the same ``DRIVERS`` table; test_fidelity.py imports this module so that they
are found. Recordings without a protocol in their id (the move-task ones, ListQueues paging)
were made over JSON only and run so here.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from botocore.exceptions import ClientError

from .fidelity_cases import DRIVERS, Ctx, answer, driver, oversized_batch

# ---------------------------------------------------------------------------- sizes, SSE, ListQueues


@driver("test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size")
def _batch_at_raised_limit(c: Ctx) -> dict:
    url = c.create()
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaximumMessageSize": "2048"})
    return oversized_batch(c, url, 2048)


@driver("test_sse_kms_and_sqs_are_mutually_exclusive")
def _sse_exclusive(c: Ctx) -> dict:
    url = c.create()
    try:
        c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "true"})
    except ClientError as err:  # the recording keeps the exception's text, as botocore words it without retries
        error = err.response["Error"]
        return {"error": f"An error occurred ({error['Code']}) when calling the SetQueueAttributes operation: {error['Message']}"}
    return {"error": "no error"}


# The recording rewrote AWS's queue URLs to another host and replaced AWS's opaque NextToken with
# one it made from the last URL listed; sqsqlite's answer is rewritten the same way.
_PAGE_PREFIX = "7f7df0f5"
_RECORDED_ORIGIN = "http://sqs.us-east-1.localhost.localstack.cloud:4566"


@driver("test_list_queues_pagination")
def _list_pages(c: Ctx) -> dict:
    urls = [c.sqs.create_queue(QueueName=f"{_PAGE_PREFIX}-test-queue-{i}")["QueueUrl"] for i in range(10)]
    origin = urls[0].rsplit("/", 2)[0]

    def listed(**kw: Any) -> dict:
        got = answer(lambda: c.sqs.list_queues(QueueNamePrefix=_PAGE_PREFIX, **kw))
        got["QueueUrls"] = [u.replace(origin, _RECORDED_ORIGIN, 1) for u in got.get("QueueUrls", [])]
        return got

    out = {"list_all": listed()}
    first = listed(MaxResults=2)
    token = first.get("NextToken")
    if token is not None:
        last = f"http://sqs.<region>.localhost.localstack.cloud:4566/111111111111/{_PAGE_PREFIX}-test-queue-1"
        first["NextToken"] = base64.b64encode(last.encode()).decode()
    out["list_two_max"] = first
    out["list_remaining"] = listed(MaxResults=10, **({"NextToken": token} if token else {}))
    return out


# ---------------------------------------------------------------------------- FIFO throughput and deduplication scope


def _send(c: Ctx, url: str, body: str, group: str, dedup: str | None = None) -> None:
    kw = {"MessageDeduplicationId": dedup} if dedup else {}
    c.sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group, **kw)


def _receive_then_delete(c: Ctx, url: str) -> dict:
    got = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    if got.get("Messages"):
        c.sqs.delete_message(QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])
    return got


_HIGH_THROUGHPUT = {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}


def _one_dedup_id_in_two_groups(c: Ctx) -> tuple[str, dict]:
    """A high-throughput FIFO queue: Test1 in group1 received and deleted, then Test2 in group2
    sent with the same deduplication id (the two recordings' common start)."""
    url = c.create(fifo=True, attributes={"FifoQueue": "True", "ContentBasedDeduplication": "False", **_HIGH_THROUGHPUT})
    _send(c, url, "Test1", "group1", "same-dedup")
    out = {"same-dedup-different-grp-1": _receive_then_delete(c, url)}
    _send(c, url, "Test2", "group2", "same-dedup")
    return url, out


@driver("test_fifo_high_throughput_ordering")
def _high_throughput(c: Ctx) -> dict:
    url, out = _one_dedup_id_in_two_groups(c)
    out["same-dedup-different-grp-2"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    return out


@driver("test_fifo_change_to_regular_throughput_after_creation")
def _to_regular_throughput(c: Ctx) -> dict:
    url, out = _one_dedup_id_in_two_groups(c)
    out["same-dedup-different-grp-2"] = _receive_then_delete(c, url)
    c.sqs.set_queue_attributes(QueueUrl=url, Attributes={"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"})
    out["set-to-regular-throughput"] = answer(lambda: c.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
    _send(c, url, "Test3", "group3", "same-dedup")
    out["same-dedup-different-grp-regular-throughput"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    return out


@driver("test_sqs_fifo_message_group_scope_no_throughput_setting")
def _group_scope_alone(c: Ctx) -> dict:
    url = c.create(fifo=True, attributes={"FifoQueue": "True", "ContentBasedDeduplication": "True", "DeduplicationScope": "messageGroup"})
    _send(c, url, "Test", "group1")
    out = {"same-dedup-different-grp-1": _receive_then_delete(c, url)}
    _send(c, url, "Test", "group2")
    out["same-dedup-different-grp-2"] = answer(lambda: c.sqs.receive_message(QueueUrl=url))
    return out


def _group_visibility(position: int):
    """Three messages of one FIFO group received at once (timeout 1 s); one of them is extended
    to 4 s; 2.5 s on, a receive gets the group's messages before the extended one only."""

    def run(c: Ctx) -> dict:
        url = c.create(fifo=True, attributes={"FifoQueue": "true", "VisibilityTimeout": "1"})
        for body in ("foo", "bar", "baz"):
            _send(c, url, body, "1", body)
        got = answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5))
        handle = got["Messages"][position]["ReceiptHandle"]
        c.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=4)
        c.clock.advance(1 + (4 - 1) / 2)
        return {
            "receive_all_messages": got,
            "some-messages-invisible": answer(lambda: c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5)),
        }

    return run


# The recordings name the parameters two ways (an earlier run of the same test named the same
# positions after what the second receive sees).
for _position, _ids in enumerate((("0-visible", "all-invisible"), ("1-visible", "1-invisible"), ("2-visible", "no-invisible"))):
    for _id in _ids:
        DRIVERS[f"test_fifo_group_visibility_extends_with_change_message_visibility[{_id}]"] = _group_visibility(_position)


# ---------------------------------------------------------------------------- message move tasks


def _into_dead_letter_queue(c: Ctx, n: int, sources: int = 1) -> tuple[list[str], str]:
    """Source queues (maxReceiveCount 1) sharing one dead-letter queue, and n messages of each
    moved into it by receiving every message twice."""
    dlq = c.create(name=c.name("dlq"))
    policy = json.dumps({"deadLetterTargetArn": c.arn(dlq), "maxReceiveCount": 1})
    urls = [c.create(name=c.name("src"), attributes={"RedrivePolicy": policy}) for _ in range(sources)]
    for s, url in enumerate(urls, 1):
        for i in range(n):
            c.sqs.send_message(QueueUrl=url, MessageBody=f"message-{s}-{i}")
        for _ in range(2 * n):
            c.sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
    in_dlq = c.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert in_dlq["ApproximateNumberOfMessages"] == str(n * sources), in_dlq
    return urls, dlq


def _tasks(c: Ctx, source_arn: str) -> dict:
    return answer(lambda: c.sqs.list_message_move_tasks(SourceArn=source_arn))


def _wait_for(c: Ctx, source_arn: str, done) -> dict:
    """The task list once ``done(its newest task)`` holds (ten seconds of real time at most)."""
    deadline = time.monotonic() + 10
    while True:
        got = _tasks(c, source_arn)
        if done(got["Results"][0]) or time.monotonic() > deadline:
            return got
        time.sleep(0.01)


def _moved(n: int):
    return lambda task: task["ApproximateNumberOfMessagesMoved"] >= n


def _ended(task: dict) -> bool:
    return task["Status"] != "RUNNING"


@driver("test_basic_move_task_workflow")
def _move_basic(c: Ctx) -> dict:
    _, dlq = _into_dead_letter_queue(c, 2)
    source, destination = c.arn(dlq), c.arn(c.create())
    out = {"start-message-move-task-response": answer(lambda: c.sqs.start_message_move_task(SourceArn=source, DestinationArn=destination))}
    out["list-message-move-task-response"] = _wait_for(c, source, _ended)
    return out


def _move_back(sources: int):
    def run(c: Ctx) -> dict:
        urls, dlq = _into_dead_letter_queue(c, 2, sources)
        source = c.arn(dlq)
        out: dict[str, Any] = {"source-arn": source}
        if sources == 1:
            out["original-source"] = c.arn(urls[0])
        else:
            out.update({f"original-source-{i}": c.arn(url) for i, url in enumerate(urls, 1)})
        out["start-message-move-task-response"] = answer(lambda: c.sqs.start_message_move_task(SourceArn=source))
        out["list-message-move-task-response"] = _wait_for(c, source, _ended)
        return out

    return run


DRIVERS["test_move_task_workflow_with_default_destination"] = _move_back(1)
DRIVERS["test_move_task_workflow_with_multiple_sources_as_default_destination"] = _move_back(2)


@driver("test_move_task_with_throughput_limit")
def _move_at_a_rate(c: Ctx) -> dict:
    _, dlq = _into_dead_letter_queue(c, 4)
    source, destination = c.arn(dlq), c.arn(c.create())
    start = lambda: c.sqs.start_message_move_task(SourceArn=source, DestinationArn=destination, MaxNumberOfMessagesPerSecond=1)  # noqa: E731
    out = {"start-message-move-task-response": answer(start)}
    _wait_for(c, source, _ended)
    return out


def _held_task(c: Ctx, steps: int) -> tuple[str, str, str, str]:
    """A task moving 10 messages at one a second, held after it moved ``steps`` of them."""
    _, dlq = _into_dead_letter_queue(c, 10)
    destination_url = c.create()
    source, destination = c.arn(dlq), c.arn(destination_url)
    c.clock.hold_moves()  # type: ignore[attr-defined]
    handle = c.sqs.start_message_move_task(SourceArn=source, DestinationArn=destination, MaxNumberOfMessagesPerSecond=1)["TaskHandle"]
    for moved in range(1, steps + 1):
        _wait_for(c, source, _moved(moved))
        if moved < steps:
            c.clock.allow_moves()  # type: ignore[attr-defined]
    return source, destination_url, handle, dlq


@driver("test_move_task_cancel")
def _move_cancelled(c: Ctx) -> dict:
    source, _, handle, _ = _held_task(c, 2)
    try:
        out = {"list-while": _tasks(c, source), "cancel": answer(lambda: c.sqs.cancel_message_move_task(TaskHandle=handle))}
    finally:
        c.clock.free_moves()  # type: ignore[attr-defined]
    out["list-after"] = _wait_for(c, source, _ended)
    return out


@driver("test_move_task_delete_destination_queue_while_running")
def _move_destination_deleted(c: Ctx) -> dict:
    # SQS's DeleteQueue takes effect some time after it answers (the recorded task had moved 3
    # messages when it failed); the destination is deleted here once the task moved 3.
    source, destination_url, _, _ = _held_task(c, 3)
    try:
        c.sqs.delete_queue(QueueUrl=destination_url)
    finally:
        c.clock.free_moves()  # type: ignore[attr-defined]
    return {"list": _wait_for(c, source, _ended)}
