"""``sqsqlite serve`` with real boto3 clients and raw HTTP: the JSON wire format, queue URLs,
SigV4, long polling under load, request size limits and connection housekeeping."""

import contextlib
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import boto3
import pytest
from botocore import UNSIGNED
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

import sqsqlite
from sqsqlite.server import BackgroundServer
from sqsqlite.server.sigv4 import Verifier
from tests.server.server_helpers import CREDENTIALS, boto3_client

ACCESS, SECRET = CREDENTIALS["aws_access_key_id"], CREDENTIALS["aws_secret_access_key"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with BackgroundServer(str(tmp_path_factory.mktemp("srv") / "s.db")) as s:
        yield s


@pytest.fixture(scope="module")
def sqs(server):
    return boto3_client(server.url)


def raw(url, body: bytes, headers: dict, method="POST", path="/"):
    host = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host, timeout=30)
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def json_call(url, action, members, **headers):
    return raw(
        url, json.dumps(members).encode(), {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{action}", **headers}
    )


# ---------------------------------------------------------------------- JSON wire format


def test_json_errors_carry_the_type_shape_and_the_query_error_header(server):
    status, headers, body = json_call(server.url, "GetQueueUrl", {"QueueName": "missing"})
    assert status == 400
    assert headers["x-amzn-query-error"] == "AWS.SimpleQueueService.NonExistentQueue;Sender"
    assert headers["content-type"] == "application/x-amz-json-1.0" and headers["x-amzn-requestid"]
    doc = json.loads(body)
    assert doc["__type"] == "com.amazonaws.sqs#QueueDoesNotExist" and doc["message"] == "The specified queue does not exist."
    status, headers, body = json_call(server.url, "CreateQueue", {"QueueName": "bad name"})
    assert headers["x-amzn-query-error"] == "InvalidParameterValue;Sender"
    assert json.loads(body)["__type"] == "com.amazonaws.sqs#InvalidParameterValueException"


def test_every_error_class_reaches_boto3_as_its_modelled_exception(server, sqs):
    url = sqs.create_queue(QueueName="errs", Attributes={"VisibilityTimeout": "5"})["QueueUrl"]
    cases = [
        (sqs.exceptions.QueueDoesNotExist, lambda: sqs.get_queue_url(QueueName="nope")),
        (sqs.exceptions.QueueNameExists, lambda: sqs.create_queue(QueueName="errs", Attributes={"VisibilityTimeout": "6"})),
        (sqs.exceptions.ReceiptHandleIsInvalid, lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle="forged")),
        (sqs.exceptions.InvalidAttributeName, lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Nope"])),
        (sqs.exceptions.InvalidAttributeValue, lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "-1"})),
        (sqs.exceptions.EmptyBatchRequest, lambda: sqs.delete_message_batch(QueueUrl=url, Entries=[])),
        (
            sqs.exceptions.TooManyEntriesInBatchRequest,
            lambda: sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": "h"} for i in range(11)]),
        ),
        (
            sqs.exceptions.BatchEntryIdsNotDistinct,
            lambda: sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": "h"}] * 2),
        ),
        (sqs.exceptions.InvalidBatchEntryId, lambda: sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": "a b", "ReceiptHandle": "h"}])),
        (
            sqs.exceptions.ResourceNotFoundException,
            lambda: sqs.cancel_message_move_task(
                TaskHandle="eyJ0YXNrSWQiOiJ4Iiwic291cmNlQXJuIjoiYXJuOmF3czpzcXM6dXMtZWFzdC0xOjAwMDAwMDAwMDAwMDpub25lIn0="
            ),
        ),
    ]
    for cls, call in cases:
        with pytest.raises(cls):
            call()
    with pytest.raises(ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody="")
    assert err.value.response["Error"]["Code"] == "MissingParameter"
    sqs.send_message(QueueUrl=url, MessageBody="m")
    [m] = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.purge_queue(QueueUrl=url)
    with pytest.raises(sqs.exceptions.PurgeQueueInProgress):
        sqs.purge_queue(QueueUrl=url)
    with pytest.raises(ClientError) as err:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=10)
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"  # purged: the message is gone
    sqs.delete_queue(QueueUrl=url)
    with pytest.raises(sqs.exceptions.QueueDeletedRecently):
        sqs.create_queue(QueueName="errs")


def test_message_not_inflight_reaches_boto3_as_its_modelled_exception(server, sqs):
    url = sqs.create_queue(QueueName="inflight", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="m")
    [m] = sqs.receive_message(QueueUrl=url)["Messages"]  # visible again at once
    with pytest.raises(sqs.exceptions.MessageNotInflight):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=10)


