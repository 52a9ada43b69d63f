"""The HTTP endpoint: SQS's JSON 1.0 and query protocols over the action layer, served by uvicorn.

One event loop per process (uvloop and httptools when installed, as ``uvicorn[standard]``
brings them): a connection or a parked long poll costs a few kilobytes, not a thread. Engine
calls run on a small thread pool (``asgi.py``), each thread with its own SQLite connection.
``sqsqlite serve --workers N`` runs N such processes on one listening socket (``workers.py``);
a send in any of them wakes long polls in the others (``longpoll/peers.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import uvicorn

from .. import console
from .. import defaults as D
from ..console import is_loopback
from ..longpoll import WATCH_MIN_GAP, Peers
from .asgi import INLINE_BELOW, MAX_REQUEST_BYTES, App
from .dispatch import Dispatcher
from .emulator import EmulatorRoutes
from .protocol import with_header_timeout
from .served import ServedDatabase
from .sigv4 import Verifier

log = logging.getLogger("sqsqlite.server")

# How long an idle keep-alive connection is kept (seconds).
IDLE_TIMEOUT = 75
# Threads that run engine calls, per process: SQLite work is short and serialised by the write
# lock, so a few threads keep the loop free while one waits on a lock (docs/howto/server.md).
ENGINE_THREADS = 4
BACKLOG = 2048
# How long a stopping server waits for requests in progress (seconds).
GRACEFUL_STOP_SECONDS = 30
# How long a stop then waits for the requests it gave up on whose engine calls went on (App._late)
# to write their answers out: such a call waits at most SQLite's busy timeout.
LATE_ANSWER_SECONDS = D.BUSY_TIMEOUT_SECONDS + GRACEFUL_STOP_SECONDS


class _WholeAnswers(asyncio.Protocol):
    """Mixed in before uvicorn's HTTP/1.1 protocol: each answer reaches the socket in one write.

    uvicorn writes a response's status line and headers when the application sends
    ``http.response.start``, and its body at ``http.response.body``: two writes, two send()
    calls. A worker killed between them left a client a complete head (``200``, its
    Content-Length) and no body, which an SDK may take for an empty answer (boto3 did, and the
    caller found no MessageId). Here the head waits for the next write, its body's, and goes
    with it, so a kill leaves the client nothing or the whole answer (for an answer the socket's
    send buffer takes at once, as every SQS answer but a large receive's does; past that a
    cut-off body is short of its Content-Length, which the SDKs refuse and retry)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(_OneWrite(transport))  # type: ignore[arg-type]


