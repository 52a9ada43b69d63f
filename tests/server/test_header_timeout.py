"""The endpoint's header timeout and size limit, on real sockets under both of uvicorn's HTTP/1.1
parsers: a connection that doesn't complete a request's headers in time, or sends too many of
them, is closed; requests, keep-alive and long polls are not cut."""

import json
import select
import socket
import time

import pytest

from sqsqlite.server import BackgroundServer, protocol

pytestmark = pytest.mark.slow

BOUND = 0.5  # the header timeout these servers get (seconds)
LIST_QUEUES = (
    b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-amz-json-1.0\r\n"
    b"X-Amz-Target: AmazonSQS.ListQueues\r\nContent-Length: 2\r\n\r\n{}"
)


@pytest.fixture(params=["httptools", "h11"])
def parser(request, monkeypatch) -> str:
    if request.param == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        monkeypatch.setattr(protocol, "BASE", H11Protocol)
    else:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        monkeypatch.setattr(protocol, "BASE", HttpToolsProtocol)
    return request.param


@pytest.fixture
def server(parser, tmp_path):
    with BackgroundServer(str(tmp_path / "s.db"), header_timeout=BOUND) as s:
        yield s


def connect(server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes sock within seconds (it sends nothing meanwhile)."""
    readable, _, _ = select.select([sock], [], [], seconds)
    if not readable:
        return False
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:  # closed with bytes of ours still unread: the kernel sends a reset
        return True


def exchange(sock: socket.socket, request: bytes) -> tuple[int, bytes]:
    """Send request and read its answer (status, body), leaving the connection open."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(v) for k, _, v in (line.partition(":") for line in lines[1:]) if k.strip().lower() == "content-length")
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        body += chunk
    return int(lines[0].split()[1]), body


def json_request(action: str, members: dict) -> bytes:
    body = json.dumps(members).encode()
    return (
        b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-amz-json-1.0\r\n"
        + f"X-Amz-Target: AmazonSQS.{action}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def test_a_connection_that_sends_nothing_is_closed_once_the_header_timeout_passes(server):
    started = time.monotonic()
    with connect(server) as silent:
        assert closed_within(silent, 5 * BOUND)  # closed, within five times its timeout however busy the machine
    assert time.monotonic() - started >= BOUND - 0.1  # and not before it


def trickle_until_closed(sock: socket.socket, data: bytes, every: float) -> float | None:
    """Send data a byte every ``every`` seconds until the server closes sock: when it did
    (seconds after the first byte), or None if all of data went and it stayed open."""
    started = time.monotonic()
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except OSError:  # reset: closed before this byte
            return time.monotonic() - started
        if closed_within(sock, every):
            return time.monotonic() - started
    return None


def test_a_connection_trickling_its_headers_is_closed_at_the_header_timeout_however_often_a_byte_comes(server):
    with connect(server) as trickling:
        closed = trickle_until_closed(trickling, LIST_QUEUES[:40], BOUND / 5)  # 40 bytes: 4 s at this pace
    # Closed while bytes still came (a timeout each byte put off would never close it), within
    # five times the timeout: 2.5 s of the trickle's 4.
    assert closed is not None and closed <= 5 * BOUND, closed


def test_the_next_requests_headers_trickling_on_a_kept_alive_connection_are_closed_at_the_header_timeout(server):
    with connect(server) as sock:
        assert exchange(sock, LIST_QUEUES)[0] == 200
        closed = trickle_until_closed(sock, LIST_QUEUES[:40], BOUND / 5)
    assert closed is not None and closed <= 5 * BOUND, closed


def test_a_keep_alive_client_sending_requests_is_served_on_one_connection_past_the_header_timeout(server):
    with connect(server) as sock:
        for pause in (0.3, 0.3, BOUND + 0.3):  # the last, a silent idle gap longer than the bound
            assert exchange(sock, LIST_QUEUES)[0] == 200
            time.sleep(pause)
        sock.sendall(LIST_QUEUES[:20])  # a request's headers in two parts, within the bound
        time.sleep(BOUND / 10)  # well within it, however late the sleep ends on a busy machine
        assert exchange(sock, LIST_QUEUES[20:])[0] == 200


def test_a_long_poll_waiting_longer_than_the_header_timeout_is_answered(server):
    with connect(server) as sock:
        status, body = exchange(sock, json_request("CreateQueue", {"QueueName": "q"}))
        assert status == 200
        url = json.loads(body)["QueueUrl"]
        started = time.monotonic()
        status, body = exchange(sock, json_request("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 1}))
        assert status == 200 and json.loads(body).get("Messages", []) == []
        assert time.monotonic() - started >= 0.9  # it waited its second, past the header timeout
        assert exchange(sock, LIST_QUEUES)[0] == 200  # and the connection is still kept alive


def until_closed(sock: socket.socket, seconds: float) -> tuple[bytes, bool]:
    """What the server sends on sock, and whether it closed the connection, within seconds."""
    data, deadline = b"", time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([sock], [], [], left)[0]:
            break
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:  # closed with our last bytes unread
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def test_headers_larger_than_the_limit_are_refused_before_they_end_and_the_connection_closed(parser, tmp_path):
    from sqsqlite import defaults as D

    with BackgroundServer(str(tmp_path / "s.db"), header_timeout=10) as server:
        with connect(server) as sock:  # a header of 12 KiB is served
            assert exchange(sock, LIST_QUEUES.replace(b"Host:", b"X-Pad: " + b"a" * 12 * 1024 + b"\r\nHost:"))[0] == 200
        with connect(server) as sock:
            sock.sendall(LIST_QUEUES[:40] + b"X-Big: " + b"a" * (D.MAX_HEADER_BYTES + 1024))  # headers not ended
            answer, closed = until_closed(sock, 3)
    assert closed, answer  # long before the header timeout
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer  # httptools: 431; h11 (its own 16 KiB limit): 400


def test_a_request_sent_behind_a_long_poll_is_held_to_the_header_limit_too(parser, tmp_path):
    # Pipelined: the poll is being answered while the next request's headers arrive; they are
    # counted as any request's (httptools read and kept them whole).
    if parser == "h11":
        pytest.skip("uvicorn's h11 protocol reads nothing while a request is answered: the bytes wait in the kernel's buffers")
    from sqsqlite import defaults as D

    with BackgroundServer(str(tmp_path / "s.db"), header_timeout=10) as server:
        url = server.db.create_queue("q").url
        body = json.dumps({"QueueUrl": url, "WaitTimeSeconds": 2}).encode()
        poll = (
            b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-amz-json-1.0\r\n"
            b"X-Amz-Target: AmazonSQS.ReceiveMessage\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        with connect(server) as sock:
            sock.sendall(poll + LIST_QUEUES[:40] + b"X-Big: " + b"a" * (D.MAX_HEADER_BYTES + 1024))  # not ended
            answer, closed = until_closed(sock, 1.5)  # before the poll's 2 s are up
    assert closed, answer
