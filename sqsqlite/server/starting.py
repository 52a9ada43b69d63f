"""Answers on the listening socket while ``sqsqlite serve`` starts, so that a probe gets an
answer rather than a refused connection while the database is migrated and the queues file
applied: ``/health`` 503 ``"starting"``, LocalStack's health paths their starting shapes, and
every other request 503 ServiceUnavailable in SQS's shape (which the AWS SDKs retry); nothing of
a request runs. One thread accepts, a short-lived thread answers each connection and closes it.
Once stopped, the endpoint serves the same socket, connections waiting in its backlog included.

Costs a plain start one thread, and none of the endpoint's imports: it reads a request's head
with the standard library and nothing more.
"""

from __future__ import annotations

import http
import selectors
import socket
import threading

from ..core.handles import new_request_id
from .dispatch import Headers
from .emulator import starting_answer

# A request's head (request line and headers) larger than this is answered without reading on.
HEAD_LIMIT = 64 * 1024
# How long one connection may take to send its request (seconds): a probe sends at once.
READ_TIMEOUT = 2.0


class Starting:
    """``with Starting(sock): ...``: the work inside runs while this answers on ``sock``."""

    def __init__(self, sock: socket.socket, max_body: int):
        self.sock = sock
        self.max_body = max_body
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._accept, name="sqsqlite-starting", daemon=True)

    def __enter__(self) -> Starting:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop accepting (answers under way finish on their own); the socket stays open."""
        if self._thread.is_alive():
            self._wake_w.send(b"x")
            self._thread.join()
        self._wake_r.close()
        self._wake_w.close()

    def _accept(self) -> None:
        blocking = self.sock.getblocking()
        self.sock.setblocking(False)
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.sock, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                while True:
                    for key, _ in selector.select():
                        if key.fileobj is self._wake_r:
                            return
                        try:
                            conn, _ = self.sock.accept()
                        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                            continue
                        threading.Thread(target=self._answer, args=(conn,), name="sqsqlite-starting-answer", daemon=True).start()
        finally:
            self.sock.setblocking(blocking)

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.setblocking(True)
                conn.settimeout(READ_TIMEOUT)
                method, path, headers = self._read(conn)
                answer = starting_answer(path, headers, new_request_id())
                reason = http.HTTPStatus(answer.status).phrase
                lines = [
                    f"HTTP/1.1 {answer.status} {reason}",
                    f"Content-Type: {answer.content_type}",
                    f"Content-Length: {len(answer.body)}",
                ]
                lines += [f"{name}: {value}" for name, value in answer.headers.items()]
                lines += ["Retry-After: 1", "Connection: close"]
                head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
                conn.sendall(head if method == "HEAD" else head + answer.body)
            except OSError:  # the client went away, or sent nothing in time: nothing to answer
                pass

    def _read(self, conn: socket.socket) -> tuple[str, str, Headers]:
        """The request's method, path and headers; its body read and dropped (a client still
        sending one when the connection closes could see a reset instead of the answer)."""
        data = b""
        while b"\r\n\r\n" not in data and len(data) < HEAD_LIMIT:
            chunk = conn.recv(16384)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, _, rest = request_line.partition(" ")
        path = rest.partition(" ")[0].partition("?")[0]
        pairs = [(name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in header_lines) if name]
        headers = Headers(pairs)
        try:
            left = int(headers.get("Content-Length") or 0) - len(body)
        except ValueError:
            left = 0
        if (headers.get("Expect") or "").lower() == "100-continue" or left > self.max_body:
            return method, path, headers  # answered at once: the client sends no body after a final status
        try:
            while left > 0:
                chunk = conn.recv(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
        except TimeoutError:  # the rest of the body never came: answered all the same
            pass
        return method, path, headers
