"""The HTTP endpoint: SQS's JSON 1.0 and query protocols over the action layer.

Standard library only (``http.server``): one thread per client connection, HTTP/1.1
keep-alive, and every SQLite connection per thread as the engine wants it. Each response is
written in one piece with Nagle off, so small requests don't wait on delayed ACKs.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from .. import console
from .. import defaults as D
from .. import validation as V
from ..actions import MEMBERS, UNSUPPORTED, Actions
from ..errors import BatchRequestTooLong, InvalidParameterValue, QueueDoesNotExist, SQSError
from . import wire
from .sigv4 import Verifier
from .waiting import ServedDatabase, Stopping

log = logging.getLogger("sqsqlite.server")

# The largest request body read. A request carries at most 1 MiB of payload (one message or a
# batch), and neither encoding grows it more than 3 times (percent-encoding a byte: %XX; JSON
# escaping a supplementary character: two \\uXXXX for 4 bytes), plus room for the envelope.
MAX_REQUEST_BYTES = 3 * D.MAX_BATCH_PAYLOAD + 256 * 1024
# After refusing an oversized body, how much of it is read and dropped so the client sees the
# answer rather than a reset connection (bytes, seconds).
DRAIN_BYTES = 16 * 1024 * 1024
DRAIN_SECONDS = 2.0
# How long an idle keep-alive connection is kept (seconds).
IDLE_TIMEOUT = 75
_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
_BATCH_ACTIONS = {"SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch"}


class _TooLarge(Exception):
    def __init__(self, size: int | None):
        self.size = size


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sqsqlite"
    sys_version = ""
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT
    server: EndpointServer

    # ------------------------------------------------------------ connection bookkeeping

    def setup(self) -> None:
        super().setup()
        self.busy = False
        self.server.track(self, True)

    def finish(self) -> None:
        self.server.track(self, False)
        try:
            super().finish()
        except OSError:
            pass

    def parse_request(self) -> bool:
        # From here until the answer is written, shutdown waits for this request.
        self.busy = True
        self.started = time.perf_counter()
        return super().parse_request()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        finally:
            self.busy = False
            if self.server.stopping:
                self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            log.info("%s %s", self.address_string(), format % args)

    # ------------------------------------------------------------ requests

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        srv = self.server
        request_id = str(uuid.uuid4())
        path, _, raw_query = self.path.partition("?")
        target = self.headers.get("X-Amz-Target")
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        is_json = target is not None or content_type.startswith("application/x-amz-json")
        action = None
        if is_json and target:
            prefix, _, action = target.partition(".")
            if prefix != "AmazonSQS":
                action = target
        self.action = action
        try:
            try:
                body = self._read_body(srv.max_request_bytes)
            except _TooLarge as big:
                self._refuse_large(big.size, is_json, action, request_id)
                return
            if console.serves(path):  # the web console and /metrics: their own auth, pages and errors
                self.action, answer = console.action(path), srv.console.handle(self.command, path, raw_query, self.headers, body)
                self._send(answer.status, answer.content_type, answer.body, request_id, answer.headers)
                return
            if srv.verifier is not None:
                srv.verifier.verify(self.command, path, raw_query, self.headers.items(), body)
            if is_json:
                if not action or action not in MEMBERS and action not in UNSUPPORTED:
                    raise wire.WireError(
                        "InvalidAction",
                        f"Unknown X-Amz-Target {target!r}: expected AmazonSQS.<Action>, one of {', '.join(MEMBERS)}.",
                        json_type="com.amazon.coral.service#UnknownOperationException",
                    )
                request = wire.json_request(body)
            else:
                # errors="strict": a percent-escape that decodes to no UTF-8 is refused, not
                # stored as U+FFFD (parse_qsl's default replaces it).
                try:
                    params = parse_qsl(raw_query, keep_blank_values=True, errors="strict")
                except UnicodeDecodeError:
                    raise InvalidParameterValue("The query string is not valid UTF-8 once percent-decoded.") from None
                if self.command == "POST" and body:
                    try:
                        params += parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
                    except UnicodeDecodeError:
                        raise InvalidParameterValue("The form-encoded request body is not valid UTF-8 once percent-decoded.") from None
                action = next((v for k, v in params if k == "Action"), None)
                if not action:
                    raise wire.WireError("MissingAction", "The request must contain the parameter Action.")
                if action not in MEMBERS and action not in UNSUPPORTED:
                    raise wire.WireError("InvalidAction", f"The action {action} is not valid for this web service.")
                request = wire.query_request(params, action)
                if request.get("AttributeNames") and "MessageSystemAttributeNames" in request:
                    # SQS's query API answers AttributeNames alone when a receive gives both.
                    del request["MessageSystemAttributeNames"]
            self.action = action
            self._queue_from_path(path, action, request)
            trace = self.headers.get("X-Amzn-Trace-Id")
            if trace and action == "SendMessage":
                # As SQS: the X-Ray header of a SendMessage becomes the message's AWSTraceHeader,
                # unless the request gives one as a message system attribute.
                system = request.setdefault("MessageSystemAttributes", {})
                if isinstance(system, dict):
                    system.setdefault("AWSTraceHeader", {"DataType": "String", "StringValue": trace})
            result = self._call(action, request)
        except SQSError as err:
            self._send_error(err, is_json, request_id)
            return
        except Exception:  # a bug, not the caller's fault: say so without leaking internals
            log.error("request %s failed:\n%s", request_id, traceback.format_exc())
            internal = wire.WireError(
                "InternalError", f"The server could not complete request {request_id}.", 500, "com.amazonaws.sqs#InternalError", False
            )
            self._send_error(internal, is_json, request_id)
            return
        if is_json:
            payload = wire.json_response(result)
            self._send(200, wire.JSON_CONTENT_TYPE, payload, request_id)
        else:
            self._send(200, wire.XML_CONTENT_TYPE, wire.xml_response(action, result, request_id), request_id)

    def _queue_from_path(self, path: str, action: str, request: dict) -> None:
        """Query requests may be sent to the queue's own URL; the path then names the queue."""
        parts = [p for p in path.split("/") if p]
        if not parts:
            return
        if parts[:-2] in (["queue"], [self.server.db.region], ["queue", self.server.db.region]):
            parts = parts[-2:]  # the path-style URLs emulators give: /queue/<region>/<account>/<name>
        if len(parts) != 2:
            raise wire.WireError(
                "InvalidAddress", f"The address {path!r} is not valid for this endpoint: use / or /<account>/<queue>.", 404
            )
        account, name = parts
        if account != self.server.db.account_id:
            raise QueueDoesNotExist(
                "The specified queue does not exist.",
                f"The queue {name!r} does not exist in account {account}; this endpoint serves account {self.server.db.account_id}.",
            )
        if "QueueUrl" in MEMBERS.get(action, ()) and not request.get("QueueUrl"):
            request["QueueUrl"] = name

    def _call(self, action: str, request: dict) -> dict:
        db = self.server.db
        db.begin_request(self._endpoint())
        try:
            try:
                result = self.server.actions.call(action, request)
            except Stopping:
                return {}  # shutting down: a long poll ends with no messages, as at its deadline
            if action == "ReceiveMessage" and result.get("Messages"):
                # Pass the baton: the queue's next poller looks for what is left.
                db.wakeups.wake(V.queue_name_from_url(request["QueueUrl"]))
            return result
        finally:
            db.end_request()

    def _endpoint(self) -> str:
        host = (self.headers.get("Host") or "").strip()
        if not _HOST.fullmatch(host):
            host = self.server.default_host
        return f"http://{host}"

    # ------------------------------------------------------------ bodies

    def _read_body(self, limit: int) -> bytes:
        if self.command == "GET":
            return b""
        encoding = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in encoding:
            return self._read_chunked(limit)
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        try:
            size = int(length)
        except ValueError:
            raise wire.WireError("InvalidRequest", f"Invalid Content-Length {length!r}.") from None
        if size < 0:
            raise wire.WireError("InvalidRequest", f"Invalid Content-Length {length!r}.")
        if size > limit:
            raise _TooLarge(size)
        return self.rfile.read(size)

    def _read_chunked(self, limit: int) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise wire.WireError("InvalidRequest", "Malformed chunked request body.") from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > limit:
                raise _TooLarge(None)
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _refuse_large(self, size: int | None, is_json: bool, action: str | None, request_id: str) -> None:
        limit = self.server.max_request_bytes
        what = f"of {size} bytes" if size is not None else "(chunked)"
        message = f"The request body {what} is larger than this endpoint accepts ({limit} bytes); a message or batch carries at most {D.MAX_BATCH_PAYLOAD} bytes."
        err: SQSError = BatchRequestTooLong(message) if action in _BATCH_ACTIONS else InvalidParameterValue(message)
        self.close_connection = True
        self._send_error(err, is_json, request_id, status=413)
        # Read and drop a bounded amount, so a client still sending sees the answer, not a reset.
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.2)
            deadline, dropped = time.monotonic() + DRAIN_SECONDS, 0
            while dropped < DRAIN_BYTES and time.monotonic() < deadline:
                data = self.connection.recv(65536)
                if not data:
                    break
                dropped += len(data)
        except OSError:
            pass

    # ------------------------------------------------------------ responses

    def _send_error(self, err: SQSError, is_json: bool, request_id: str, status: int | None = None) -> None:
        code, _, wire_status = wire.error_parts(err)
        headers = {"x-amzn-query-error": f"{code};{'Sender' if err.sender_fault else 'Receiver'}"}
        if is_json:
            self._send(status or wire_status, wire.JSON_CONTENT_TYPE, wire.json_error(err), request_id, headers)
        else:
            self._send(status or wire_status, wire.XML_CONTENT_TYPE, wire.xml_error(err, request_id), request_id, headers)

    def _send(self, status: int, content_type: str, payload: bytes, request_id: str, extra: dict | None = None) -> None:
        elapsed = (time.perf_counter() - self.started) * 1000
        lines = [
            f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(payload)}",
            f"x-amzn-RequestId: {request_id}",
            f"Server-Timing: sqsqlite;dur={elapsed:.3f}",
            f"Date: {self.date_time_string()}",
        ]
        for k, v in (extra or {}).items():
            lines.append(f"{k}: {v}")
        if self.close_connection or self.server.stopping:
            lines.append("Connection: close")
            self.close_connection = True
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + payload)
        except OSError:
            self.close_connection = True  # the client went away; nothing to tell it
        if self.server.verbose:
            self.log_request(status, len(payload))
        self.server.count(elapsed, self.action, status, (extra or {}).get("x-amzn-query-error"))


