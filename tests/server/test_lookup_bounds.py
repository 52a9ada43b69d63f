"""LocalStack's message look-up (/_aws/sqs/messages) under hostile or heavy use: its answer is
bounded in bytes and says what it left out, a body it can't read is a 400 in SQS's shape (never
the HTTP server's bare 500), and a method it doesn't serve is a 405 naming those it does."""

import json
import logging
import xml.etree.ElementTree as ET

import pytest

from sqsqlite import defaults as D
from sqsqlite.errors import InvalidParameterValue
from sqsqlite.server.emulator import LOOKUP_LEFT_OUT_HEADER
from tests.server.server_helpers import boto3_client, http_request, manual_clock_server

NS = {"s": "http://queue.amazonaws.com/doc/2012-11-05/"}
JSON = {"Content-Type": "application/x-amz-json-1.0"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
LOOKUP = "/_aws/sqs/messages"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with manual_clock_server(tmp_path_factory.mktemp("bounds")) as s:
        yield s


@pytest.fixture(scope="module")
def big(server):
    """A queue of ten 3,000-byte messages, bodies 0 to 9 in send order."""
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="big")["QueueUrl"]
    for i in range(10):
        sqs.send_message(QueueUrl=url, MessageBody=str(i) * 3000)
    return sqs, url


# ---------------------------------------------------------------- the byte cap


def test_a_look_up_past_its_byte_cap_answers_the_first_messages_that_fit_and_counts_the_rest(server, big, monkeypatch):
    _, url = big
    monkeypatch.setattr(D, "LOOKUP_BYTES", 10_000)  # three bodies of 3,000 bytes fit, not four
    status, headers, body = http_request(server.url, f"{LOOKUP}?QueueUrl={url}", JSON)
    assert status == 200 and headers[LOOKUP_LEFT_OUT_HEADER] == "7"
    answer = json.loads(body)
    assert [m["Body"][0] for m in answer["Messages"]] == ["0", "1", "2"]
    assert answer["MessagesLeftOut"] == 7


def test_a_cut_xml_look_up_says_so_in_its_result_and_stays_a_receive_message_answer(server, big, monkeypatch):
    _, url = big
    monkeypatch.setattr(D, "LOOKUP_BYTES", 10_000)
    status, headers, body = http_request(server.url, f"{LOOKUP}?QueueUrl={url}")
    assert status == 200 and headers[LOOKUP_LEFT_OUT_HEADER] == "7"
    result = ET.fromstring(body).find("s:ReceiveMessageResult", NS)
    assert len(result.findall("s:Message", NS)) == 3
    assert result.findtext("s:MessagesLeftOut", namespaces=NS) == "7"


def test_an_sdk_reads_a_cut_answer_as_the_receive_message_answer_of_the_messages_that_fit(server, big, monkeypatch):
    _, url = big
    monkeypatch.setattr(D, "LOOKUP_BYTES", 7_000)
    look_up = boto3_client(server.url + LOOKUP)
    assert [m["Body"][0] for m in look_up.receive_message(QueueUrl=url)["Messages"]] == ["0", "1"]


def test_a_look_up_within_its_cap_answers_every_message_and_no_count(server, big):
    _, url = big
    status, headers, body = http_request(server.url, f"{LOOKUP}?QueueUrl={url}", JSON)
    answer = json.loads(body)
    assert status == 200 and LOOKUP_LEFT_OUT_HEADER not in headers and "MessagesLeftOut" not in answer
    assert len(answer["Messages"]) == 10


def test_the_byte_cap_counts_message_attributes_as_sqs_counts_a_messages_size(server, monkeypatch):
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="attributed")["QueueUrl"]
    for _ in range(3):
        sqs.send_message(QueueUrl=url, MessageBody="b", MessageAttributes={"a": {"DataType": "String", "StringValue": "v" * 4000}})
    monkeypatch.setattr(D, "LOOKUP_BYTES", 9_000)  # bodies of one byte, but 4,000 bytes of attributes each
    status, headers, _ = http_request(server.url, f"{LOOKUP}?QueueUrl={url}", JSON)
    assert status == 200 and headers[LOOKUP_LEFT_OUT_HEADER] == "1"


