"""Each answer the endpoint gives reaches the socket in one write, its head with its body: a
worker killed between uvicorn's two writes left a client ``200, Content-Length: 106`` and no
body, which boto3 took for an empty answer. Driven through the endpoint's own HTTP protocol on a
transport that records the writes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")

from uvicorn.server import ServerState  # noqa: E402

from sqsqlite.server.endpoint import http_protocol  # noqa: E402

BODY = b'{"MessageId": "5fea7756-0ea4-451a-a703-a558b933e274", "MD5OfMessageBody": "f1b1d8d8e3b0ed9a0d5b2c8e7a1b2c3d"}'


class _Recording(asyncio.Transport):
    """A connection's transport that keeps what is written, one entry a write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.before_close: list[bytes] = []  # what was written while the connection was open
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 9324), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _app(scope: dict, receive: Any, send: Any) -> None:
    """Answers as the endpoint's App._respond does: the head, then the body, two ASGI messages."""
    if scope["type"] != "http":
        return
    await receive()
    headers = [(b"content-type", b"application/x-amz-json-1.0"), (b"content-length", str(len(BODY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else BODY})


async def _answers(requests: bytes, count: int) -> _Recording:
    config = uvicorn.Config(_app, http=http_protocol(5.0), lifespan="off", log_level="warning")
    config.load()
    protocol = config.http_protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = _Recording()
    protocol.connection_made(transport)
    protocol.data_received(requests)
    for _ in range(200):  # the app's tasks run on the loop: a bounded number of turns
        if sum(BODY in w or w.startswith(b"HTTP/1.1 200") for w in transport.writes) >= count:
            break
        await asyncio.sleep(0.01)
    transport.before_close = list(transport.writes)
    protocol.connection_lost(None)
    return transport


def test_an_answer_is_written_to_the_socket_in_one_write_head_and_body_together():
    transport = asyncio.run(_answers(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 1))
    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b"content-length: %d" % len(BODY) in head
    assert body == BODY


def test_answers_on_one_kept_alive_connection_are_each_written_whole():
    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    transport = asyncio.run(_answers(request * 3, 3))
    assert len(transport.writes) == 3
    assert all(w.startswith(b"HTTP/1.1 200 ") and w.endswith(BODY) for w in transport.writes)


def test_a_head_answer_goes_out_whole_without_a_body_while_the_connection_stays_open():
    transport = asyncio.run(_answers(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", 1))
    assert len(transport.before_close) == 1  # not held until the keep-alive connection closes
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 ") and transport.writes[0].endswith(b"\r\n\r\n")
