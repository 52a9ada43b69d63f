"""Validate once, at the edge: a request is checked where it enters (the action layer, a
BufferedQueue, the Queue API) and what lies below takes the checked value as it is."""

from __future__ import annotations

import hashlib

import pytest

from sqsqlite import Actions
from sqsqlite import batches as B
from sqsqlite.core import sending
from sqsqlite.errors import InvalidAttributeValue, InvalidParameterValue, MissingParameter, SQSError


@pytest.fixture
def checks(monkeypatch):
    """How often a batch's entry Ids are checked (B._ids_at_once, which every check of a batch
    of plain dicts runs, B.plain_batch's included)."""
    seen = []
    real = B._ids_at_once

    def counted(entries, id_key):
        seen.append(len(entries))
        return real(entries, id_key)

    monkeypatch.setattr(B, "_ids_at_once", counted)
    return seen


def test_a_send_batch_through_the_action_layer_checks_its_entry_ids_once(db, queue, checks):
    entries = [{"Id": str(i), "MessageBody": f"m{i}"} for i in range(10)]
    result = Actions(db).call("SendMessageBatch", {"QueueUrl": queue.url, "Entries": entries})
    assert len(result["Successful"]) == 10 and checks == [10]


@pytest.mark.parametrize("action", ["delete_message_batch", "change_message_visibility_batch"])
def test_a_buffered_queues_batch_is_checked_once_on_its_way_to_the_queue(queue, checks, action):
    queue.send_message("x")
    [m] = queue.receive_message()
    entry = {"Id": "a", "ReceiptHandle": m.receipt_handle}
    if action == "change_message_visibility_batch":
        entry["VisibilityTimeout"] = 5
    with queue.buffered() as b:
        assert getattr(b, action)([entry]).failed == []
    assert checks == [1]