def test_the_byte_cap_counts_bodies_in_utf8_bytes_not_characters(server, monkeypatch):
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="wide")["QueueUrl"]
    for _ in range(2):
        sqs.send_message(QueueUrl=url, MessageBody="é" * 3000)  # 6,000 bytes each
    monkeypatch.setattr(D, "LOOKUP_BYTES", 9_000)  # both fit in characters, one in bytes
    status, headers, body = http_request(server.url, f"{LOOKUP}?QueueUrl={url}", JSON)
    assert status == 200 and headers[LOOKUP_LEFT_OUT_HEADER] == "1" and len(json.loads(body)["Messages"]) == 1


def test_a_bounded_peek_reads_the_messages_that_fit_in_order_and_counts_those_left_out(db):
    queue = db.create_queue("paged")
    for i in range(7):
        queue.send_message(str(i) * 10)
    taken, left = queue.peek_within({"visible"}, 100, 35, page=2)  # three of ten characters fit
    assert [m.body[0] for m in taken] == ["0", "1", "2"] and left == 4
    taken, left = queue.peek_within({"visible"}, 5, 1000, page=2)  # the message limit is no cut
    assert len(taken) == 5 and left == 0
    assert queue.peek_within({"visible"}, 100, 0) == ([], 7)


def test_a_bounded_peek_spends_its_characters_only_on_the_states_asked_for(db, clock):
    queue = db.create_queue("mixed")
    queue.send_message("h" * 50)
    queue.receive_message(visibility_timeout=60)  # in flight: not asked for below
    queue.send_message("v" * 10)
    queue.send_message("d" * 50, delay_seconds=60)
    queue.send_message("w" * 10)
    taken, left = queue.peek_within({"visible"}, 100, 20, page=1)
    assert [m.body[0] for m in taken] == ["v", "w"] and left == 0
    taken, left = queue.peek_within({"visible", "delayed"}, 100, 20, page=3)
    assert sorted(m.body[0] for m in taken) == ["v", "w"] and left == 1


def test_a_bounded_peek_refuses_a_state_it_does_not_know(db):
    queue = db.create_queue("states")
    with pytest.raises(InvalidParameterValue, match="Invalid states"):
        queue.peek_within({"visible", "all"}, 10, 100)


# ---------------------------------------------------------------- bodies it can't read


def no_tracebacks(caplog):
    return [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()] == []


def test_a_json_body_nested_too_deep_is_a_400_serialization_exception_not_a_500(server, caplog):
    caplog.set_level(logging.INFO)
    body = b'{"QueueUrl": "q", "ShowInvisible": ' + b"[" * 60_000  # under the look-up's 64 KiB
    status, headers, answer = http_request(server.url, LOOKUP, JSON, "POST", body)
    assert status == 400 and headers["content-type"] == "application/x-amz-json-1.0"
    assert json.loads(answer)["__type"].endswith("#SerializationException")
    status, _, answer = http_request(server.url, LOOKUP, JSON, "POST", b"[" * 60_000)
    assert status == 400 and json.loads(answer)["__type"].endswith("#SerializationException")
    assert no_tracebacks(caplog)


def test_a_flag_given_as_a_deep_json_value_is_a_400_not_a_500(server, big, caplog):
    _, url = big
    deep = "[" * 900 + "]" * 900  # parses, but is no flag
    status, _, answer = http_request(server.url, LOOKUP, JSON, "POST", f'{{"QueueUrl": "{url}", "ShowDelayed": {deep}}}'.encode())
    assert status == 400 and json.loads(answer)["__type"].endswith("#SerializationException")
    status, _, answer = http_request(server.url, LOOKUP, JSON, "POST", f'{{"QueueUrl": "{url}", "ShowDelayed": ["true"]}}'.encode())
    assert status == 400 and json.loads(answer)["__type"] == "com.amazonaws.sqs#InvalidParameterValueException"
    assert no_tracebacks(caplog)


