"""LocalStack's message look-up (/_aws/sqs/messages) answered as LocalStack answers it: its JSON
to a request that accepts JSON, its order, its refusal of another action and of a queue URL that
names no queue; XML stays the default."""

import base64
import json
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from sqsqlite.clock import ManualClock
from tests.server.server_helpers import boto3_client, http_request, manual_clock_server, query_protocol_client

NS = {"s": "http://queue.amazonaws.com/doc/2012-11-05/"}
LOOKUP = "/_aws/sqs/messages"
ACCEPT_JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module")
def clock():
    return ManualClock()


@pytest.fixture(scope="module")
def server(tmp_path_factory, clock):
    with manual_clock_server(tmp_path_factory.mktemp("localstack"), clock) as s:
        yield s


@pytest.fixture(scope="module")
def sqs(server):
    return boto3_client(server.url)


def queue(sqs, name, *bodies, **attributes):
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    return url


def look_up(server, url, headers=ACCEPT_JSON, **flags):
    query = "".join(f"&{k}={v}" for k, v in flags.items())
    status, answer_headers, body = http_request(server.url, f"{LOOKUP}?QueueUrl={url}{query}", headers)
    return status, answer_headers, body


def listed(body):
    """The messages of a JSON look-up, a lone one as a list of one."""
    messages = json.loads(body)["ReceiveMessageResponse"]["ReceiveMessageResult"]["Message"]
    return messages if isinstance(messages, list) else [messages]


def attribute_map(message):
    return {a["Name"]: a["Value"] for a in message["Attribute"]}


# ---------------------------------------------------------------- LocalStack's JSON


def test_accepting_json_gets_localstacks_json_with_each_attribute_a_name_and_value(server, sqs):
    url = queue(sqs, "as-json", "message-1", "message-2")
    status, headers, body = look_up(server, url)
    assert status == 200 and headers["content-type"] == "application/json"
    response = json.loads(body)["ReceiveMessageResponse"]
    assert response["ResponseMetadata"]["RequestId"]
    messages = response["ReceiveMessageResult"]["Message"]
    assert [(m["Body"], m["MD5OfBody"]) for m in messages] == [
        ("message-1", "3d6b824fd8c1520e9a047d21fee6fb1f"),
        ("message-2", "95ef155b66299d14edf7ed57c468c13b"),
    ]
    assert messages[0]["ReceiptHandle"] == "SQS/BACKDOOR/ACCESS"
    attributes = attribute_map(messages[0])
    assert attributes["SenderId"] and attributes["SentTimestamp"].isdigit()
    # LocalStack's "0" for a message never received, as strings all.
    assert (attributes["ApproximateReceiveCount"], attributes["ApproximateFirstReceiveTimestamp"]) == ("0", "0")


def test_a_lone_message_is_an_object_and_an_empty_result_null_as_localstack_writes_them(server, sqs):
    url = queue(sqs, "lone", "only")
    assert json.loads(look_up(server, url)[2])["ReceiveMessageResponse"]["ReceiveMessageResult"]["Message"]["Body"] == "only"
    empty = queue(sqs, "empty")
    assert json.loads(look_up(server, empty)[2])["ReceiveMessageResponse"]["ReceiveMessageResult"] is None


def test_message_attributes_come_as_names_and_values_in_localstacks_json(server, sqs):
    url = queue(sqs, "attributed")
    attributes = {
        "s": {"DataType": "String", "StringValue": "text"},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
    }
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageAttributes=attributes)
    (message,) = listed(look_up(server, url)[2])
    values = {a["Name"]: a["Value"] for a in message["MessageAttribute"]}
    assert values == {
        "s": {"DataType": "String", "StringValue": "text"},
        "b": {"DataType": "Binary", "BinaryValue": base64.b64encode(b"\x00\x01").decode()},
    }
    assert len(message["MD5OfMessageAttributes"]) == 32


def test_the_flags_mark_each_message_in_localstacks_json(server, sqs, clock):
    url = queue(sqs, "flagged", "message-1", "message-2")
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=30)
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=10)
    assert [m["Body"] for m in listed(look_up(server, url, ShowInvisible="false")[2])] == ["message-2"]
    shown = listed(look_up(server, url, ShowInvisible="true", ShowDelayed="true")[2])
    flags = {m["Body"]: (attribute_map(m)["IsVisible"], attribute_map(m)["IsDelayed"]) for m in shown}
    assert flags == {"message-1": ("false", "false"), "message-2": ("true", "false"), "later": ("false", "true")}


@pytest.mark.parametrize(
    "accept", [None, "*/*", "text/xml", "application/xml, application/json;q=0.5", "text/*, application/json"], ids=str
)
def test_xml_stays_the_answer_unless_json_is_accepted_above_it(server, sqs, accept):
    url = queue(sqs, "xml-default", "m")
    status, headers, body = look_up(server, url, {"Accept": accept} if accept else {})
    assert status == 200 and headers["content-type"].startswith("text/xml")
    assert ET.fromstring(body).findtext("s:ReceiveMessageResult/s:Message/s:Body", namespaces=NS) == "m"