class EndpointServer(ThreadingHTTPServer):
    """The listening server: one thread per connection; a clean, bounded shutdown."""

    daemon_threads = True  # we join our own, with a time limit
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        db: ServedDatabase,
        *,
        verifier: Verifier | None = None,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        verbose: bool = False,
        console: Any = None,
    ):
        self.db = db
        self.console = console
        self.actions = Actions(db)
        self.verifier = verifier
        self.max_request_bytes = max_request_bytes
        self.verbose = verbose
        self.stopping = False
        self._handlers: set[Handler] = set()
        self._workers: set[threading.Thread] = set()
        self._track_lock = threading.Lock()
        self.requests = 0
        self.server_ms = 0.0
        super().__init__(address, Handler)
        host, port = str(self.server_address[0]), self.server_address[1]
        self.default_host = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        db.endpoint = f"http://{self.default_host}"

    @property
    def url(self) -> str:
        return f"http://{self.default_host}"

    def track(self, handler: Handler, alive: bool) -> None:
        with self._track_lock:
            if alive:
                self._handlers.add(handler)
            else:
                self._handlers.discard(handler)

    def count(self, ms: float, action: str | None = None, status: int = 200, error: str | None = None) -> None:
        # Unlocked on purpose: a statistic, and += on a float under the GIL loses nothing that matters.
        self.requests += 1
        self.server_ms += ms
        if self.console is not None:  # /metrics' request counts, errors and latencies
            self.console.observe(action, status, error.partition(";")[0] if error else None, ms / 1000)

    def process_request(self, request, client_address) -> None:
        if self.stopping:
            self.shutdown_request(request)
            return
        t = threading.Thread(target=self.process_request_thread, args=(request, client_address), daemon=True)
        with self._track_lock:
            self._workers.add(t)
        t.start()

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            _release_connection(self.db)
            with self._track_lock:
                self._workers.discard(threading.current_thread())

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout)):
            return  # a client hung up or went idle: routine
        log.error("connection from %s failed:\n%s", client_address, traceback.format_exc())

    def graceful_stop(self, timeout: float = 30.0) -> bool:
        """Stop accepting, end long polls, let requests in progress finish, close idle
        connections, then close the database. Returns False if some request outlived timeout."""
        self.stopping = True
        self.shutdown()  # the accept loop ends (call from another thread than serve_forever)
        self.socket.close()
        self.db.stop_waiting()
        deadline = time.monotonic() + timeout
        while True:
            with self._track_lock:
                handlers = list(self._handlers)
                threads = list(self._workers)
            for h in handlers:
                if not h.busy:
                    try:
                        h.connection.shutdown(socket.SHUT_RDWR)  # idle keep-alive: end it
                    except OSError:
                        pass
            if not threads or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.db.close()
        return not threads


