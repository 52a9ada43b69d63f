"""Wake-ups across the processes serving one database file (``sqsqlite serve --workers N``).

Each serving process binds a UNIX datagram socket in a directory named after the database file
(its device and inode, so every path to the file finds the same one) in the system's temporary
directory: a short path, as AF_UNIX allows 108 bytes. A commit that may have made messages
receivable sends ``"<count> <queue>"`` to every other socket there; the receiver wakes that many
of its parked polls. A datagram is one system call, never blocks (a peer whose buffer is full
misses it, and its data_version watcher catches the commit within tens of milliseconds), and a
socket left by a process that died is refused and removed by the next sender.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import tempfile
import time

# How often (seconds) a sender lists the directory again for peers that started since.
LIST_INTERVAL = 0.5
MAX_DATAGRAM = 512


class Peers:
    """This process's socket among the servers of one database file."""

    def __init__(self, db_path: str):
        st = os.stat(db_path)
        # A name, not a secret: a non-security use, which FIPS-mode builds allow.
        key = hashlib.sha1(f"{st.st_dev}:{st.st_ino}".encode(), usedforsecurity=False).hexdigest()[:16]
        self.directory = os.path.join(tempfile.gettempdir(), f"sqsqlite-wake-{key}")
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        if os.stat(self.directory).st_uid != os.getuid():
            # Made by another user (the temporary directory is shared): its sockets are not
            # ours to trust or to remove; the data_version watcher wakes polls instead.
            raise PermissionError(f"{self.directory} belongs to another user")
        self.name = f"{os.getpid()}-{os.urandom(4).hex()}"
        self.path = os.path.join(self.directory, self.name)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.sock.bind(self.path)
        self._others: list[str] = []
        self._listed = 0.0

    def fileno(self) -> int:
        return self.sock.fileno()

    def others(self) -> list[str]:
        now = time.monotonic()
        if now - self._listed > LIST_INTERVAL:
            self._listed = now
            try:
                self._others = [os.path.join(self.directory, n) for n in os.listdir(self.directory) if n != self.name]
            except OSError:
                self._others = []
        return self._others

    def send(self, queue: str | None, count: int | None) -> None:
        """Tell every other server of the file: ``count`` messages (None: unknown) may be receivable in ``queue`` (None: any)."""
        others = self.others()
        if not others:
            return
        payload = f"{'-' if count is None else count} {'*' if queue is None else queue}".encode()
        for path in list(others):
            try:
                self.sock.sendto(payload, path)
            except BlockingIOError:
                pass  # its buffer is full: its watcher sees the commit
            except (ConnectionRefusedError, FileNotFoundError):
                with contextlib.suppress(OSError):
                    os.unlink(path)  # a server that died without cleaning up
                with contextlib.suppress(ValueError):
                    self._others.remove(path)
            except OSError:
                pass

    def received(self) -> list[tuple[str | None, int | None]]:
        """The (queue, count) wake-ups waiting on this socket."""
        out: list[tuple[str | None, int | None]] = []
        while True:
            try:
                data = self.sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return out
            except OSError:
                return out
            count, _, queue = data.decode("utf-8", "replace").partition(" ")
            try:
                out.append((None if queue == "*" else queue, None if count == "-" else int(count)))
            except ValueError:
                continue  # not ours

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)  # only when no other server is left