def test_plain_entries_sent_through_the_action_layer_take_the_one_insert_path(db, queue, monkeypatch):
    # Entries of an Id and a body alone are inserted by one statement; the action layer used to
    # add a MessageAttributes key to every entry, which sent each batch the slow way.
    taken = []
    real = sending._insert_plain
    monkeypatch.setattr(sending, "_insert_plain", lambda *a: taken.append(real(*a)) or taken[-1])
    Actions(db).call(
        "SendMessageBatch", {"QueueUrl": queue.url, "Entries": [{"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "b"}]}
    )
    assert len(taken) == 1 and taken[0] is not None


def test_an_entry_with_attributes_still_gets_them_decoded_and_digested(db, queue):
    entries = [
        {"Id": "1", "MessageBody": "a", "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "AAE="}}},
        {"Id": "2", "MessageBody": "b", "MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1"}}},
    ]
    result = Actions(db).call("SendMessageBatch", {"QueueUrl": queue.url, "Entries": entries})
    by_id = {s["Id"]: s for s in result["Successful"]}
    assert "MD5OfMessageAttributes" in by_id["1"] and "MD5OfMessageSystemAttributes" in by_id["2"]
    [m, _] = queue.receive_message(max_number_of_messages=10, message_attribute_names=["All"])
    assert m.message_attributes["b"].binary_value == b"\x00\x01"


def test_undecodable_base64_anywhere_in_a_batch_refuses_the_whole_request_whatever_the_other_entries_hold(db, queue):
    # One entry short of a body and one with an extra member: together as many members as two
    # plain entries, which must not pass for a batch of bodies alone.
    entries = [
        {"Id": "a"},
        {"Id": "b", "MessageBody": "x", "MessageAttributes": {"k": {"DataType": "Binary", "BinaryValue": "not base64!"}}},
    ]
    with pytest.raises(InvalidParameterValue, match="not valid base64"):
        Actions(db).call("SendMessageBatch", {"QueueUrl": queue.url, "Entries": entries})
    assert queue.peek() == []


@pytest.mark.parametrize("body", ["plain", "é" * 300, "x" * 1023, "x" * 1024, "y" * 70_000])
def test_a_send_of_a_body_alone_answers_as_a_send_with_options_does(db, queue, body):
    # A body alone takes the action layer's short path; DelaySeconds=0 the general one.
    actions = Actions(db)
    alone = actions.call("SendMessage", {"QueueUrl": queue.url, "MessageBody": body})
    general = actions.call("SendMessage", {"QueueUrl": queue.url, "MessageBody": body, "DelaySeconds": 0})
    assert alone.keys() == general.keys() == {"MessageId", "MD5OfMessageBody"}
    assert alone["MD5OfMessageBody"] == general["MD5OfMessageBody"] == hashlib.md5(body.encode()).hexdigest()
    received = actions.call("ReceiveMessage", {"QueueUrl": queue.url, "MaxNumberOfMessages": 10})["Messages"]
    assert {m["MessageId"] for m in received} == {alone["MessageId"], general["MessageId"]}
    assert {m["MD5OfBody"] for m in received} == {alone["MD5OfMessageBody"]}


@pytest.mark.parametrize(("body", "error"), [(None, MissingParameter), ("", MissingParameter), (5, InvalidParameterValue)])
def test_a_body_alone_that_is_missing_or_not_text_is_refused_with_the_general_paths_error(db, queue, body, error):
    actions = Actions(db)
    request = {"QueueUrl": queue.url, "MessageBody": body}
    with pytest.raises(error) as alone:
        actions.call("SendMessage", request)
    with pytest.raises(error) as general:
        actions.call("SendMessage", {**request, "DelaySeconds": 0})
    assert (alone.value.code, alone.value.message, alone.value.hint) == (general.value.code, general.value.message, general.value.hint)
    assert queue.peek() == []


@pytest.mark.parametrize("body", ["fine", "", 5])
def test_a_body_alone_to_a_missing_queue_meets_the_same_first_error_as_the_general_path(db, body):
    actions = Actions(db)
    request = {"QueueUrl": "http://localhost:9324/000000000000/nope", "MessageBody": body}
    with pytest.raises(SQSError) as alone:
        actions.call("SendMessage", request)
    with pytest.raises(SQSError) as general:
        actions.call("SendMessage", {**request, "DelaySeconds": 0})
    assert (alone.value.code, alone.value.message, alone.value.hint) == (general.value.code, general.value.message, general.value.hint)


def test_a_receive_of_queue_and_count_alone_answers_as_one_with_options_does(db, queue, clock):
    actions = Actions(db)
    for i in range(4):
        queue.send_message(f"m{i}")
    alone = actions.call("ReceiveMessage", {"QueueUrl": queue.url, "MaxNumberOfMessages": 2})["Messages"]
    general = actions.call("ReceiveMessage", {"QueueUrl": queue.url, "MaxNumberOfMessages": 2, "VisibilityTimeout": 30})["Messages"]
    assert [m.keys() for m in alone] == [m.keys() for m in general]
    assert len({m["MessageId"] for m in alone + general}) == 4
    assert actions.call("ReceiveMessage", {"QueueUrl": queue.url}) == {}  # all four in flight


@pytest.mark.parametrize("count", [True, "3", 3.0, None, 0, 11])
def test_a_receive_of_queue_and_count_alone_refuses_a_count_as_one_with_options_does(db, queue, count):
    actions = Actions(db)
    queue.send_message("m")

    def outcome(request):
        try:
            actions.call("ReceiveMessage", request)
        except SQSError as exc:
            return exc.code, exc.message, exc.hint
        return "answered"

    request = {"QueueUrl": queue.url, "MaxNumberOfMessages": count}
    assert outcome(request) == outcome({**request, "VisibilityTimeout": 30})


def test_a_batch_body_whose_length_cannot_be_taken_is_refused_as_not_text(db, queue):
    result = Actions(db).call("SendMessageBatch", {"QueueUrl": queue.url, "Entries": [{"Id": "1", "MessageBody": range(10**20)}]})
    assert [(f["Id"], f["Code"]) for f in result["Failed"]] == [("1", "InvalidParameterValue")]
    assert queue.peek() == []


def test_a_plain_delete_batch_given_to_a_send_is_taken_as_entries_without_bodies(queue):
    batch = B.batch_entry_ids([{"Id": "a", "ReceiptHandle": "h"}], "DeleteMessageBatch")
    result = queue.send_message_batch(batch)
    assert result.successful == [] and [(f.id, f.code) for f in result.failed] == [("a", "MissingParameter")]


def test_a_json_null_count_or_limit_reads_as_absent_as_every_other_member_does(db, queue):
    actions = Actions(db)
    queue.send_message("m")
    assert [m["Body"] for m in actions.call("ReceiveMessage", {"QueueUrl": queue.url, "MaxNumberOfMessages": None})["Messages"]] == ["m"]
    assert actions.call("ListMessageMoveTasks", {"SourceArn": queue.arn, "MaxResults": None}) == {"Results": []}


@pytest.mark.parametrize("value", ["zz", 5, 1.5, None])
def test_a_message_attribute_given_as_no_structure_is_refused_as_sqs_refuses_one_without_a_type(db, queue, value):
    # The Python API's shorthand (a bare str or number) is not SQS's: on the wire, the CLI and
    # the boto3-shaped client, an attribute is a structure with its DataType.
    actions, attributes = Actions(db), {"a": value}
    with pytest.raises(InvalidParameterValue, match="must contain a non-empty message attribute type"):
        actions.call("SendMessage", {"QueueUrl": queue.url, "MessageBody": "x", "MessageAttributes": attributes})
    entries = [{"Id": "1", "MessageBody": "x", "MessageAttributes": attributes}]
    [failed] = actions.call("SendMessageBatch", {"QueueUrl": queue.url, "Entries": entries})["Failed"]
    assert failed["Code"] == "InvalidParameterValue" and "non-empty message attribute type" in failed["Message"]
    assert queue.peek("all") == []


@pytest.mark.parametrize("data_type", ["Number", "Binary", "String.x", None])
def test_an_aws_trace_header_of_any_type_but_string_is_refused_and_nothing_is_sent(db, queue, data_type):
    header = {"DataType": data_type, "StringValue": "Root=1-5759e988-bd862e3fe1be46a994272793"}
    system = {"AWSTraceHeader": {k: v for k, v in header.items() if v is not None}}  # None: no DataType at all
    with pytest.raises(InvalidParameterValue, match="non-empty value of type 'String'"):
        Actions(db).call("SendMessage", {"QueueUrl": queue.url, "MessageBody": "x", "MessageSystemAttributes": system})
    assert queue.peek("all") == []


def test_a_policy_that_is_no_json_object_is_refused_in_sqs_words_with_sqsqlites_hint(queue):
    with pytest.raises(InvalidAttributeValue) as err:
        queue.set_queue_attributes({"Policy": "notjson"})
    assert err.value.message == "Invalid value for the parameter Policy."
    assert "must be a JSON object" in err.value.hint
