"""Uploads that would hold memory: with keys, a request that can't be signed is refused before its
body is read; and the bodies being received together hold at most the server's budget, past
which a body is refused 503 ServiceUnavailable before it is read (``max_receiving_bytes``).
Real sockets: what is sent and when is the point. The memory figures are the hostile-client
benchmark's (benchmarks/hostile.py)."""

from __future__ import annotations

import json
import socket

import pytest

from sqsqlite import defaults as D
from sqsqlite.server import BackgroundServer
from tests.server.server_helpers import CREDENTIALS, boto3_client

pytest.importorskip("uvicorn")

ACCESS, SECRET = CREDENTIALS["aws_access_key_id"], CREDENTIALS["aws_secret_access_key"]


def _announce(url: str, length: int, extra: str = "", chunked: bool = False) -> socket.socket:
    """A connection that has sent a JSON request's headers, announcing a body of ``length`` bytes
    (or chunked), and none of the body."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
    head = (
        f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"X-Amz-Target: AmazonSQS.ListQueues\r\n{extra}{framing}\r\n\r\n"
    )
    sock.sendall(head.encode())
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The answer on the connection, read to its end (the server closes it after)."""
    data = b""
    while True:
        try:
            part = sock.recv(65536)
        except ConnectionResetError:
            break
        if not part:
            break
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


@pytest.fixture
def keyed(tmp_path):
    with BackgroundServer(str(tmp_path / "keyed.db"), access_key=ACCESS, secret_key=SECRET) as s:
        yield s


SHAPES = [
    ("no Authorization", "", 403, "MissingAuthenticationToken"),
    ("another scheme", "Authorization: Basic dXNlcjpwYXNz\r\n", 400, "IncompleteSignature"),
    (
        "another access key",
        "X-Amz-Date: 20261127T000000Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIDOTHER/20261127/us-east-1/sqs/aws4_request, "
        "SignedHeaders=host, Signature=00\r\n",
        403,
        "InvalidClientTokenId",
    ),
]


@pytest.mark.parametrize("what, header, status, code", SHAPES, ids=[s[0] for s in SHAPES])
def test_with_keys_a_request_that_cannot_be_signed_is_refused_before_its_body_is_sent(keyed, what, header, status, code):
    sock = _announce(keyed.url, 4 * 1024 * 1024, header)
    try:
        got, headers, body = _answer(sock)  # answered with not a byte of the 4 MiB sent
    finally:
        sock.close()
    assert (got, json.loads(body)["__type"].rsplit("#", 1)[1].removesuffix("Exception")) in (
        (status, code),
        (status, {"InvalidClientTokenId": "UnrecognizedClient"}.get(code, code)),
    )
    assert headers["connection"] == "close"
    assert keyed.server.app.receiving == 0


def test_with_keys_a_signed_request_is_still_read_and_served(keyed):
    sqs = boto3_client(keyed.url)
    url = sqs.create_queue(QueueName="kept")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="x" * 200_000)  # past the free 64 KiB: counted, then let go
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "x" * 200_000
    assert keyed.server.app.receiving == 0


@pytest.fixture
def budget(tmp_path):
    with BackgroundServer(str(tmp_path / "budget.db"), max_receiving_bytes=1024 * 1024) as s:
        yield s