class _OneWrite:
    """A connection's transport as uvicorn's protocol sees it: a write that is a response's head
    alone (its status line and headers, ending in the blank line) is held until the next, or
    until the loop's next turn: uvicorn writes no body for HEAD or an empty answer, and the
    application sends an answer's body in the same turn as its head."""

    __slots__ = ("_transport", "_head")

    def __init__(self, transport: Any):
        self._transport = transport
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head + data)
        elif data[:9] == b"HTTP/1.1 " and data[-4:] == b"\r\n\r\n" and data[9:10] != b"1":  # not 100 Continue
            self._head = bytes(data)
            asyncio.get_running_loop().call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        head, self._head = self._head, None
        if head is not None:
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def http_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol as the endpoint runs it: a deadline for each request's
    headers (protocol.py), each answer written whole (_WholeAnswers)."""
    base = with_header_timeout(header_timeout)
    return type(f"WholeAnswers{base.__name__}", (_WholeAnswers, base), {})


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, with our start and stop around its own."""

    def __init__(self, config: uvicorn.Config, endpoint: EndpointServer):
        super().__init__(config)
        self.endpoint = endpoint

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.endpoint.attach(asyncio.get_running_loop())
        await super().startup(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.endpoint.begin_stop()  # parked polls answer empty before uvicorn waits for connections
        await super().shutdown(sockets)
        # uvicorn has cancelled what outlived its wait, but a request whose engine call went on
        # answers late (App._late). The loop must run until that answer is written out and its
        # connection closed: asyncio.run would cancel it mid-write, and close the loop on what
        # the socket had not yet taken.
        loop = asyncio.get_running_loop()
        ends = loop.time() + LATE_ANSWER_SECONDS
        while (self.server_state.tasks or self.server_state.connections) and not self.force_exit and loop.time() < ends:
            await asyncio.sleep(0.05)
        await self.endpoint.db.wakeups.detach()

    @contextlib.contextmanager
    def capture_signals(self):
        # The caller owns signals (``serve`` stops cleanly and exits 0; uvicorn's own handlers
        # would raise the signal again once stopped).
        yield


class EndpointServer:
    """A bound endpoint: ``serve()`` runs it in the calling thread until ``graceful_stop()``."""

    def __init__(
        self,
        sock: socket.socket,
        db: ServedDatabase,
        *,
        verifier: Verifier | None = None,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        verbose: bool = False,
        console: Any = None,
        engine_threads: int = ENGINE_THREADS,
        inline_below: int = INLINE_BELOW,
        allowed_hosts: Collection[str] = (),
        header_timeout: float = D.HEADER_TIMEOUT_SECONDS,
        max_receiving_bytes: int = D.MAX_RECEIVING_BYTES,
        lock_wait_seconds: float = D.LOCK_WAIT_SECONDS,
    ):
        self.socket = sock
        self.db = db
        self.server_address = sock.getsockname()[:2]
        host, port = str(self.server_address[0]), self.server_address[1]
        self.default_host = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        db.endpoint = f"http://{self.default_host}"
        self.dispatcher = Dispatcher(
            db,
            verifier=verifier,
            console=console,
            max_request_bytes=max_request_bytes,
            default_host=self.default_host,
            loopback=is_loopback(host),
            allowed_hosts=allowed_hosts,
        )
        self.executor = ThreadPoolExecutor(engine_threads, thread_name_prefix="sqsqlite-engine") if engine_threads else None
        self.app = App(
            self.dispatcher, db.wakeups, self.executor, inline_below, max_receiving=max_receiving_bytes, lock_wait_seconds=lock_wait_seconds
        )
        self.verbose = verbose
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopped = threading.Event()
        self.clean = True
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            http=http_protocol(header_timeout),
            access_log=verbose,
            log_level="info" if verbose else "warning",
            timeout_keep_alive=IDLE_TIMEOUT,
            timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
            backlog=BACKLOG,
            server_header=False,
            date_header=False,
            # Nothing here reads the client's address, so no X-Forwarded-* rewriting per request.
            proxy_headers=False,
        )
        self._uvicorn = _Uvicorn(config, self)

    @property
    def console(self) -> Any:
        return self.dispatcher.console

    @console.setter
    def console(self, value: Any) -> None:
        self.dispatcher.console = value

    @property
    def url(self) -> str:
        return f"http://{self.default_host}"

    @property
    def requests(self) -> int:
        return self.app.requests

    @property
    def server_ms(self) -> float:
        return self.app.server_ms

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        peers = None
        try:
            peers = Peers(self.db.path)
        except OSError as exc:  # no usable wake-up directory: the watcher sees other processes' sends
            log.warning(
                "cross-process wake-ups are off (%s); commits by other processes wake polls within %d ms", exc, WATCH_MIN_GAP * 1000
            )
        self.db.wakeups.attach(loop, peers)

    def begin_stop(self) -> None:
        self.stopping = True
        self.dispatcher.stopping = True
        self.app.stop_reading()  # a body still arriving is answered, not waited for
        self.db.stop_waiting()

    def serve(self) -> None:
        """Serve until stopped (``graceful_stop`` from another thread, or ``request_stop``)."""
        try:
            self._uvicorn.run(sockets=[self.socket])
            # uvicorn cancels what outlives its graceful timeout without forcing the exit: such a
            # request, cut off unanswered, makes the stop unclean too.
            self.clean = not self._uvicorn.force_exit and not self.app.cut_off
        finally:
            if self.executor is not None:
                self.executor.shutdown(wait=True)
            self.db.close()
            self.stopped.set()

    def request_stop(self, force: bool = False) -> None:
        """Ask the serving loop to stop (safe from a signal handler or any thread)."""
        server = self._uvicorn
        if force:
            server.force_exit = True
        server.should_exit = True

    def graceful_stop(self, timeout: float = 30.0) -> bool:
        """Stop accepting, end long polls, let requests in progress finish, close idle
        connections, then close the database. Returns False if some request outlived timeout."""
        self.request_stop()
        if not self.stopped.wait(timeout + 5):
            self.request_stop(force=True)
            self.stopped.wait(5)
            return False
        return self.clean


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket, as every worker of a server shares it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def make_server(
    db_path: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 9324,
    account_id: str = D.DEFAULT_ACCOUNT_ID,
    region: str = D.DEFAULT_REGION,
    access_key: str | None = None,
    secret_key: str | None = None,
    clock=None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    verbose: bool = False,
    console_read_only: bool = False,
    sock: socket.socket | None = None,
    engine_threads: int = ENGINE_THREADS,
    inline_below: int = INLINE_BELOW,
    console_secret: bytes | None = None,
    allow_hosts: Collection[str] = (),
    header_timeout: float = D.HEADER_TIMEOUT_SECONDS,
    max_receiving_bytes: int = D.MAX_RECEIVING_BYTES,
    console_only: bool = False,
    url_style: str = D.DEFAULT_URL_STYLE,
    lock_wait_seconds: float = D.LOCK_WAIT_SECONDS,
) -> EndpointServer:
    """An endpoint bound to host:port (port 0: any free port; ``sock``: an already listening
    socket), not yet serving; the web console at /console and Prometheus metrics at /metrics
    (``console_read_only``: it changes nothing; ``console_secret``: what its form token and banner
    signatures derive from, the same in every worker of a server, else its own; ``allow_hosts``: names of this machine besides
    localhost's that requests may give, on loopback). ``inline_below``: engine calls run on the event
    loop while fewer requests are being served (0: always on the thread pool). ``header_timeout``:
    a connection that has not completed a request's headers this long after connecting (or after
    that request's first byte, between requests) is closed (protocol.py). ``max_receiving_bytes``:
    what the request bodies being received may hold together, each body's first 64 KiB aside;
    past it a body is refused 503 ServiceUnavailable (asgi.py). ``console_only``: the web console
    and /metrics alone (``sqsqlite console``), the keys its basic credentials, no SQS.
    ``account_id`` and ``region``: a request's when its signature names none (docs/howto/server.md);
    ``url_style``: the queue URLs it gives, one of D.URL_STYLES. ``lock_wait_seconds``: how long an
    SQS request's write waits for the database's write lock before it is answered 503
    ServiceUnavailable, having run nothing (asgi.py)."""
    if url_style not in D.URL_STYLES:
        raise ValueError(f"url_style must be one of {', '.join(D.URL_STYLES)}, got {url_style!r}")
    if (access_key is None) != (secret_key is None):
        raise ValueError("give both access_key and secret_key, or neither")
    db = ServedDatabase(db_path, clock=clock, region=region, account_id=account_id, url_style=url_style)
    keyed = access_key is not None and secret_key is not None and not console_only
    verifier = Verifier(access_key, secret_key) if keyed else None  # type: ignore[arg-type]  # both given
    try:
        if sock is None:
            sock = listen(host, port)
        server = EndpointServer(
            sock,
            db,
            verifier=verifier,
            max_request_bytes=max_request_bytes,
            verbose=verbose,
            engine_threads=engine_threads,
            inline_below=inline_below,
            allowed_hosts=allow_hosts,
            header_timeout=header_timeout,
            max_receiving_bytes=max_receiving_bytes,
            lock_wait_seconds=lock_wait_seconds,
        )
        server.dispatcher.console_only = console_only
        server.console = console.for_endpoint(
            db,
            read_only=console_read_only,
            access_key=access_key,
            secret_key=secret_key,
            loopback=is_loopback(server.server_address[0]),
            allowed_hosts=allow_hosts,
            secret=console_secret,
        )
        server.app.emulator = EmulatorRoutes(
            db,
            access_key=access_key,
            secret_key=secret_key,
            loopback=is_loopback(server.server_address[0]),
            allowed_hosts=allow_hosts,
            dispatcher=server.dispatcher,
        )
        return server
    except BaseException:
        db.close()
        raise


class BackgroundServer:
    """An endpoint serving from a thread: ``with BackgroundServer(path) as s: boto3...(endpoint_url=s.url)``."""

    def __init__(self, db_path: str | None = None, **options: Any):
        options.setdefault("port", 0)
        self.server = make_server(db_path, **options)
        self.url = self.server.url
        self.db = self.server.db
        self._thread = threading.Thread(target=self.server.serve, daemon=True, name="sqsqlite-serve")
        self._thread.start()
        # Ready once the loop runs: requests sent before are queued by the listening socket anyway.

    def stop(self, timeout: float = 30.0) -> bool:
        ok = self.server.graceful_stop(timeout)
        self._thread.join(timeout)
        return ok

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