def test_an_unknown_target_or_malformed_json_is_refused(server):
    status, headers, body = raw(server.url, b"{}", {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.Explode"})
    assert status == 400 and headers["x-amzn-query-error"] == "InvalidAction;Sender"
    status, _, body = raw(server.url, b"{not json", {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"})
    assert status == 400 and json.loads(body)["__type"].endswith("SerializationException")
    status, _, body = json_call(server.url, "ListQueues", {"Colour": "red"})
    assert status == 400 and "Colour" in json.loads(body)["message"]


@pytest.mark.parametrize(
    "action, request_members",
    [
        ("ReceiveMessage", {"MaxNumberOfMessages": "5"}),
        ("ReceiveMessage", {"WaitTimeSeconds": "1"}),
        ("SendMessage", {"MessageBody": "x", "DelaySeconds": "0"}),
        ("SendMessageBatch", {"Entries": [{"Id": "a", "MessageBody": "x", "DelaySeconds": "0"}]}),
        ("SendMessageBatch", {"Entries": [{"Id": "a", "MessageBody": "x", "DelaySeconds": "0"}, "no entry"]}),
    ],
)
def test_a_json_string_for_an_integer_member_is_refused_as_sqs_refuses_it(server, sqs, action, request_members):
    url = sqs.create_queue(QueueName="ints")["QueueUrl"]
    status, headers, body = json_call(server.url, action, {"QueueUrl": url, **request_members})
    answer = json.loads(body)
    assert status == 400 and answer["__type"] == "com.amazon.coral.service#SerializationException"
    assert answer["message"] == "STRING_VALUE can not be converted to an Integer"  # SQS's, as recorded
    assert "Messages" not in sqs.receive_message(QueueUrl=url)  # nothing was sent


@pytest.mark.parametrize(
    "body, headers, code",
    [
        (
            b"[" * 5000 + b"]" * 5000,
            {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"},
            "SerializationException",
        ),
        (b"Action=ListQueues&Attribute.1.Name.x=1", {"Content-Type": "application/x-www-form-urlencoded"}, "InvalidParameterValue"),
        (
            b"Action=TagQueue&QueueUrl=q&Tag.1.Key.x=1&Tag.1.Value=v",
            {"Content-Type": "application/x-www-form-urlencoded"},
            "InvalidParameterValue",
        ),
        (
            b"Action=ListQueues&" + b".".join([b"a"] * 5000) + b"=1",
            {"Content-Type": "application/x-www-form-urlencoded"},
            "InvalidParameterValue",
        ),
    ],
    ids=["json nested 5000 deep", "a map key given as a map", "a tag key given as a map", "a query key 5000 parts deep"],
)
def test_a_malformed_request_gets_an_sqs_error_never_the_http_servers_bare_500(server, body, headers, code):
    status, got, answer = raw(server.url, body, headers)
    assert status == 400 and got["x-amzn-query-error"].startswith(code + ";"), (status, answer[:300])
    assert raw(server.url, b"{}", {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"})[0] == 200


def _stall(url: str) -> socket.socket:
    """A connection that sends a request's headers and the first byte of its 100-byte body, then nothing."""
    host, port = url.removeprefix("http://").split(":")
    stalled = socket.create_connection((host, int(port)), timeout=15)
    stalled.sendall(
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n"
        b"X-Amz-Target: AmazonSQS.ListQueues\r\nContent-Length: 100\r\n\r\n{"
    )
    return stalled


def _until_serving(background: BackgroundServer) -> None:
    """Until a request is being served (its body read, or its engine call under way); bounded."""
    deadline = time.monotonic() + 10
    while background.server.app.active < 1:
        assert time.monotonic() < deadline, "no request reached the server"
        time.sleep(0.01)


def _answer(sock: socket.socket) -> str:
    """Everything the server sends on sock until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data.decode()


def test_a_body_that_stops_arriving_is_answered_request_timeout_on_a_closed_connection(tmp_path, monkeypatch):
    from sqsqlite.server import asgi

    monkeypatch.setattr(asgi, "BODY_IDLE_SECONDS", 0.5)  # no part of the body for this long: answered
    with BackgroundServer(str(tmp_path / "s.db")) as background, _stall(background.url) as stalled:
        assert raw(background.url, b"{}", {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"})[0] == 200
        answer = _answer(stalled)  # the server closes the connection after its answer
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "x-amzn-query-error: RequestTimeout;Sender" in answer and "connection: close" in answer.lower()
        assert '"__type":"com.amazonaws.sqs#RequestTimeout"' in answer.replace(" ", "")


def test_a_stop_answers_a_body_still_arriving_service_unavailable_and_stops_cleanly(tmp_path):
    background = BackgroundServer(str(tmp_path / "s.db"))
    with _stall(background.url) as stalled:
        assert raw(background.url, b"{}", {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"})[0] == 200
        _until_serving(background)  # the stalled request is reading its body
        assert background.stop(timeout=10) is True  # nothing of the stalled request ran: nothing was cut off
        answer = _answer(stalled)
    assert answer.startswith("HTTP/1.1 503"), answer
    assert "x-amzn-query-error: ServiceUnavailable;Receiver" in answer  # the AWS SDKs retry it


def test_a_stop_that_cuts_off_a_request_in_progress_reports_itself_unclean(tmp_path, monkeypatch):
    from sqsqlite.server import endpoint

    monkeypatch.setattr(endpoint, "GRACEFUL_STOP_SECONDS", 1)  # how long a stop waits for requests in progress
    path = str(tmp_path / "s.db")
    background = BackgroundServer(path)
    url = json_call(background.url, "CreateQueue", {"QueueName": "q"})[2]
    other = sqsqlite.connect(path)
    holding, release = threading.Event(), threading.Event()

    def hold():
        with other.store.write():  # the writers' lock, past the stop's wait
            holding.set()
            release.wait(20)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    queue_url = json.loads(url)["QueueUrl"]

    def send():
        with contextlib.suppress(OSError):  # the stop closes the connection unanswered
            json_call(background.url, "SendMessage", {"QueueUrl": queue_url, "MessageBody": "m"})

    sender = threading.Thread(target=send)
    sender.start()
    try:
        _until_serving(background)  # the send reached the server and waits for the lock
        threading.Timer(3, release.set).start()  # the stop's cancelled call then ends, and the stop with it
        assert background.stop(timeout=10) is False  # not the clean stop it would have said it was
    finally:
        release.set()
        holder.join(10)
        sender.join(10)
        other.close()


def test_another_connections_long_transaction_never_stops_the_endpoints_loop(tmp_path):
    path = str(tmp_path / "held.db")
    with BackgroundServer(path) as background:
        sqs, sender_sqs = boto3_client(background.url), boto3_client(background.url)
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        other = sqsqlite.connect(path)  # another process's, as far as the lock goes: its own descriptor
        holding, release = threading.Event(), threading.Event()

        def hold():
            with other.store.write():  # an import or a prune: the writers' lock for a long while
                holding.set()
                release.wait(20)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        sent: dict = {}
        sender = threading.Thread(target=lambda: sent.update(sender_sqs.send_message(QueueUrl=url, MessageBody="after")))
        try:
            sender.start()
            time.sleep(0.2)  # the send reaches the server and waits for the lock
            assert sqs.list_queues()["QueueUrls"] == [url]  # reads are answered meanwhile
            assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]["ApproximateNumberOfMessages"] == "0"
            assert sender.is_alive()  # while the send still waits, off the loop (the lock still held)
        finally:
            release.set()
            holder.join(10)
            sender.join(20)
            other.close()
        assert sent["MessageId"] and sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "after"


def test_queue_urls_name_the_host_the_request_came_to(server):
    port = server.url.rsplit(":", 1)[1]
    by_ip = boto3_client(f"http://127.0.0.1:{port}")
    by_name = boto3_client(f"http://localhost:{port}")
    url = by_ip.create_queue(QueueName="hosted")["QueueUrl"]
    assert url == f"http://127.0.0.1:{port}/000000000000/hosted"
    assert by_name.get_queue_url(QueueName="hosted")["QueueUrl"] == f"http://localhost:{port}/000000000000/hosted"
    by_name.send_message(QueueUrl=url, MessageBody="either works")  # a URL naming another host, or a bare name
    by_name.send_message(QueueUrl="hosted", MessageBody="bare")
    assert len(by_ip.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]) == 2


def test_the_server_reports_its_own_time_per_request(server, sqs):
    r = sqs.list_queues()
    timing = r["ResponseMetadata"]["HTTPHeaders"]["server-timing"]
    assert timing.startswith("sqsqlite;dur=") and float(timing.split("=")[1]) >= 0


# ---------------------------------------------------------------------- SigV4


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    with BackgroundServer(str(tmp_path_factory.mktemp("auth") / "a.db"), access_key=ACCESS, secret_key=SECRET) as s:
        yield s


def test_with_credentials_configured_correctly_signed_requests_pass(secured):
    sqs = boto3_client(secured.url)
    url = sqs.create_queue(QueueName="signed")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="signed body with spaces & symbols ü")
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "signed body with spaces & symbols ü"


@pytest.mark.parametrize(
    "options, code",
    [
        ({"aws_secret_access_key": "wrong"}, "SignatureDoesNotMatch"),
        ({"aws_access_key_id": "AKIDOTHER"}, "InvalidClientTokenId"),
    ],
)
def test_bad_signatures_are_refused_with_sqs_errors(secured, options, code):
    sqs = boto3_client(secured.url, **options)
    with pytest.raises(ClientError) as err:
        sqs.list_queues()
    assert err.value.response["Error"]["Code"] == code
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_unsigned_requests_are_refused_as_missing_authentication(secured):
    unsigned = boto3.client(
        "sqs",
        endpoint_url=secured.url,
        region_name="us-east-1",
        config=Config(signature_version=UNSIGNED, retries={"total_max_attempts": 1}),
    )
    with pytest.raises(ClientError) as err:
        unsigned.list_queues()
    assert err.value.response["Error"]["Code"] == "MissingAuthenticationToken"


def _signed_query(url, params, secret=SECRET, expires=300):
    req = AWSRequest(method="GET", url=url + "/", params=params)
    SigV4QueryAuth(Credentials(ACCESS, secret), "sqs", "us-east-1", expires=expires).add_auth(req)
    return req.prepare().url


def test_query_string_signatures_are_verified(secured):
    good = _signed_query(secured.url, {"Action": "ListQueues", "QueueNamePrefix": "sig ned"})
    host_path = good.removeprefix(secured.url)
    status, _, body = raw(secured.url, b"", {}, method="GET", path=host_path)
    assert status == 200, body
    tampered = host_path.replace("sig%20ned", "other")
    status, _, body = raw(secured.url, b"", {}, method="GET", path=tampered)
    assert status == 403 and b"SignatureDoesNotMatch" in body
    wrong = _signed_query(secured.url, {"Action": "ListQueues"}, secret="nope").removeprefix(secured.url)
    assert raw(secured.url, b"", {}, method="GET", path=wrong)[0] == 403


def test_a_query_get_signed_in_its_query_string_and_asking_for_json_is_answered_in_json(secured):
    boto3_client(secured.url).create_queue(QueueName="signed-json")
    path = _signed_query(secured.url, {"Action": "ListQueues", "Version": "2012-11-05"}).removeprefix(secured.url)
    status, headers, body = raw(secured.url, b"", {"Accept": "application/json"}, method="GET", path=path)
    assert status == 200, body
    urls = json.loads(body)["ListQueuesResponse"]["ListQueuesResult"]["queueUrls"]
    assert any(url.endswith("/signed-json") for url in urls)
    status, _, body = raw(secured.url, b"", {}, method="GET", path=path)  # without it, XML as before
    assert status == 200 and body.startswith(b"<?xml") and b"<ListQueuesResponse" in body


def test_the_verifier_agrees_with_botocores_signer_and_rejects_stale_or_altered_requests():
    body = b'{"QueueName":"x"}'
    req = AWSRequest(
        method="POST",
        url="http://127.0.0.1:9324/",
        data=body,
        headers={"X-Amz-Target": "AmazonSQS.CreateQueue", "Content-Type": "application/x-amz-json-1.0"},
    )
    SigV4Auth(Credentials(ACCESS, SECRET), "sqs", "eu-west-1").add_auth(req)
    headers = list(req.headers.items()) + [("Host", "127.0.0.1:9324")]
    Verifier(ACCESS, SECRET).verify("POST", "/", "", headers, body)
    with pytest.raises(sqsqlite.SQSError) as err:
        Verifier(ACCESS, SECRET).verify("POST", "/", "", headers, body + b" ")
    assert err.value.code == "SignatureDoesNotMatch"
    with pytest.raises(sqsqlite.SQSError) as err:
        Verifier(ACCESS, SECRET, now=lambda: time.time() + 3600).verify("POST", "/", "", headers, body)
    assert err.value.code == "SignatureDoesNotMatch" and "expired" in str(err.value)
    broken = [(k, "AWS4-HMAC-SHA256 Credential=x") if k == "Authorization" else (k, v) for k, v in headers]
    with pytest.raises(sqsqlite.SQSError) as err:
        Verifier(ACCESS, SECRET).verify("POST", "/", "", broken, body)
    assert err.value.code == "IncompleteSignature"


def _signed(body: bytes, service: str = "sqs", region: str = "us-east-1", payload: str | None = None) -> list[tuple[str, str]]:
    """A JSON request's headers as botocore signs them (``payload``: the X-Amz-Content-Sha256 the
    client claims, signed over as S3's signers do)."""
    headers = {"X-Amz-Target": "AmazonSQS.ListQueues", "Content-Type": "application/x-amz-json-1.0"}
    if payload is not None:
        headers["X-Amz-Content-SHA256"] = payload
    req = AWSRequest(method="POST", url="http://127.0.0.1:9324/", data=body, headers=headers)
    signer = SigV4Auth(Credentials(ACCESS, SECRET), service, region)
    if payload is not None:
        signer.payload = lambda request: payload  # type: ignore[method-assign]
    signer.add_auth(req)
    return list(req.headers.items()) + [("Host", "127.0.0.1:9324")]


SCOPE_REFUSALS = [
    ("another service's signature", dict(service="s3"), "Credential should be scoped to correct service: 'sqs'. "),
    ("a signature for no region's name", dict(region="EU_WEST"), "Credential should be scoped to a valid region, not 'EU_WEST'. "),
]


@pytest.mark.parametrize("what, signed_for, text", SCOPE_REFUSALS, ids=[s[0] for s in SCOPE_REFUSALS])
def test_a_signature_made_for_another_service_or_region_is_refused_in_aws_words(what, signed_for, text):
    body = b"{}"
    with pytest.raises(sqsqlite.SQSError) as err:
        Verifier(ACCESS, SECRET).verify("POST", "/", "", _signed(body, **signed_for), body)
    assert (err.value.code, err.value.message) == ("SignatureDoesNotMatch", text)


@pytest.mark.parametrize("claimed", ["UNSIGNED-PAYLOAD", "the signed body's sha256"])
def test_a_signed_request_whose_body_was_replaced_is_refused_whatever_payload_hash_it_claims(claimed):
    signed_body, sent = b'{"QueueNamePrefix":"mine"}', b'{"QueueNamePrefix":"theirs"}'
    payload = "UNSIGNED-PAYLOAD" if claimed == "UNSIGNED-PAYLOAD" else hashlib.sha256(signed_body).hexdigest()
    headers = _signed(signed_body, payload=payload)
    with pytest.raises(sqsqlite.SQSError) as err:
        Verifier(ACCESS, SECRET).verify("POST", "/", "", headers, sent)
    assert err.value.code == "SignatureDoesNotMatch"
    assert err.value.message.startswith("The request signature we calculated does not match the signature you provided.")


def test_sqs_takes_no_unsigned_payload_even_for_the_body_that_was_sent():
    body = b"{}"
    with pytest.raises(sqsqlite.SQSError) as err:
        Verifier(ACCESS, SECRET).verify("POST", "/", "", _signed(body, payload="UNSIGNED-PAYLOAD"), body)
    assert err.value.code == "SignatureDoesNotMatch"


def test_a_signed_request_sent_again_within_fifteen_minutes_is_served_again_as_aws_serves_it():
    body = b"{}"
    headers = _signed(body)
    signed_at = time.time()
    for later in (0, 60, 14 * 60):
        Verifier(ACCESS, SECRET, now=lambda later=later: signed_at + later).verify("POST", "/", "", headers, body)
    with pytest.raises(sqsqlite.SQSError, match="expired"):
        Verifier(ACCESS, SECRET, now=lambda: signed_at + 16 * 60).verify("POST", "/", "", headers, body)


def test_a_keyed_server_answers_signatures_for_every_region_each_its_own_queues(tmp_path):
    with BackgroundServer(str(tmp_path / "r.db"), access_key=ACCESS, secret_key=SECRET, region="eu-west-1") as s:
        west = boto3.client("sqs", endpoint_url=s.url, region_name="eu-west-1", **CREDENTIALS)
        west.create_queue(QueueName="w")
        east = boto3_client(s.url)  # us-east-1
        assert "QueueUrls" not in east.list_queues()
        assert west.get_queue_attributes(QueueUrl=west.get_queue_url(QueueName="w")["QueueUrl"], AttributeNames=["QueueArn"])[
            "Attributes"
        ] == {"QueueArn": "arn:aws:sqs:eu-west-1:000000000000:w"}


def test_without_credentials_configured_any_signature_is_accepted(server):
    sqs = boto3_client(server.url, aws_access_key_id="anyone", aws_secret_access_key="anything")
    sqs.list_queues()


# ---------------------------------------------------------------------- long polling


@pytest.fixture
def busy_sqs(server):
    return boto3.client(
        "sqs",
        endpoint_url=server.url,
        region_name="us-east-1",
        config=Config(max_pool_connections=150, retries={"total_max_attempts": 1}, read_timeout=60),
        **CREDENTIALS,
    )


@pytest.mark.slow
def test_a_hundred_waiting_polls_do_not_hold_up_sends_or_other_receives_and_a_send_wakes_one(server, busy_sqs):
    sqs = busy_sqs
    idle = sqs.create_queue(QueueName="lp-idle")["QueueUrl"]
    work = sqs.create_queue(QueueName="lp-work")["QueueUrl"]
    results = []

    def poll():
        # Only what a poll got: on a slow machine the first polls may reach their 20 s while the
        # rest park and the traffic runs, and an empty answer then is no wake-up.
        got = sqs.receive_message(QueueUrl=idle, WaitTimeSeconds=20).get("Messages", [])
        if got:
            results.append(got)

    pollers = [threading.Thread(target=poll, daemon=True) for _ in range(100)]
    for t in pollers:
        t.start()
    deadline = time.monotonic() + 15
    while server.db.wakeups.parked("lp-idle") < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.db.wakeups.parked("lp-idle") == 100  # all 100 are waiting now

    # Traffic on another queue goes on while they wait, and wakes none of them.
    for i in range(30):
        sqs.send_message(QueueUrl=work, MessageBody=str(i))
        [m] = sqs.receive_message(QueueUrl=work)["Messages"]
        sqs.delete_message(QueueUrl=work, ReceiptHandle=m["ReceiptHandle"])
    # No poll got anything (one may be between an empty wake-up and waiting again, so the
    # waiter count isn't checked here).
    assert not results

    # One send wakes exactly one poll, long before the 20-second deadline.
    sent_at = time.monotonic()
    sqs.send_message(QueueUrl=idle, MessageBody="wake up")
    while not results and time.monotonic() < sent_at + 10:
        time.sleep(0.001)
    woke = time.monotonic() - sent_at
    assert results == [[results[0][0]]] and results[0][0]["Body"] == "wake up"
    assert woke < 5, woke  # woken (in milliseconds), not answered at its 20-second deadline
    server.db.wakeups.wake("lp-idle")  # release the rest early: each finds nothing and waits again until its deadline
    sqs.send_message_batch(QueueUrl=idle, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(10)])
    deadline = time.monotonic() + 10
    while sum(len(r) for r in results) < 11 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert sum(len(r) for r in results) == 11  # the baton passed from poll to poll through the batch


def test_a_message_committed_by_another_connection_wakes_a_waiting_poll(server, sqs, tmp_path):
    url = sqs.create_queue(QueueName="lp-external")["QueueUrl"]
    got = []
    t = threading.Thread(target=lambda: got.append(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20).get("Messages", [])))
    t.start()
    deadline = time.monotonic() + 10
    while not server.db.wakeups.parked("lp-external") and time.monotonic() < deadline:
        time.sleep(0.005)
    other = sqsqlite.connect(server.db.path)  # as another process would: its own connection, no shared memory
    other.queue("lp-external").send_message("from outside")
    other.close()
    t.join(10)
    assert got and got[0][0]["Body"] == "from outside"


# ---------------------------------------------------------------------- request size limits


@pytest.fixture
def small_limit(tmp_path):
    with BackgroundServer(str(tmp_path / "small.db"), max_request_bytes=64 * 1024) as s:
        yield s


def test_a_declared_oversized_body_is_refused_before_it_is_sent(small_limit):
    host, port = small_limit.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n"
            b"X-Amz-Target: AmazonSQS.SendMessageBatch\r\nContent-Length: 1000000000\r\n\r\n"
        )
        answer = s.recv(65536).decode()  # the server answers without waiting for the gigabyte
    assert answer.startswith("HTTP/1.1 413")
    assert "x-amzn-query-error: AWS.SimpleQueueService.BatchRequestTooLong;Sender" in answer
    assert "connection: close" in answer.lower()  # header names are case-insensitive; uvicorn writes them in lower case


def test_a_chunked_body_is_cut_off_at_the_limit(small_limit):
    host, port = small_limit.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"a" * 32768
        for _ in range(3):
            s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = s.recv(65536).decode()
    assert answer.startswith("HTTP/1.1 413") and "InvalidParameterValue" in answer


def test_boto3_sees_an_oversized_send_refused_with_an_sqs_error(small_limit):
    sqs = boto3_client(small_limit.url)
    url = sqs.create_queue(QueueName="big")["QueueUrl"]
    with pytest.raises(ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody="x" * 100_000)
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert "larger than this endpoint accepts" in err.value.response["Error"]["Message"]
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"] == {
        "ApproximateNumberOfMessages": "0"
    }


def test_the_largest_message_in_its_largest_query_encoding_is_served_under_the_default_limit(server, sqs):
    """A Binary attribute of bytes whose base64 is all '/' grows four times in a form body
    (base64's third, then %2F for each character): a 1 MiB message is still served."""
    import base64
    import urllib.parse

    url = sqs.create_queue(QueueName="widest")["QueueUrl"]
    value = b"\xff" * (1024 * 1024 - len("x") - len("b") - len("Binary"))
    form = urllib.parse.urlencode(
        {
            "Action": "SendMessage",
            "QueueUrl": url,
            "MessageBody": "x",
            "MessageAttribute.1.Name": "b",
            "MessageAttribute.1.Value.DataType": "Binary",
            "MessageAttribute.1.Value.BinaryValue": base64.b64encode(value).decode(),
        }
    ).encode()
    assert len(form) > 4 * 1024 * 1024  # past the three times allowed before
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/", body=form, headers={"Content-Type": "application/x-www-form-urlencoded"})
    resp = conn.getresponse()
    assert resp.status == 200 and b"SendMessageResponse" in resp.read()
    [m] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert m["MessageAttributes"]["b"]["BinaryValue"] == value


def test_a_chunked_body_within_the_limit_is_served(small_limit):
    host, port = small_limit.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(
        "POST",
        "/",
        body=iter([b"Action=List", b"Queues"]),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        encode_chunked=True,
    )
    resp = conn.getresponse()
    assert resp.status == 200 and b"ListQueuesResponse" in resp.read()


# ---------------------------------------------------------------------- connections


def test_short_lived_clients_do_not_leave_database_connections_behind(server):
    before = len(server.db.store._all)
    for _ in range(30):
        status, _, _ = json_call(server.url, "ListQueues", {})  # a new TCP connection each time
        assert status == 200
    deadline = time.monotonic() + 5
    while len(server.db.store._all) > before + 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.db.store._all) <= before + 2


# ---------------------------------------------------------------------- the aws CLI (seed commands)


def _aws(url, *args):
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    out = subprocess.run(
        [sys.executable, "-m", "awscli", "sqs", *args, "--endpoint-url", url, "--output", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else {}


@pytest.mark.slow
def test_the_seed_commands_run_through_the_real_aws_cli(server):
    url = _aws(server.url, "create-queue", "--queue-name", "MyQueue", "--attributes", "VisibilityTimeout=60")["QueueUrl"]
    assert url == f"{server.url}/000000000000/MyQueue"
    assert _aws(server.url, "get-queue-attributes", "--queue-url", url, "--attribute-names", "VisibilityTimeout") == {
        "Attributes": {"VisibilityTimeout": "60"}
    }
    _aws(server.url, "set-queue-attributes", "--queue-url", url, "--attributes", "VisibilityTimeout=120")
    assert _aws(server.url, "get-queue-attributes", "--queue-url", url, "--attribute-names", "VisibilityTimeout") == {
        "Attributes": {"VisibilityTimeout": "120"}
    }
    _aws(server.url, "send-message", "--queue-url", url, "--message-body", "order #1")
    [m] = _aws(server.url, "receive-message", "--queue-url", url)["Messages"]
    _aws(server.url, "change-message-visibility", "--queue-url", url, "--receipt-handle", m["ReceiptHandle"], "--visibility-timeout", "300")
    a = _aws(server.url, "get-queue-attributes", "--queue-url", url, "--attribute-names", "ApproximateNumberOfMessagesNotVisible")
    assert a == {"Attributes": {"ApproximateNumberOfMessagesNotVisible": "1"}}
    _aws(server.url, "delete-message", "--queue-url", url, "--receipt-handle", m["ReceiptHandle"])


# ---------------------------------------------------------------------- the command


def test_serve_takes_db_region_and_account_from_the_main_groups_global_options(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from sqsqlite.cli.main import cli
    from sqsqlite.server import endpoint

    seen = []

    def recording(db_path, **kwargs):
        seen.append((db_path, kwargs["region"], kwargs["account_id"], kwargs["url_style"]))
        raise OSError(98, "stop here")

    monkeypatch.setattr(endpoint, "make_server", recording)
    glob = ["--db", str(tmp_path / "global.db"), "--region", "eu-west-1", "--account-id", "123456789012"]
    CliRunner().invoke(cli, [*glob, "serve", "--port", "0"])
    CliRunner().invoke(cli, [*glob, "serve", "--db", str(tmp_path / "own.db"), "--region", "ap-south-1", "--port", "0"])
    CliRunner().invoke(cli, ["serve", "--port", "0", "--url-style", "path"])
    assert seen == [
        (str(tmp_path / "global.db"), "eu-west-1", "123456789012", "off"),
        (str(tmp_path / "own.db"), "ap-south-1", "123456789012", "off"),
        (None, "us-east-1", "000000000000", "path"),
    ]
    refused = CliRunner().invoke(cli, ["serve", "--port", "0", "--url-style", "dynamic"])
    assert refused.exit_code == 252 and "'dynamic' is not one of 'off', 'standard', 'domain', 'path'" in refused.output


def test_serve_on_a_port_in_use_says_it_cannot_listen_there(tmp_path):
    from click.testing import CliRunner

    from sqsqlite.cli.main import cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "s.db"), "--port", str(port)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"Can't listen on 127.0.0.1:{port}" in result.output and "unexpected" not in result.output


def test_a_batch_entrys_system_attributes_are_checked_and_digested_as_a_single_sends_are(server, sqs):
    url = sqs.create_queue(QueueName="traced")["QueueUrl"]
    trace = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5759e988-bd862e3fe1be46a994272793"}}
    single = sqs.send_message(QueueUrl=url, MessageBody="a", MessageSystemAttributes=trace)
    batch = sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "b", "MessageSystemAttributes": trace}, {"Id": "2", "MessageBody": "c"}]
    )
    digests = {e["Id"]: e.get("MD5OfMessageSystemAttributes") for e in batch["Successful"]}
    assert digests == {"1": single["MD5OfMessageSystemAttributes"], "2": None}
    with pytest.raises(ClientError) as err:
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "d", "MessageSystemAttributes": {"Bogus": trace["AWSTraceHeader"]}}]
        )
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"] == {
        "ApproximateNumberOfMessages": "3"
    }


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--account-id", "12"], 252, "Invalid account id '12'"),
        (["--region", "a:b"], 252, "Invalid region 'a:b'"),
        ([], 255, "is not a SQLite database"),
    ],
)
def test_serve_refuses_a_bad_account_region_or_database_in_one_line(tmp_path, args, code, said):
    from click.testing import CliRunner

    from sqsqlite.cli.main import cli

    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"garbage" * 500)
    result = CliRunner().invoke(cli, ["serve", "--db", str(corrupt), "--port", "0", *args])
    assert result.exit_code == code and said in result.output
    assert "unexpected" not in result.output and "Traceback" not in result.output


