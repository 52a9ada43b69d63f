"""The paths teams switching from other emulators call: /health, LocalStack's health and init
paths, and LocalStack's message look-up (/_aws/sqs/messages), which changes nothing."""

import base64
import http.client
import json
import threading
import xml.etree.ElementTree as ET

import pytest

from sqsqlite.clock import ManualClock
from sqsqlite.errors import DatabaseError
from sqsqlite.server import BackgroundServer
from sqsqlite.server.emulator import version
from tests.server.server_helpers import CREDENTIALS, boto3_client

NS = {"s": "http://queue.amazonaws.com/doc/2012-11-05/"}


def get(url, path, headers=None, method="GET", body=None):
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


@pytest.fixture(scope="module")
def clock():
    return ManualClock()


@pytest.fixture(scope="module")
def server(tmp_path_factory, clock):
    with BackgroundServer(str(tmp_path_factory.mktemp("emu") / "e.db"), clock=clock) as s:
        yield s


def test_health_answers_ok_and_the_version_as_small_json(server):
    status, headers, body = get(server.url, "/health")
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"status": "ok", "version": version()}


def test_localstacks_health_and_init_paths_answer_in_localstacks_shape_for_sqs(server):
    status, _, body = get(server.url, "/_localstack/health")
    assert status == 200 and b'"sqs": "running"' in body  # as wait scripts grep for it
    assert json.loads(body)["services"] == {"sqs": "running"}
    assert json.loads(get(server.url, "/_localstack/init/ready")[2]) == {"completed": True, "scripts": []}
    stages = json.loads(get(server.url, "/_localstack/init")[2])["completed"]
    assert stages == {"BOOT": True, "START": True, "READY": True, "SHUTDOWN": False}


def test_health_is_503_starting_while_the_queues_file_is_applied_and_sqs_requests_wait_with_503(tmp_path):
    from sqsqlite.server import make_server

    server = make_server(str(tmp_path / "s.db"), port=0)
    release = threading.Event()
    server.prepare_with(lambda: release.wait(30))
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        status, _, body = get(server.url, "/health")
        assert (status, json.loads(body)["status"]) == (503, "starting")
        assert json.loads(get(server.url, "/_localstack/init/ready")[2])["completed"] is False
        assert json.loads(get(server.url, "/_localstack/health")[2])["services"]["sqs"] == "starting"
        headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"}
        status, headers, body = get(server.url, "/", headers, "POST", b"{}")
        assert status == 503 and headers["x-amzn-query-error"] == "ServiceUnavailable;Receiver"
        release.set()
        for _ in range(200):
            if get(server.url, "/health")[0] == 200:
                break
            threading.Event().wait(0.01)
        assert get(server.url, "/health")[0] == 200
    finally:
        release.set()
        server.graceful_stop(5)
        thread.join(5)


def test_health_is_503_unavailable_when_the_database_cant_be_read(server, monkeypatch):
    def unreadable(*args, **kwargs):
        raise DatabaseError("The database file is not readable.")

    monkeypatch.setattr(server.db, "list_queues", unreadable)
    status, _, body = get(server.url, "/health")
    assert (status, json.loads(body)["status"]) == (503, "unavailable")
    assert json.loads(get(server.url, "/_localstack/health")[2])["services"]["sqs"] == "error"


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
    status, headers, body = get(server.url, f"/_aws/sqs/messages?QueueUrl={url}")
    assert status == 200 and headers["content-type"].startswith("text/xml")
    root = ET.fromstring(body)
    messages = root.findall("s:ReceiveMessageResult/s:Message", NS)
    assert [m.findtext("s:Body", namespaces=NS) for m in messages] == ["visible"]
    assert messages[0].findtext("s:ReceiptHandle", namespaces=NS) == "SQS/BACKDOOR/ACCESS"


def test_the_look_up_shows_every_state_when_asked_and_changes_none_of_them(server, states):
    sqs, url = states
    before = counts(sqs, url)
    path = "/_aws/sqs/messages/us-east-1/000000000000/looked?ShowInvisible=true&ShowDelayed=true"
    status, headers, body = get(server.url, path, {"Content-Type": "application/x-amz-json-1.0"})
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
    get(server.url, path)  # a second look sees the same receive counts: looking received nothing
    again = {m["Body"]: m for m in json.loads(get(server.url, path, {"Content-Type": "application/x-amz-json-1.0"})[2])["Messages"]}
    assert again["in flight"]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert again["visible"]["Attributes"]["ApproximateReceiveCount"] == "0"


def test_the_look_up_takes_the_queue_url_as_a_form_post_too(server, states):
    _, url = states
    status, _, body = get(
        server.url, "/_aws/sqs/messages", {"Content-Type": "application/x-www-form-urlencoded"}, "POST", f"QueueUrl={url}".encode()
    )
    assert status == 200 and b"<Body>visible</Body>" in body


def test_the_look_up_of_a_missing_queue_is_sqss_queue_does_not_exist(server):
    status, headers, body = get(server.url, "/_aws/sqs/messages?QueueUrl=http://localhost/000000000000/nope")
    assert status == 400 and headers["x-amzn-query-error"].startswith("AWS.SimpleQueueService.NonExistentQueue")
    status, _, body = get(server.url, "/_aws/sqs/messages", {"Content-Type": "application/x-amz-json-1.0"})
    assert status == 400 and json.loads(body)["__type"] == "com.amazonaws.sqs#QueueDoesNotExist"


def test_the_look_up_answers_only_names_of_this_machine_on_loopback(server, states):
    _, url = states
    status, _, _ = get(server.url, f"/_aws/sqs/messages?QueueUrl={url}", {"Host": "attacker.example"})
    assert status == 403


def test_with_keys_the_look_up_needs_them_as_basic_credentials_as_the_console_does(tmp_path):
    keys = {"access_key": CREDENTIALS["aws_access_key_id"], "secret_key": CREDENTIALS["aws_secret_access_key"]}
    with BackgroundServer(str(tmp_path / "k.db"), **keys) as s:
        sqs = boto3_client(s.url)
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        assert get(s.url, f"/_aws/sqs/messages?QueueUrl={url}")[0] == 401
        basic = base64.b64encode(f"{keys['access_key']}:{keys['secret_key']}".encode()).decode()
        assert get(s.url, f"/_aws/sqs/messages?QueueUrl={url}", {"Authorization": f"Basic {basic}"})[0] == 200
        assert get(s.url, "/health")[0] == 200  # a probe carries no keys


def test_metrics_count_these_paths_under_their_own_action(server):
    get(server.url, "/health")
    _, _, body = get(server.url, "/metrics")
    assert b'action="Emulator"' in body
