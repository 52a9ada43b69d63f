"""The paths teams switching from other emulators call: /health, LocalStack's health and init
paths, and LocalStack's message look-up (/_aws/sqs/messages), which changes nothing."""

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from sqsqlite.clock import ManualClock
from sqsqlite.errors import DatabaseError
from sqsqlite.server import BackgroundServer
from sqsqlite.server.emulator import version
from tests.server.server_helpers import CREDENTIALS, boto3_client, http_request, manual_clock_server

NS = {"s": "http://queue.amazonaws.com/doc/2012-11-05/"}


@pytest.fixture(scope="module")
def clock():
    return ManualClock()


@pytest.fixture(scope="module")
def server(tmp_path_factory, clock):
    with manual_clock_server(tmp_path_factory.mktemp("emu"), clock) as s:
        yield s


def test_health_answers_ok_and_the_version_as_small_json(server):
    status, headers, body = http_request(server.url, "/health")
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"status": "ok", "version": version()}


def test_localstacks_health_and_init_paths_answer_in_localstacks_shape_for_sqs(server):
    status, _, body = http_request(server.url, "/_localstack/health")
    assert status == 200 and b'"sqs": "running"' in body  # as wait scripts grep for it
    assert json.loads(body)["services"] == {"sqs": "running"}
    assert json.loads(http_request(server.url, "/_localstack/init/ready")[2]) == {"completed": True, "scripts": []}
    stages = json.loads(http_request(server.url, "/_localstack/init")[2])["completed"]
    assert stages == {"BOOT": True, "START": True, "READY": True, "SHUTDOWN": False}