# ---------------------------------------------------------------------- web pages of other sites


def _list_queues(url: str, **headers: str):
    return raw(url, b"{}", {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues", **headers})


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Host": "rebound.evil.example"},  # a DNS rebinding: the page's own name pointed at 127.0.0.1
        {"Host": "host.docker.internal:9324"},
    ],
    ids=[
        "another site's origin",
        "an opaque origin",
        "a cross-site fetch",
        "a same-site fetch",
        "a name that is not loopback",
        "Docker's name for the host, which any resolver may answer where Docker Desktop does not",
    ],
)
def test_without_keys_a_request_a_web_page_of_another_site_makes_is_refused_and_changes_nothing(server, headers):
    form = urllib.parse.urlencode({"Action": "CreateQueue", "QueueName": "planted"}).encode()
    status, got, answer = raw(server.url, form, {"Content-Type": "application/x-www-form-urlencoded", **headers})
    assert status == 403 and got["x-amzn-query-error"] == "AccessDenied;Sender", answer
    assert b"is denied." in answer
    assert not any("planted" in u for u in json.loads(_list_queues(server.url)[2]).get("QueueUrls", []))


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Sec-Fetch-Site": "none"},
        {"Sec-Fetch-Site": "same-origin"},
        {"Host": "localhost"},
        {"Host": "localhost.:9324"},
        {"Host": "sqs.localhost"},
        {"Host": "[::ffff:127.0.0.1]:9324"},
    ],
    ids=[
        "an SDK's",
        "an address typed in a browser",
        "the endpoint's own page",
        "localhost",
        "localhost fully qualified",
        "a name under .localhost",
        "an IPv4 loopback address in IPv6",
    ],
)
def test_without_keys_requests_from_this_machine_and_the_endpoints_own_origin_are_served(server, headers):
    assert _list_queues(server.url, **headers)[0] == 200
    host = server.url.removeprefix("http://")
    assert _list_queues(server.url, Origin=server.url, Host=host)[0] == 200