def test_bodies_past_the_receiving_budget_are_refused_503_unread_and_small_requests_go_on(budget):
    big = 700 * 1024  # two of them are more than the 1 MiB budget once the free 64 KiB each are taken off
    first = _announce(budget.url, big)
    first.sendall(b"{" + b" " * 1000)  # under way, and holding its share
    sqs = boto3_client(budget.url)
    try:
        sqs.list_queues()  # the server has taken the first body's headers
        assert budget.server.app.receiving == big - D.BODY_FREE_BYTES
        second = _announce(budget.url, big)
        status, headers, body = _answer(second)
        second.close()
        assert status == 503 and headers["connection"] == "close"
        assert json.loads(body)["__type"].endswith("ServiceUnavailable")
        assert json.loads(body)["message"] == "The request has failed due to a temporary failure of the server."
        # A request whose body is under the free 64 KiB never waits on the budget.
        url = sqs.create_queue(QueueName="small")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="y" * 60_000)
        first.sendall(b" " * (big - 1001 - 1) + b"}")
        status, _ = _answer_keepalive(first)
        assert status == 200
    finally:
        first.close()
    assert budget.server.app.receiving == 0 and budget.server.app.shed == 1
    # The budget let go, a body of that size is read again.
    again = _announce(budget.url, big)
    again.sendall(b"{" + b" " * (big - 2) + b"}")
    assert _answer_keepalive(again)[0] == 200
    again.close()


def test_a_chunked_body_growing_past_the_budget_is_refused_503(budget):
    holder = _announce(budget.url, 900 * 1024)
    holder.sendall(b"{")
    boto3_client(budget.url).list_queues()
    sock = _announce(budget.url, 0, chunked=True)
    try:
        piece = b" " * 100_000
        for _ in range(3):  # 300 KB: more than the 1 MiB budget leaves once 836 KiB are held
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        status, _, _ = _answer(sock)
    finally:
        sock.close()
        holder.close()
    assert status == 503


def _answer_keepalive(sock: socket.socket) -> tuple[int, bytes]:
    """The status of one answer on a kept-alive connection (read up to its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(v) for k, _, v in (line.partition(":") for line in lines[1:]) if k.lower() == "content-length")
    while len(body) < length:
        body += sock.recv(65536)
    return int(lines[0].split()[1]), body


def _post_form(url: str, length: int, extra: str = "", path: str = "/console/queues/q/purge") -> socket.socket:
    """A connection that has sent a form POST's headers announcing ``length`` bytes, and no body."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n{extra}Content-Length: {length}\r\n\r\n"
    sock.sendall(head.encode())
    return sock


@pytest.mark.parametrize("console_only", [True, False], ids=["sqsqlite console", "serve's /console"])
def test_the_console_refuses_an_upload_it_would_refuse_anyway_before_reading_it(tmp_path, console_only):
    import base64

    keys = "Authorization: Basic " + base64.b64encode(f"{ACCESS}:{SECRET}".encode()).decode() + "\r\n"
    with BackgroundServer(str(tmp_path / "c.db"), access_key=ACCESS, secret_key=SECRET, console_only=console_only) as s:
        for extra, status in (("", 401), (keys, 413)):  # no credentials; a form larger than the console reads
            sock = _post_form(s.url, 4 * 1024 * 1024, extra)
            try:
                got, headers, _ = _answer(sock)  # answered with not a byte of the 4 MiB sent
            finally:
                sock.close()
            assert (got, headers["connection"]) == (status, "close")
        assert s.server.app.receiving == 0


@pytest.mark.parametrize(
    "path,status",
    [("/health", 405), ("/_localstack/health", 405), ("/_aws/sqs/messages", 401), ("/_aws/sqs/messages/us-east-1/000000000000/q", 401)],
)
def test_with_keys_the_emulators_paths_refuse_an_unauthenticated_body_before_reading_it(keyed, path, status):
    host, port = keyed.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {4 * 1024 * 1024}\r\n\r\n".encode())
    answered, headers, _ = _answer(sock)  # answered at once, the 4 MiB never sent
    sock.close()
    assert answered == status and headers.get("connection") == "close"
    assert keyed.server.app.receiving == 0


def test_a_look_up_body_larger_than_a_form_is_refused_before_it_is_read(tmp_path):
    with BackgroundServer(str(tmp_path / "open.db")) as server:
        host, port = server.url.removeprefix("http://").split(":")
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(f"POST /_aws/sqs/messages HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {1024 * 1024}\r\n\r\n".encode())
        answered, headers, _ = _answer(sock)
        sock.close()
    assert answered == 413 and headers.get("connection") == "close"