def test_a_look_up_error_accepting_json_is_localstacks_error_response(server, sqs):
    status, headers, body = http_request(server.url, LOOKUP, ACCEPT_JSON)
    assert (status, headers["content-type"]) == (400, "application/json")
    error = json.loads(body)["ErrorResponse"]
    assert error["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue" and error["Error"]["Type"] == "Sender"
    assert error["RequestId"]
    status, _, body = http_request(server.url, f"{LOOKUP}/us-east-1/000000000000/hopefullydoesnotexist", ACCEPT_JSON)
    assert status == 400 and json.loads(body)["ErrorResponse"]["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_the_queue_in_the_path_is_looked_up_in_that_region_only(server, sqs):
    queue(sqs, "in-path", "m1", "m2")
    status, _, body = http_request(server.url, f"{LOOKUP}/us-east-1/000000000000/in-path", ACCEPT_JSON)
    assert status == 200 and len(listed(body)) == 2
    status, _, body = http_request(server.url, f"{LOOKUP}/us-east-2/000000000000/in-path", ACCEPT_JSON)
    assert status == 400 and json.loads(body)["ErrorResponse"]["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


# ---------------------------------------------------------------- order


def test_a_message_received_and_visible_again_is_listed_in_its_send_place_with_its_count(server, sqs):
    url = queue(sqs, "ordered", "message-1", "message-2")
    query = query_protocol_client(server.url)
    got = query.receive_message(QueueUrl=url, VisibilityTimeout=0, MaxNumberOfMessages=1, AttributeNames=["All"])
    assert got["Messages"][0]["Body"] == "message-1"
    status, _, body = look_up(server, url, {})
    messages = ET.fromstring(body).findall("s:ReceiveMessageResult/s:Message", NS)
    counts = {a.findtext("s:Name", namespaces=NS): a.findtext("s:Value", namespaces=NS) for a in messages[0].findall("s:Attribute", NS)}
    assert [m.findtext("s:Body", namespaces=NS) for m in messages] == ["message-1", "message-2"]
    assert counts["ApproximateReceiveCount"] == "1"


def test_an_in_flight_message_is_listed_in_its_send_place_when_shown(server, sqs):
    url = queue(sqs, "ordered-in-flight", "message-1", "message-2", "message-3")
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=30)
    shown = listed(look_up(server, url, ShowInvisible="true")[2])
    assert [(m["Body"], attribute_map(m)["IsVisible"]) for m in shown] == [
        ("message-1", "false"),
        ("message-2", "true"),
        ("message-3", "true"),
    ]


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_an_sdk_pointed_at_the_look_up_lists_a_fifo_queues_messages_in_send_order(server, sqs, protocol):
    url = queue(sqs, f"fifo-{protocol}.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    for body, group in (("message-1", "1"), ("message-2", "1"), ("message-3", "2")):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)
    client = (boto3_client if protocol == "json" else query_protocol_client)(server.url + LOOKUP)
    messages = client.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]  # the count is not a limit here
    assert [(m["Body"], m["Attributes"]["MessageGroupId"]) for m in messages] == [
        ("message-1", "1"),
        ("message-2", "1"),
        ("message-3", "2"),
    ]


def test_a_fifo_groups_visible_messages_wait_with_its_message_in_flight_and_are_listed_with_it(server, sqs):
    url = queue(sqs, "waiting.fifo", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout="120")
    for body, group in (("message-1", "1"), ("message-2", "1"), ("message-3", "2"), ("message-4", "2")):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]] == ["message-1"]
    assert [m["Body"] for m in listed(look_up(server, url, ShowInvisible="false")[2])] == ["message-3", "message-4"]
    shown = listed(look_up(server, url, ShowInvisible="true")[2])
    # message-2 can't be received while message-1 is in flight, but is itself visible (LocalStack's flag).
    assert [(m["Body"], attribute_map(m)["IsVisible"]) for m in shown] == [
        ("message-1", "false"),
        ("message-2", "true"),
        ("message-3", "true"),
        ("message-4", "true"),
    ]