def _release_connection(db: ServedDatabase) -> None:
    """Close this thread's SQLite connection when its client connection ends, so a server that
    sees many short-lived clients does not keep one open file per client ever seen."""
    db.store.release_connection()


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
) -> EndpointServer:
    """An endpoint bound to host:port (port 0: any free port), not yet serving; the web console
    at /console and Prometheus metrics at /metrics (``console_read_only``: it changes nothing)."""
    if (access_key is None) != (secret_key is None):
        raise ValueError("give both access_key and secret_key, or neither")
    db = ServedDatabase(db_path, clock=clock, region=region, account_id=account_id)
    verifier = Verifier(access_key, secret_key) if access_key is not None and secret_key is not None else None
    try:
        server = EndpointServer((host, port), db, verifier=verifier, max_request_bytes=max_request_bytes, verbose=verbose)
        server.console = console.for_endpoint(
            db, read_only=console_read_only, access_key=access_key, secret_key=secret_key, loopback=_loopback(server.server_address[0])
        )
        return server
    except BaseException:
        db.close()
        raise


def _loopback(host: Any) -> bool:
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


class BackgroundServer:
    """An endpoint serving from a thread: ``with BackgroundServer(path) as s: boto3...(endpoint_url=s.url)``."""

    def __init__(self, db_path: str | None = None, **options: Any):
        options.setdefault("port", 0)
        self.server = make_server(db_path, **options)
        self.url = self.server.url
        self.db = self.server.db
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="sqsqlite-serve"
        )
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> bool:
        ok = self.server.graceful_stop(timeout)
        self._thread.join(timeout)
        return ok

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
