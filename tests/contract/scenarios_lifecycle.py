"""The SQS scenario suite's second half (delays, retention and purge, batches, dead-letter
queues and redrive, FIFO), registered after tests/contract/scenarios.py's own, which imports it."""

from __future__ import annotations

import json
import time

from tests.contract.world import World, expect_error, md5, scenario

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
def scenario_a_message_whose_visibility_ended_comes_back_before_one_sent_after_it(w: World):
    url = w.queue("oldest-first", VisibilityTimeout=5)
    w.client.send_message(QueueUrl=url, MessageBody="first")
    w.clock.advance(1)
    w.client.send_message(QueueUrl=url, MessageBody="second")
    assert w.bodies(url, 1) == ["first"]
    w.clock.advance(5)  # first's visibility ends after second became visible: sent first, it comes first
    assert w.bodies(url, 1) == ["first"]
    assert w.bodies(url, 1) == ["second"]


@scenario
def scenario_a_message_released_at_every_receive_holds_a_newer_one_back_ten_seconds_at_most(w: World):
    url = w.queue("released-again")
    w.client.send_message(QueueUrl=url, MessageBody="poison")
    w.clock.advance(1)
    w.client.send_message(QueueUrl=url, MessageBody="waiting")
    taken = []
    for _ in range(15):  # a receive a second, the poison message released at once each time
        [message] = w.receive(url, 1)
        taken.append(message["Body"])
        if message["Body"] == "poison":
            w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
        w.clock.advance(1)
    # Sent first, the poison message comes first until "waiting" has waited about ten seconds
    # more than the poison message waited since its last return; then "waiting" comes.
    assert taken[:10] == ["poison"] * 10 and 10 <= taken.index("waiting") <= 12


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


@scenario
def scenario_fifo_returns_a_released_message_again_and_hides_its_group_from_the_first_in_flight(w: World):
    url = w.fifo("released", VisibilityTimeout=30)
    for i in range(3):
        w.client.send_message(QueueUrl=url, MessageBody=f"a{i}", MessageGroupId="a", MessageDeduplicationId=f"a{i}")
    a0, a1, _ = w.receive(url, 3)
    w.client.change_message_visibility(QueueUrl=url, ReceiptHandle=a1["ReceiptHandle"], VisibilityTimeout=60)
    w.clock.advance(31)  # a0's and a2's leases end; a1's runs on
    assert w.bodies(url) == ["a0"]  # as SQS: a2 stays hidden behind a1


@scenario
def scenario_purging_a_fifo_queue_clears_its_deduplication_window(w: World):
    url = w.fifo("purged")
    w.client.send_message(QueueUrl=url, MessageBody="message-1", MessageGroupId="g", MessageDeduplicationId="d")
    w.client.purge_queue(QueueUrl=url)
    w.client.send_message(QueueUrl=url, MessageBody="message-2", MessageGroupId="g", MessageDeduplicationId="d")
    assert w.bodies(url) == ["message-2"]


@scenario
def scenario_a_queue_may_be_its_own_dead_letter_queue_and_an_empty_policy_removes_it(w: World):
    url = w.queue("self-dlq")
    w.client.set_queue_attributes(
        QueueUrl=url, Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": w.arn(url), "maxReceiveCount": "42"})}
    )
    assert w.arn(url) in w.attrs(url)["RedrivePolicy"]
    w.client.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": ""})
    assert "RedrivePolicy" not in w.attrs(url)


@scenario
def scenario_message_attribute_names_take_letters_of_any_script_and_refuse_what_sqs_refuses(w: World):
    url = w.queue("names")
    attributes = {"attr.1øßä": {"StringValue": "Valida", "DataType": "String"}}
    w.client.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attributes)
    [m] = w.receive(url, MessageAttributeNames=["All"])
    assert m["MessageAttributes"] == attributes
    for name in ("aWs.x", "AMAZON.x", ".x", "x.", "Invalid-§-attr", "Invalid-?-attr"):
        with expect_error(w.client, "InvalidParameterValue"):
            w.client.send_message(QueueUrl=url, MessageBody="x", MessageAttributes={name: {"StringValue": "v", "DataType": "String"}})
