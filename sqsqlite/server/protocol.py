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

BASE: type[asyncio.Protocol] = AutoHTTPProtocol


class HeaderDeadline(asyncio.Protocol):
    """Mixed in before one of uvicorn's HTTP/1.1 protocols, whose loop, transport, cycle and
    keep-alive timer it uses."""

    header_timeout: float
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    timeout_keep_alive_task: asyncio.TimerHandle | None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        super().connection_made(transport)
        self.header_deadline: float | None = self.loop.time() + self.header_timeout
        self.timeout_keep_alive_task = self.loop.call_at(self.header_deadline, self.headers_too_late)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # A request's headers are in (its body or its answer may still be coming).
            self.header_deadline = None
        elif not self.transport.is_closing():
            # Part of the next request's headers: uvicorn cancelled its timer on this read.
            if self.header_deadline is None:
                self.header_deadline = self.loop.time() + self.header_timeout
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


def with_header_timeout(header_timeout: float, base: type[asyncio.Protocol] | None = None) -> type[asyncio.Protocol]:
    """``base`` (default BASE) with a deadline of ``header_timeout`` seconds for each request's headers."""
    base = base or BASE
    return type(f"HeaderDeadline{base.__name__}", (HeaderDeadline, base), {"header_timeout": header_timeout})
