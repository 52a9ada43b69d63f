"""``sqsqlite console``: the web console and /metrics alone, without the SQS endpoint.

Its own small server (``http.server``, a thread per connection), answering every request
through the same ``Console.handle`` that ``sqsqlite serve`` calls for ``/console``.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from collections.abc import Collection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import click

from .. import command_options
from .. import defaults as D
from ..command_options import allow_host, own_or_global
from ..core import Database
from ..errors import SQSError
from . import exposure_warning, is_loopback, serves
from .app import Console


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sqsqlite-console"
    sys_version = ""
    timeout = 75
    server: ConsoleServer

    def do_GET(self) -> None:
        self._answer()

    do_HEAD = do_POST = do_GET

    def __getattr__(self, name: str) -> Any:
        # Any other method goes to the console too, which answers it with 405 and the path's own
        # Allow, as under sqsqlite serve (http.server answers a method without a do_ with 501).
        if name.startswith("do_"):
            return self._answer
        raise AttributeError(name)

    def _answer(self) -> None:
        started = time.perf_counter()
        path, _, query = self.path.partition("?")
        if path == "/":
            path = "/console"  # alone, the console is the whole site
        console = self.server.console
        unclear = self._unclear_length()
        if unclear:
            # The body's end is unknown, so what follows it can't be told from a next request:
            # answered, and the connection closed rather than read on (a proxy in front reusing
            # it would otherwise have a request smuggled in after this one).
            self.close_connection = True
            r = console.refusal(*unclear)
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > D.CONSOLE_MAX_FORM_BYTES:
                self.close_connection = True
                body = b"\0" * (D.CONSOLE_MAX_FORM_BYTES + 1)  # refused as too large by the console
            else:
                body = self.rfile.read(length) if length else b""
            r = console.handle(self.command, path, query, self.headers, body)
        self.send_response(r.status)
        for k, v in {"Content-Type": r.content_type, "Content-Length": str(len(r.body)), **r.headers}.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(r.body)
        action = ("Metrics" if path == "/metrics" else "Console") if serves(path) else None
        console.observe(action, r.status, None, time.perf_counter() - started)

    def _unclear_length(self) -> tuple[int, str] | None:
        """Why the length of this request's body is unclear (a status and a sentence), or None.
        This server reads a body by its Content-Length alone: not chunked."""
        if self.headers.get("Transfer-Encoding") is not None:
            return 411, "The console reads a request body by its Content-Length only, never with a Transfer-Encoding."
        lengths = {v.strip() for v in self.headers.get_all("Content-Length") or ()}
        if len(lengths) > 1 or not all(re.fullmatch(r"[0-9]{1,12}", v) for v in lengths):
            return 400, "The request's Content-Length is not one number of bytes."
        return None

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


class ConsoleServer(ThreadingHTTPServer):
    """The console alone on host:port (port 0: any free port)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], console: Console, verbose: bool = False):
        self.console = console
        self.verbose = verbose
        super().__init__(address, _Handler)
        host, port = str(self.server_address[0]), self.server_address[1]
        self.url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            # Each client connection has its thread and that thread its SQLite connection.
            self.console.db.store.release_connection()


def make_console_server(
    db: Database,
    host: str = "127.0.0.1",
    port: int = D.CONSOLE_PORT,
    *,
    read_only: bool = False,
    access_key: str | None = None,
    secret_key: str | None = None,
    verbose: bool = False,
    allow_hosts: Collection[str] = (),
) -> ConsoleServer:
    console = Console(
        db, read_only=read_only, access_key=access_key, secret_key=secret_key, loopback=is_loopback(host), allowed_hosts=allow_hosts
    )
    server = ConsoleServer((host, port), console, verbose)
    # On loopback by the address bound, as `serve` decides: a name (this machine's, localhost.)
    # or a short form (127.1) binds it too, and must keep the Host check against DNS rebinding.
    console.loopback = is_loopback(str(server.server_address[0]))
    return server