def test_a_bounded_peek_of_a_fifo_queue_leaves_out_the_groups_waiting_on_a_message_in_flight(db):
    fifo = db.create_queue("peeked.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    for body, group in (("a1", "a"), ("a2", "a"), ("b1", "b")):
        fifo.send_message(body, message_group_id=group)
    fifo.receive_message(visibility_timeout=60)  # a1, and a's group waits on it
    assert [m.body for m in fifo.peek_within({"visible"}, 100, 1000)[0]] == ["b1"]
    assert [m.body for m in fifo.peek_within({"visible", "in-flight"}, 100, 1000)[0]] == ["a1", "a2", "b1"]


# ---------------------------------------------------------------- what the look-up refuses


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_an_sdk_pointed_at_the_look_up_gets_invalid_request_for_another_action_and_nothing_is_sent(server, sqs, protocol):
    url = queue(sqs, f"not-sent-{protocol}")
    client = (boto3_client if protocol == "json" else query_protocol_client)(server.url + LOOKUP)
    with pytest.raises(ClientError) as caught:
        client.send_message(QueueUrl=url, MessageBody="foobar")
    error = caught.value.response["Error"]
    assert (error["Code"], error["Message"]) == ("InvalidRequest", "This endpoint only accepts ReceiveMessage calls")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_a_look_up_naming_another_action_in_its_query_is_refused_too(server, sqs):
    url = queue(sqs, "named-action", "m")
    status, _, body = http_request(server.url, f"{LOOKUP}?Action=DeleteQueue&QueueUrl={url}", ACCEPT_JSON)
    assert status == 400 and json.loads(body)["ErrorResponse"]["Error"]["Code"] == "InvalidRequest"
    status, _, _ = http_request(server.url, f"{LOOKUP}?Action=ReceiveMessage&QueueUrl={url}", ACCEPT_JSON)
    assert status == 200


@pytest.mark.parametrize(
    "address", ["http://localhost:4566/nonsense", "http://localhost:4566/a/b/c/d", "http://localhost:4566/", "http://[::1/000000000000/q"]
)
def test_a_queue_url_whose_path_names_no_queue_is_localstacks_404_invalid_address(server, address):
    status, headers, body = http_request(server.url, f"{LOOKUP}?QueueUrl={address}", ACCEPT_JSON)
    assert status == 404 and headers["x-amzn-query-error"] == "InvalidAddress;Sender"
    error = json.loads(body)["ErrorResponse"]["Error"]
    assert (error["Code"], error["Message"]) == (
        "InvalidAddress",
        "The address https://queue.amazonaws.com/ is not valid for this endpoint.",
    )
    status, _, body = http_request(server.url, f"{LOOKUP}?QueueUrl={address}")  # in XML as well
    assert status == 404 and ET.fromstring(body).findtext("s:Error/s:Code", namespaces=NS) == "InvalidAddress"


@pytest.mark.parametrize(
    "address",
    [
        "http://localhost:4566/000000000000/hopefullydoesnotexist",
        "http://localhost:4566/queue/us-east-1/000000000000/hopefullydoesnotexist",
        "000000000000/hopefullydoesnotexist",
        "hopefullydoesnotexist",
    ],
)
def test_a_well_formed_url_or_name_of_a_missing_queue_is_non_existent_queue(server, address):
    status, _, body = http_request(server.url, f"{LOOKUP}?QueueUrl={address}", ACCEPT_JSON)
    assert status == 400 and json.loads(body)["ErrorResponse"]["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_each_url_style_of_an_existing_queue_is_looked_up(server, sqs):
    queue(sqs, "styled", "m")
    for address in (
        "http://localhost:4566/000000000000/styled",
        "http://localhost:4566/queue/us-east-1/000000000000/styled",
        "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/styled",
        "styled",
    ):
        status, _, body = http_request(server.url, f"{LOOKUP}?QueueUrl={address}", ACCEPT_JSON)
        assert status == 200 and [m["Body"] for m in listed(body)] == ["m"], address


# ---------------------------------------------------------------- LocalStack's override headers on ReceiveMessage


def test_localstacks_override_headers_are_not_read_so_a_receive_answers_as_sqs_does(server, sqs):
    """Several polls in one receive could take again what the first took once its lease lapsed
    (docs/reference/compatibility.md): until a claim can refuse to run past that lapse, the
    headers are left unread."""
    url = queue(sqs, "overridden", *(f"message-{i}" for i in range(15)))

    def add(params, **kwargs):
        params["headers"].update({"x-localstack-sqs-override-message-count": "30"})

    client = boto3_client(server.url)
    client.meta.events.register("before-call.sqs.ReceiveMessage", add)
    messages = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
    assert len(messages) == 10 and {m["Attributes"]["ApproximateReceiveCount"] for m in messages} == {"1"}


def test_a_bounded_peek_counts_the_messages_it_passes_over_toward_its_limit(db):
    fifo = db.create_queue("scanned.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    for body, group in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")):
        fifo.send_message(body, message_group_id=group)
    fifo.receive_message(visibility_timeout=60)  # a1: a2 and a3 wait on it, met and passed over
    assert fifo.peek_within({"visible"}, 2, 1000, page=1) == ([], 0)
    assert [m.body for m in fifo.peek_within({"visible"}, 3, 1000, page=1)[0]] == ["b1"]
