"""uvicorn's HTTP/1.1 protocol with a deadline for each request's headers.

uvicorn times a connection only between a response and the next request's first byte (its
keep-alive timeout): one that never completes a request's headers, silent from the start or
trickling them a byte at a time, it holds for ever, a descriptor each. Here a connection that has
made no request yet must complete its first request's headers within the header timeout of
connecting, and once a later request's first byte arrives, that request's headers within the
header timeout of it; past the deadline the connection is closed. A silent keep-alive connection
between requests is left to the idle timeout, as before. Nothing is timed once a request's
headers are in: its body's pauses are the application's to time (asgi.py), and a long poll waits
as long as it asks.

A request's line and headers are also held to a size (D.MAX_HEADER_BYTES): past it, the answer is
a plain 431 and the connection closes. h11 refuses more than 16 KiB by itself, httptools nothing,
so a connection could otherwise fill the worker's memory with one header for the timeout's length.

The deadline rides on uvicorn's own keep-alive timer, which both of its HTTP/1.1 protocols (h11
and httptools) cancel on every read and whenever a request begins: a request that arrives
whole, as nearly all do, costs one look at the connection's state after the read and no timer
of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

# The protocol the deadline is added to: uvicorn's choice for http="auto" (httptools when
# installed, else h11).
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from .. import defaults as D

BASE: type[asyncio.Protocol] = AutoHTTPProtocol

# Before the request is parsed there is no SQS protocol to answer in: plain text, as uvicorn's own
# 400 for a request it cannot parse.
_TOO_LARGE_TEXT = b"Request header fields too large."
TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE_TEXT), _TOO_LARGE_TEXT)
)


class HeaderDeadline(asyncio.Protocol):
    """Mixed in before one of uvicorn's HTTP/1.1 protocols, whose loop, transport, cycle and
    keep-alive timer it uses."""

    header_timeout: float
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    timeout_keep_alive_task: asyncio.TimerHandle | None
    # Whether the parser is inside a request's line and headers: httptools says so by its
    # callbacks (h11 has none, and refuses more than 16 KiB of headers itself). It keeps a
    # request sent behind one still being answered (pipelined: behind a long poll, say) from
    # reading as that request's body: its headers are timed and counted too.
    in_headers = False

    def on_message_begin(self) -> None:
        super().on_message_begin()  # type: ignore[misc]  # httptools' protocol's own
        self.in_headers = True

    def on_headers_complete(self) -> None:
        self.in_headers = False
        super().on_headers_complete()  # type: ignore[misc]  # httptools' protocol's own

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        super().connection_made(transport)
        self.header_deadline: float | None = self.loop.time() + self.header_timeout
        self.header_bytes = 0
        self.timeout_keep_alive_task = self.loop.call_at(self.header_deadline, self.headers_too_late)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        cycle = self.cycle
        answering = cycle is not None and not cycle.response_complete
        if answering and not self.in_headers:
            # A request's headers are in (its body or its answer may still be coming).
            self.header_deadline = None
        elif not self.transport.is_closing():
            # Part of the next request's headers: uvicorn cancelled its timer on this read.
            if self.header_deadline is None:
                self.header_deadline = self.loop.time() + self.header_timeout
                self.header_bytes = 0
            self.header_bytes += len(data)
            if self.header_bytes > D.MAX_HEADER_BYTES:
                if not answering:  # else a 431 would go out ahead of the earlier request's answer
                    self.transport.write(TOO_LARGE)
                self.transport.close()
                return
            if self.timeout_keep_alive_task is not None:
                self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = self.loop.call_at(self.header_deadline, self.headers_too_late)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        # uvicorn cancels the timer only on a clean close; a reset would leave it holding us.
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None

    def headers_too_late(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()


def with_header_timeout(header_timeout: float) -> type[asyncio.Protocol]:
    """BASE with a deadline of ``header_timeout`` seconds for each request's headers."""
    return type(f"HeaderDeadline{BASE.__name__}", (HeaderDeadline, BASE), {"header_timeout": header_timeout})
