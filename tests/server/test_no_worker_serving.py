"""While no worker of ``serve --workers N`` is serving (all dead, waiting out a crash loop's pause),
the parent answers on the listening socket itself: /health 503 and SQS requests 503
ServiceUnavailable, which the SDKs retry, rather than leaving connections in the backlog until
the clients' read timeout. Real processes, each bounded to seconds."""

from __future__ import annotations

import socket
import sys
import threading

import pytest

from sqsqlite.server.workers import run_workers

pytest.importorskip("uvicorn")

# A worker that says it serves, then dies at once, every time: a crash loop, no worker serving.
CRASH_AT_ONCE = """
import json, os, sys
options = json.loads(os.environ["SQSQLITE_WORKER_OPTIONS"])
os.write(options["status_fd"], f"{os.getpid()} ready\\n".encode())
sys.exit(1)
"""


def _ask(port: int, request: bytes) -> bytes:
    """The whole answer to one request (the answerer closes the connection), within a bound."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


@pytest.fixture
def crash_looping():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    port = sock.getsockname()[1]
    stop = threading.Event()
    runner = threading.Thread(target=run_workers, args=({}, 1, sock), kwargs={"argv": [sys.executable, "-c", CRASH_AT_ONCE], "stop": stop})
    runner.start()
    try:
        yield port
    finally:
        stop.set()
        runner.join(30)


def test_an_sqs_request_while_no_worker_serves_is_answered_503_service_unavailable(crash_looping):
    body = b'{"QueueUrl": "http://127.0.0.1/000000000000/q", "MessageBody": "once"}'
    answer = _ask(
        crash_looping,
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.0\r\n"
        b"X-Amz-Target: AmazonSQS.SendMessage\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
    )
    head, _, text = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ")
    assert b"Connection: close" in head
    assert b"ServiceUnavailable" in text


def test_health_while_no_worker_serves_is_503(crash_looping):
    answer = _ask(crash_looping, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 503 ")