def _refuse_an_older_schema(path: str) -> None:
    """Opening a file of an older schema upgrades it, a write a read-only console must not make."""
    from ..store import HEAD_REVISION, Store

    revision = None
    try:  # an empty file is not even opened: SQLite's switch to WAL would write its header
        if path.startswith("file:") or os.path.getsize(path):
            probe = Store(path, migrate=False)
            try:
                revision = probe.current_revision()
            finally:
                probe.close()
    except SQSError as exc:
        raise command_options.Failure(exc.message) from None
    if revision is None or revision < HEAD_REVISION:
        raise command_options.Failure(
            f"{path!r} has {'no sqsqlite schema yet' if revision is None else f'schema revision {revision!r}'}, older than this "
            f"sqsqlite's ({HEAD_REVISION!r}); a read-only console changes nothing, so upgrade it first: sqsqlite db upgrade --db {path}"
        )


@click.command("console")
@click.option("--db", "db_path", default=None, metavar="PATH", help=f"Database file (default: ${D.DB_PATH_ENV} or ./{D.DEFAULT_DB_PATH}).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; loopback unless you ask otherwise.")
@click.option("--port", default=D.CONSOLE_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--read-only", is_flag=True, help="Show everything, change nothing: redrive, purge and delete answer 403.")
@click.option("--account-id", default=None, help=f"Account id in queue URLs and ARNs (default {D.DEFAULT_ACCOUNT_ID}).")
@click.option("--region", default=None, help=f"Region in queue ARNs (default {D.DEFAULT_REGION}).")
@click.option(
    "--access-key", default=None, envvar="SQSQLITE_ACCESS_KEY", help="Require HTTP basic credentials: this access key as user ..."
)
@click.option("--secret-key", default=None, envvar="SQSQLITE_SECRET_KEY", help="... and this secret key as password.")
@allow_host
@click.option("--verbose", "-v", is_flag=True, help="Log every request to stderr.")
@click.pass_context
def console(ctx, db_path, host, port, read_only, account_id, region, access_key, secret_key, allow_hosts, verbose):
    """The web console alone: queues with live counts, messages looked at without receiving
    them, redrive, purge and delete; Prometheus metrics at /metrics.

    Open the printed address in a browser. `sqsqlite serve` serves the same console at
    /console beside the SQS endpoint. Needs the console extra: pip install 'sqsqlite[console]'.

    \b
    Example: sqsqlite console --db app.db --read-only
    """
    if (access_key is None) != (secret_key is None):
        raise click.UsageError("--access-key and --secret-key go together: give both, or neither.")
    path = command_options.db_path(ctx, db_path)
    if read_only and command_options.no_database_at(path):
        # It may change nothing, so it must not create the file a mistyped --db names either.
        raise command_options.Failure(f"There is no database at {path!r} to show; a read-only console creates none.")
    if read_only:
        _refuse_an_older_schema(path)
    try:
        db = Database(
            path,
            account_id=own_or_global(ctx, "account_id", account_id, D.DEFAULT_ACCOUNT_ID),
            region=own_or_global(ctx, "region", region, D.DEFAULT_REGION),
        )
    except SQSError as exc:
        raise command_options.Failure(exc.message) from None
    try:
        server = make_console_server(
            db, host, port, read_only=read_only, access_key=access_key, secret_key=secret_key, verbose=verbose, allow_hosts=allow_hosts
        )
    except OSError as exc:
        db.close()
        raise command_options.Failure(f"Can't listen on {host}:{port}: {exc.strerror or exc}.") from None
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda signum, frame: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="sqsqlite-console", daemon=True)
    loop.start()
    mode = "read-only" if read_only else "read-write"
    auth = "basic credentials required" if access_key else "no credentials asked"
    warning = exposure_warning(str(server.server_address[0]), access_key is not None)
    if warning:
        click.echo(warning, err=True)
    click.echo(f"sqsqlite console on {db.path} at {server.url}/console ({mode}; {auth}); metrics at {server.url}/metrics", err=True)
    try:
        while not stop.wait(0.5) and loop.is_alive():
            pass
    finally:
        server.shutdown()
        server.server_close()
        for s, handler in previous.items():
            signal.signal(s, handler)
        db.close()
    click.echo("sqsqlite console stopped", err=True)