def test_a_malformed_origin_is_refused_as_another_sites(server):
    status, got, _ = _list_queues(server.url, Origin="http://[::1")
    assert status == 403 and got["x-amzn-query-error"] == "AccessDenied;Sender"


def test_a_name_given_with_allow_host_is_served_on_loopback_and_others_still_refused(tmp_path):
    with BackgroundServer(str(tmp_path / "alias.db"), allow_hosts=["sqs.alias"]) as s:
        assert _list_queues(s.url, Host="sqs.alias:9324")[0] == 200
        assert raw(s.url, b"", {"Host": "sqs.alias"}, method="GET", path="/console")[0] == 200  # the console too
        assert _list_queues(s.url, Host="other.alias:9324")[0] == 403


def test_names_under_an_allowed_host_are_served_as_its_url_styles_give_them(tmp_path):
    with BackgroundServer(str(tmp_path / "alias.db"), allow_hosts=["localhost.localstack.cloud"], url_style="standard") as s:
        assert _list_queues(s.url, Host="sqs.eu-west-1.localhost.localstack.cloud:4566")[0] == 200
        assert _list_queues(s.url, Host="eu-west-1.queue.localhost.localstack.cloud")[0] == 200
        assert _list_queues(s.url, Host="evillocalhost.localstack.cloud")[0] == 403
        assert _list_queues(s.url, Host="localhost.localstack.cloud.evil.example")[0] == 403