def test_a_flag_given_as_a_json_boolean_is_read_as_one(server):
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="flagged")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=600)
    status, _, answer = http_request(server.url, LOOKUP, JSON, "POST", json.dumps({"QueueUrl": url, "ShowDelayed": True}).encode())
    assert status == 200 and [m["Body"] for m in json.loads(answer)["Messages"]] == ["later"]


def test_a_json_body_that_is_not_json_is_a_400_in_sqss_shape(server):
    status, headers, answer = http_request(server.url, LOOKUP, JSON, "POST", b'{"QueueUrl": ')
    assert status == 400 and headers["x-amzn-query-error"].startswith("SerializationException")
    assert json.loads(answer)["__type"].endswith("#SerializationException")


def test_a_form_body_that_is_not_utf8_is_a_400_in_sqss_xml_shape(server):
    status, headers, answer = http_request(server.url, LOOKUP, FORM, "POST", b"QueueUrl=%ff%fe")
    assert status == 400 and headers["content-type"].startswith("text/xml")
    assert ET.fromstring(answer).findtext("s:Error/s:Code", namespaces=NS) == "InvalidParameterValue"
    status, _, _ = http_request(server.url, f"{LOOKUP}?QueueUrl=%ff")
    assert status == 400


def test_sqss_own_json_protocol_answers_a_body_nested_too_deep_with_a_400(server, caplog):
    headers = {**JSON, "X-Amz-Target": "AmazonSQS.SendMessage"}
    status, _, answer = http_request(server.url, "/", headers, "POST", b'{"QueueUrl": "q", "MessageBody": ' + b"[" * 60_000)
    assert status == 400 and json.loads(answer)["__type"].endswith("#SerializationException")
    assert no_tracebacks(caplog)


@pytest.mark.parametrize("depth", [40, 980])  # 980: parses, but nests past what a repr of it survives
def test_sqss_own_json_protocol_answers_a_body_that_parses_but_nests_too_deep_with_a_400(server, caplog, depth):
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="deep")["QueueUrl"]
    deep = "[" * depth + "]" * depth
    for action, member in (("TagQueue", "Tags"), ("ReceiveMessage", "AttributeNames"), ("SendMessageBatch", "Entries")):
        headers = {**JSON, "X-Amz-Target": f"AmazonSQS.{action}"}
        status, _, answer = http_request(server.url, "/", headers, "POST", f'{{"QueueUrl": "{url}", "{member}": {deep}}}'.encode())
        assert status == 400 and json.loads(answer)["__type"].endswith("#SerializationException"), action
    assert no_tracebacks(caplog)


def test_a_batch_of_ten_entries_with_ten_attributes_each_is_not_too_deep(server):
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="wide-batch")["QueueUrl"]
    attributes = {f"a{i}": {"DataType": "String.Array", "StringValue": "x"} for i in range(10)}
    entries = [{"Id": str(i), "MessageBody": "b", "MessageAttributes": attributes} for i in range(10)]
    assert len(sqs.send_message_batch(QueueUrl=url, Entries=entries)["Successful"]) == 10


# ---------------------------------------------------------------- methods


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_a_method_the_look_up_does_not_serve_is_405_naming_get_and_post(server, big, method):
    _, url = big
    for path in (f"{LOOKUP}?QueueUrl={url}", f"{LOOKUP}/us-east-1/000000000000/big"):
        status, headers, _ = http_request(server.url, path, method=method, body=b"")
        assert (status, headers["allow"]) == (405, "GET, POST")


def test_a_method_health_does_not_serve_is_405_naming_get_and_head(server):
    status, headers, _ = http_request(server.url, "/health", method="POST", body=b"")
    assert (status, headers["allow"]) == (405, "GET, HEAD")