def test_while_starting_the_port_answers_health_503_starting_and_sqs_requests_503_in_sqs_shape(tmp_path):
    from sqsqlite.server import make_server
    from sqsqlite.server.endpoint import listen
    from sqsqlite.server.starting import Starting

    sock = listen("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with Starting(sock, 1 << 20):
        status, headers, body = http_request(url, "/health")
        assert (status, json.loads(body)) == (503, {"status": "starting", "version": version()})
        assert headers["connection"] == "close"
        assert json.loads(http_request(url, "/_localstack/health")[2])["services"]["sqs"] == "starting"
        assert json.loads(http_request(url, "/_localstack/init/ready")[2]) == {"completed": False, "scripts": []}
        assert json.loads(http_request(url, "/_localstack/init")[2])["completed"]["READY"] is False
        headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"}
        status, headers, body = http_request(url, "/", headers, "POST", b"{}")
        assert status == 503 and headers["x-amzn-query-error"] == "ServiceUnavailable;Receiver"
        assert json.loads(body)["__type"] == "com.amazonaws.sqs#ServiceUnavailable"
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        status, _, body = http_request(url, "/", form, "POST", b"Action=SendMessage&MessageBody=" + b"x" * 200_000)
        assert status == 503 and ET.fromstring(body).find(".//s:Code", NS).text == "ServiceUnavailable"
        # A client waiting for "100 Continue" before its body is answered without it.
        with socket.create_connection(sock.getsockname()[:2], timeout=30) as raw:
            raw.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9000000\r\nExpect: 100-continue\r\n\r\n")
            assert raw.makefile("rb").readline().startswith(b"HTTP/1.1 503 ")
    # Stopped, it leaves the socket listening for the endpoint, which then serves on it.
    server = make_server(str(tmp_path / "s.db"), sock=sock)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        status, _, body = http_request(url, "/health")
        assert (status, json.loads(body)["status"]) == (200, "ok")
    finally:
        server.graceful_stop(5)
        thread.join(5)


# `sqsqlite serve` with its database migration held until the test lets it go: what a probe sees
# of a migration or a queues file that takes its time.
HELD_SERVE = """
import sys
import sqsqlite.migrate

upgrade = sqsqlite.migrate.upgrade
gate_path = sys.argv[1]

def held(store, revision="head"):
    with open(gate_path) as gate:  # a FIFO: blocks until the test opens it, reads until it closes it
        gate.read()
    return upgrade(store, revision)

sqsqlite.migrate.upgrade = held
from sqsqlite.cli.entry import main
sys.argv = ["sqsqlite", *sys.argv[2:]]
main()
"""


def answer_when_listening(url, path, headers=None, method="GET", body=None, limit=30.0):
    """The first answer to ``path`` once the port accepts connections (bounded)."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return http_request(url, path, headers, method, body)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def test_serve_listens_before_migrating_and_answers_503_starting_until_the_database_is_ready(tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    db = tmp_path / "new.db"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    args = [
        sys.executable,
        "-c",
        HELD_SERVE,
        str(gate),
        "--db",
        str(db),
        "serve",
        "--port",
        str(port),
        "--queues",
        str(tmp_path / "q.yaml"),
    ]
    (tmp_path / "q.yaml").write_text("queues:\n  - name: orders\n")
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        status, _, body = answer_when_listening(url, "/health")
        assert (status, json.loads(body)["status"]) == (503, "starting")  # the migration is held
        json_call = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.GetQueueUrl"}
        status, headers, _ = http_request(url, "/", json_call, "POST", b'{"QueueName": "orders"}')
        assert status == 503 and headers["x-amzn-query-error"] == "ServiceUnavailable;Receiver"
        with open(gate, "w") as g:  # let the migration go on
            g.write("go")
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "sqsqlite serving" in line:
                break
        assert "queues from" in "".join(lines) and "created 1" in "".join(lines)
        status, _, body = http_request(url, "/health")
        assert (status, json.loads(body)["status"]) == (200, "ok")
        status, _, body = http_request(url, "/", json_call, "POST", b'{"QueueName": "orders"}')
        assert status == 200 and json.loads(body)["QueueUrl"].endswith("/orders")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(30) == 0
        finally:
            proc.kill()


def test_health_is_503_unavailable_when_the_database_cant_be_read(server, monkeypatch):
    def unreadable(*args, **kwargs):
        raise DatabaseError("The database file is not readable.")

    monkeypatch.setattr(server.db, "list_queues", unreadable)
    status, _, body = http_request(server.url, "/health")
    assert (status, json.loads(body)["status"]) == (503, "unavailable")
    assert json.loads(http_request(server.url, "/_localstack/health")[2])["services"]["sqs"] == "error"


@pytest.fixture(scope="module")
def states(server, clock):
    """A queue holding one message in each state: visible, in flight, delayed."""
    sqs = boto3_client(server.url)
    url = sqs.create_queue(QueueName="looked")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="in flight")
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)
    sqs.send_message(QueueUrl=url, MessageBody="visible", MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
    sqs.send_message(QueueUrl=url, MessageBody="delayed", DelaySeconds=600)
    return sqs, url


def counts(sqs, url):
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]


def test_the_look_up_answers_visible_messages_as_a_receive_would_in_xml_by_default(server, states):
    sqs, url = states
    status, headers, body = http_request(server.url, f"/_aws/sqs/messages?QueueUrl={url}")
    assert status == 200 and headers["content-type"].startswith("text/xml")
    root = ET.fromstring(body)
    messages = root.findall("s:ReceiveMessageResult/s:Message", NS)
    assert [m.findtext("s:Body", namespaces=NS) for m in messages] == ["visible"]
    assert messages[0].findtext("s:ReceiptHandle", namespaces=NS) == "SQS/BACKDOOR/ACCESS"


def test_the_look_up_shows_every_state_when_asked_and_changes_none_of_them(server, states):
    sqs, url = states
    before = counts(sqs, url)
    path = "/_aws/sqs/messages/us-east-1/000000000000/looked?ShowInvisible=true&ShowDelayed=true"
    status, headers, body = http_request(server.url, path, {"Content-Type": "application/x-amz-json-1.0"})
    assert status == 200 and headers["content-type"] == "application/x-amz-json-1.0"
    found = {m["Body"]: m for m in json.loads(body)["Messages"]}
    assert set(found) == {"visible", "in flight", "delayed"}
    flags = {b: (m["Attributes"]["IsVisible"], m["Attributes"]["IsDelayed"]) for b, m in found.items()}
    assert flags == {"visible": ("true", "false"), "in flight": ("false", "false"), "delayed": ("false", "true")}
    assert found["visible"]["MessageAttributes"]["k"]["StringValue"] == "v"
    assert found["in flight"]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert (
        counts(sqs, url)
        == before
        == {
            "ApproximateNumberOfMessages": "1",
            "ApproximateNumberOfMessagesNotVisible": "1",
            "ApproximateNumberOfMessagesDelayed": "1",
        }
    )
    http_request(server.url, path)  # a second look sees the same receive counts: looking received nothing
    again = {
        m["Body"]: m for m in json.loads(http_request(server.url, path, {"Content-Type": "application/x-amz-json-1.0"})[2])["Messages"]
    }
    assert again["in flight"]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert again["visible"]["Attributes"]["ApproximateReceiveCount"] == "0"


def test_the_look_up_takes_the_queue_url_as_a_form_post_too(server, states):
    _, url = states
    status, _, body = http_request(
        server.url, "/_aws/sqs/messages", {"Content-Type": "application/x-www-form-urlencoded"}, "POST", f"QueueUrl={url}".encode()
    )
    assert status == 200 and b"<Body>visible</Body>" in body


def test_the_look_up_of_a_missing_queue_is_sqss_queue_does_not_exist(server):
    status, headers, body = http_request(server.url, "/_aws/sqs/messages?QueueUrl=http://localhost/000000000000/nope")
    assert status == 400 and headers["x-amzn-query-error"].startswith("AWS.SimpleQueueService.NonExistentQueue")
    status, _, body = http_request(server.url, "/_aws/sqs/messages", {"Content-Type": "application/x-amz-json-1.0"})
    assert status == 400 and json.loads(body)["__type"] == "com.amazonaws.sqs#QueueDoesNotExist"


def test_the_look_up_answers_only_names_of_this_machine_on_loopback(server, states):
    _, url = states
    status, _, _ = http_request(server.url, f"/_aws/sqs/messages?QueueUrl={url}", {"Host": "attacker.example"})
    assert status == 403


def test_with_keys_the_look_up_needs_them_as_basic_credentials_as_the_console_does(tmp_path):
    keys = {"access_key": CREDENTIALS["aws_access_key_id"], "secret_key": CREDENTIALS["aws_secret_access_key"]}
    with BackgroundServer(str(tmp_path / "k.db"), **keys) as s:
        sqs = boto3_client(s.url)
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        assert http_request(s.url, f"/_aws/sqs/messages?QueueUrl={url}")[0] == 401
        basic = base64.b64encode(f"{keys['access_key']}:{keys['secret_key']}".encode()).decode()
        assert http_request(s.url, f"/_aws/sqs/messages?QueueUrl={url}", {"Authorization": f"Basic {basic}"})[0] == 200
        assert http_request(s.url, "/health")[0] == 200  # a probe carries no keys


def test_metrics_count_these_paths_under_their_own_action(server):
    http_request(server.url, "/health")
    _, _, body = http_request(server.url, "/metrics")
    assert b'action="Emulator"' in body


def test_the_look_up_reaches_the_queue_of_the_region_its_request_is_signed_for(server):
    west = boto3_client(server.url, region_name="eu-west-1")
    url = west.create_queue(QueueName="look-west")["QueueUrl"]  # the plain style: the URL names no region
    west.send_message(QueueUrl=url, MessageBody="eu-west-1's")
    boto3_client(server.url).create_queue(QueueName="look-west")  # us-east-1's, empty
    look_up = boto3_client(server.url + "/_aws/sqs/messages", region_name="eu-west-1")
    assert [m["Body"] for m in look_up.receive_message(QueueUrl=url)["Messages"]] == ["eu-west-1's"]