def test_consoles_given_one_secret_accept_each_other_s_form_tokens_and_share_their_banner_key(tmp_path):
    from sqsqlite.console.app import Console

    db = sqsqlite.connect(str(tmp_path / "shared.db"))
    one, other, own = Console(db, secret=b"s" * 32), Console(db, secret=b"s" * 32), Console(db)
    assert other.accepts_token(one.form_token()) and one.accepts_token(other.form_token())
    assert not own.accepts_token(one.form_token()) and not one.accepts_token(own.form_token())
    assert one.banner_key == other.banner_key != own.banner_key
    db.close()


def test_a_query_request_whose_body_is_not_a_form_is_refused_and_changes_nothing(server):
    status, got, _ = raw(server.url, b"Action=CreateQueue&QueueName=planted", {"Content-Type": "text/plain"})
    assert status == 400 and got["x-amzn-query-error"].startswith("InvalidParameterValue;")
    assert b"planted" not in _list_queues(server.url)[2]


def test_with_keys_a_signed_request_by_any_name_is_served(tmp_path):
    keys = {"access_key": CREDENTIALS["aws_access_key_id"], "secret_key": CREDENTIALS["aws_secret_access_key"]}
    with BackgroundServer(str(tmp_path / "signed.db"), **keys) as s:
        sqs = boto3_client(s.url)
        sqs.meta.events.register("before-sign.sqs.*", lambda request, **kw: request.headers.__setitem__("Host", "sqs.internal"))
        assert sqs.create_queue(QueueName="named")["QueueUrl"].endswith("/named")


def test_a_head_answer_carries_one_content_length(server):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"HEAD /console HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        head = _answer(s).lower()
    assert head.startswith("http/1.1 200") and head.count("content-length:") == 1, head
