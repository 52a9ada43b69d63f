"""The ``serve`` click command (registered in the main ``sqsqlite`` group)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import click

from .. import defaults as D
from ..command_options import Failure, allow_host, db_option, host_option, install_extra, own_or_global, verbose_option
from ..console import exposure_warning
from ..errors import InvalidParameterValue, SQSError
from .queues_file import QueuesFileError, apply_queues, read_queues_file

log = logging.getLogger("sqsqlite.server")


def raise_open_files_limit() -> tuple[int, int] | None:
    """Raise this process's soft limit of open descriptors (RLIMIT_NOFILE) to its hard limit, as
    servers do: each connection and parked poll holds one, and the soft limit is often 1,024.
    Past it, the event loop (libuv) accepts and closes each new connection unseen, nothing
    logged. Workers inherit it. Returns (was, now) if raised; a limit that can't be raised is
    left as it is."""
    try:
        import resource
    except ImportError:  # not POSIX: nothing to raise
        return None
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        # An unlimited hard limit (macOS) is not a number the kernel takes for the soft one.
        if soft == resource.RLIM_INFINITY or hard == resource.RLIM_INFINITY or soft >= hard:
            return None
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        return None
    return soft, hard


def _a_number(param: click.Parameter, value: float) -> float:
    if value != value:  # nan, which FloatRange's comparisons let through
        raise click.BadParameter("nan is not a number of seconds.", param=param)
    return value


def applied_line(outcome: dict[str, list[str]]) -> str:
    """What applying a queues file did, on one line."""
    said = [f"{what.lower()} {len(names)}" for what, names in outcome.items() if what != "NotInFile"]
    line = ", ".join(said)
    if outcome["NotInFile"]:
        line += "; not in the file, left as they are: " + ", ".join(outcome["NotInFile"])
    return line


@click.command("serve")
@db_option
@host_option
@click.option("--port", default=9324, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port, printed at start).")
@click.option(
    "--account-id", default=None, help=f"Account of requests whose access key id is no 12-digit account (default {D.DEFAULT_ACCOUNT_ID})."
)
@click.option("--region", default=None, help=f"Region of requests whose signature names none (default {D.DEFAULT_REGION}).")
@click.option(
    "--url-style",
    envvar="SQSQLITE_URL_STYLE",
    type=click.Choice(D.URL_STYLES),
    default=D.DEFAULT_URL_STYLE,
    show_default=True,
    help="Queue URLs given: off <host>/<account>/<name>, standard sqs.<region>.<host>/..., domain <region>.queue.<host>/..., "
    "path <host>/queue/<region>/<account>/<name>.",
)
@click.option("--access-key", default=None, envvar="SQSQLITE_ACCESS_KEY", help="Require SigV4 signatures made with this access key ...")
@click.option(
    "--secret-key", default=None, envvar="SQSQLITE_SECRET_KEY", help="... and this secret key. Without both, any signature is accepted."
)
@click.option(
    "--max-request-bytes", default=None, type=click.IntRange(1024), help="Refuse larger request bodies (default: 4 MiB + 256 KiB)."
)
@click.option(
    "--max-receiving-bytes",
    default=None,
    type=click.IntRange(1024),
    help="Request bodies being received hold at most this much together; past it, 503 (default: 32 MiB).",
)
@click.option(
    "--lock-wait-seconds",
    default=D.LOCK_WAIT_SECONDS,
    show_default=True,
    type=click.FloatRange(min=0.001, max=D.LOCK_WAIT_SECONDS_MAX),
    callback=lambda ctx, param, value: _a_number(param, value),
    help="A request's write waits this long for the database's write lock, then is answered 503 (retried) having written nothing; "
    "keep it under the clients' read timeout (60 s in the AWS SDKs).",
)
@click.option("--console-read-only", is_flag=True, help="The web console at /console shows everything and changes nothing.")
@allow_host
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="Processes serving the one port and database file."
)
@click.option(
    "--queues",
    "queues_file",
    default=None,
    envvar="SQSQLITE_QUEUES",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Create or update the queues this file declares at start (YAML, JSON, or ElasticMQ's elasticmq.conf).",
)
@click.option(
    "--ready-file",
    default=None,
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Write this file once /health answers 200 (its text: the URL); removed when the server stops.",
)
@click.option(
    "--init-dir",
    default=None,
    envvar="SQSQLITE_INIT_DIR",
    metavar="DIR",
    type=click.Path(),  # checked in serve: refused in one line, not as a usage error
    help="Run LocalStack-style init scripts: DIR/boot.d's before serving, DIR/ready.d's once served "
    "(with awslocal on PATH); /_localstack/init reports them.",
)
@verbose_option
@click.pass_context
def serve(
    ctx,
    db_path,
    host,
    port,
    account_id,
    region,
    url_style,
    access_key,
    secret_key,
    max_request_bytes,
    max_receiving_bytes,
    lock_wait_seconds,
    console_read_only,
    allow_hosts,
    workers,
    queues_file,
    ready_file,
    init_dir,
    verbose,
):
    """Serve the database over SQS's HTTP protocols (JSON 1.0 and query/XML).

    Point any SDK at it: boto3.client("sqs", endpoint_url="http://127.0.0.1:9324"), or
    aws sqs ... --endpoint-url http://127.0.0.1:9324 (with a region and any credentials, or
    --no-sign-request when the server asks none). A browser finds the web console at /console
    and Prometheus its metrics at /metrics. SIGTERM or Ctrl-C stops it cleanly:
    no new connections, requests in progress finish, long polls end empty.
    --workers N serves from N processes on one port and file; a send through any
    of them wakes long polls waiting in the others, and one that dies is replaced.
    --queues FILE creates or updates the queues a file declares at every start (see
    apply-queues). The port opens first: GET /health answers 503 while the database is
    migrated and the file applied, 200 once served. One server holds every account's queues
    in every region: a request's region is its signature's, its account a 12-digit access key
    id (else --region and --account-id); --url-style picks the queue URLs it gives.
    --init-dir DIR runs LocalStack's init scripts (DIR/ready.d/*.sh once served, `awslocal sqs
    ...` in them working on this database) and /_localstack/init/ready reports them.

    \b
    Example: sqsqlite serve --db app.db --port 9324 --workers 2 --queues queues.yaml
    Example: sqsqlite serve --db app.db --init-dir /etc/localstack/init
    """
    try:
        from .endpoint import MAX_REQUEST_BYTES, listen, make_server
    except ImportError as exc:  # the server extra is not installed
        raise Failure(f"`sqsqlite serve` needs {exc.name or 'uvicorn'}, which is not installed: {install_extra('server')}.") from None
    from .starting import Starting

    if (access_key is None) != (secret_key is None):
        raise click.UsageError("--access-key and --secret-key go together: give both, or neither.")
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    specs = None
    if queues_file is not None:  # read and checked before anything listens: a bad file starts nothing
        try:
            specs = read_queues_file(queues_file)
        except QueuesFileError as err:
            raise Failure(str(err)) from None
    if ready_file is not None and not os.path.isdir(os.path.dirname(os.path.abspath(ready_file))):
        raise Failure(f"Can't write the ready file {ready_file}: its folder does not exist.")
    if init_dir is not None and not os.path.isdir(init_dir):
        raise Failure(f"The init folder {init_dir} " + ("is not a folder." if os.path.exists(init_dir) else "does not exist."))
    raised = raise_open_files_limit()
    if raised:
        log.info("open descriptors: limit raised from %d to %d", *raised)
    # Until serving sets its own, SIGTERM stops it at once and cleanly: a container's PID 1 ignores
    # a signal it has no handler for, and `docker stop` would wait out its grace period. The
    # caller's handler is back when the command ends, however it ends (serve run in a test's or
    # an application's process must not leave a handler that ends that process).
    # What stops at once with serve while it starts (the init script running).
    on_stop_while_starting = ctx.with_resource(_handler_while_starting())
    announce = ctx.with_resource(_ready_file(ready_file))
    init = None
    if init_dir is not None:
        from .init_scripts import InitScripts, script_environment

        init = InitScripts(init_dir)
        on_stop_while_starting.append(init.stop)
        ctx.call_on_close(init.stop)  # however serve ends, no script outlives it
        db_file = os.path.abspath(own_or_global(ctx, "db_path", db_path, None) or D.DEFAULT_DB_PATH)
        # The endpoint's URL as it will be (with --port 0 it is not known before listening).
        boot_url = loopback_url(f"http://{_url_host(host)}:{port}").replace("://127.0.0.1:", "://localhost:") if port else ""
        boot_env = script_environment(
            boot_url,
            db_file,
            own_or_global(ctx, "account_id", account_id, D.DEFAULT_ACCOUNT_ID),
            own_or_global(ctx, "region", region, D.DEFAULT_REGION),
            access_key,
            secret_key,
        )
        if not boot_url:
            del boot_env["AWS_ENDPOINT_URL"]
        init.run_stage("BOOT", boot_env)  # SIGTERM meanwhile stops serve (and the script) at once
        if workers > 1:  # the workers answer /_localstack/init: they read the status from a file
            # Made after BOOT: SIGTERM during it ends the process at once, leaving no folder.
            state_dir = ctx.with_resource(tempfile.TemporaryDirectory(prefix="sqsqlite-init-"))
            ctx.call_on_close(init.stop)  # again, so before the folder goes: a ready script's last status write never races it
            on_stop_while_starting.append(functools.partial(shutil.rmtree, state_dir, ignore_errors=True))
            init.write_status_to(os.path.join(state_dir, "status.json"))
    try:
        sock = listen(host, port)
    except OSError as exc:
        raise Failure(f"Can't listen on {host}:{port}: {exc.strerror or exc}.") from None
    # Listening first: while the database is migrated and the queues file applied, a probe gets
    # 503 "starting" from /health (and SQS requests a 503 they retry), not a refused connection.
    try:
        with Starting(sock, max_request_bytes or MAX_REQUEST_BYTES):
            server = make_server(
                own_or_global(ctx, "db_path", db_path, None),
                account_id=own_or_global(ctx, "account_id", account_id, D.DEFAULT_ACCOUNT_ID),
                region=own_or_global(ctx, "region", region, D.DEFAULT_REGION),
                url_style=url_style,
                access_key=access_key,
                secret_key=secret_key,
                max_request_bytes=max_request_bytes or MAX_REQUEST_BYTES,
                max_receiving_bytes=max_receiving_bytes or D.MAX_RECEIVING_BYTES,
                lock_wait_seconds=lock_wait_seconds,
                verbose=verbose,
                console_read_only=console_read_only,
                allow_hosts=allow_hosts,
                sock=sock,
            )
            if specs is not None:
                try:
                    outcome = apply_queues(server.db, specs, queues_file)
                except BaseException:
                    server.db.close()
                    raise
                click.echo(f"queues from {queues_file}: " + applied_line(outcome), err=True)
    except InvalidParameterValue as exc:  # --account-id or --region
        sock.close()
        raise click.UsageError(exc.message) from None
    except QueuesFileError as err:
        sock.close()
        raise Failure(str(err), "Nothing was served and nothing written; fix the file and start again.") from None
    except SQSError as exc:  # the database: not one, unreadable, from a newer sqsqlite ...
        sock.close()
        raise Failure(exc.message, exc.hint) from None
    except Exception as exc:
        sock.close()
        if specs is None:
            raise
        raise Failure(f"Applying {queues_file} failed: {type(exc).__name__}: {exc}.", "Nothing was served.") from None

    auth = "SigV4 signatures required" if access_key else "any signature accepted"
    warning = exposure_warning(server.server_address[0], access_key is not None)  # the address bound, not its spelling
    if warning:
        click.echo(warning, err=True)
    ready_env: dict[str, str] = {}
    if init is not None:
        if server.app.emulator is not None:
            server.app.emulator.init = init
        # A wildcard address is reached on loopback; localhost in the URLs the scripts print.
        ready_env = script_environment(
            loopback_url(server.url).replace("://127.0.0.1:", "://localhost:"),
            server.db.path,
            server.db.account_id,
            server.db.region,
            access_key,
            secret_key,
        )

    def run_ready() -> None:
        """READY's scripts, in a thread of their own, from the moment serve serves."""
        if init is not None:
            init.start_ready(ready_env)

    where = f"{server.db.path} at {server.url}" + (f" with {workers} workers" if workers > 1 else "")
    line = f"sqsqlite serving {where} (default account {server.db.account_id}, region {server.db.region}; {auth})"
    if workers > 1:
        from .workers import run_workers

        options = {
            "db_path": server.db.path,
            "account_id": server.db.account_id,
            "region": server.db.region,
            "url_style": url_style,
            "access_key": access_key,
            "secret_key": secret_key,
            "max_request_bytes": server.dispatcher.max_request_bytes,
            "max_receiving_bytes": server.app.max_receiving,
            "lock_wait_seconds": server.app.lock_wait_seconds,
            "verbose": verbose,
            "console_read_only": console_read_only,
            "allow_hosts": list(allow_hosts),
            "init_status": init.state_file if init is not None else None,
        }
        server.db.close()  # it checked the file; each worker opens its own

        def started():
            click.echo(line, err=True)
            announce(server.url)
            run_ready()

        problem = run_workers(options, workers, server.socket, started)
        if init is not None:
            init.stop()
    else:
        with stopped_by_signals(server):
            click.echo(line, err=True)
            # Starting has handed the socket over: a connection from now on waits in its backlog
            # for serve() to accept it and answer /health 200.
            announce(server.url)
            run_ready()
            server.serve()
            if init is not None:
                init.stop()
        problem = None if server.clean else "some requests did not finish in time"
    click.echo("sqsqlite stopped" + (f" ({problem})" if problem else ""), err=True)
    if problem:
        ctx.exit(1)


def _url_host(host: str) -> str:
    """``host`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def loopback_url(url: str) -> str:
    """The URL to reach a server bound to ``url``'s address from this machine (a wildcard
    address, 0.0.0.0 or ::, is reached on loopback)."""
    return url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")


@contextlib.contextmanager
def stopped_by_signals(server: Any) -> Iterator[None]:
    """While the block runs, SIGTERM and SIGINT stop ``server`` cleanly (a second Ctrl-C: at
    once); the caller's handlers are back after it, however it ends."""

    def on_signal(signum, frame):
        server.request_stop(force=server.stopping and signum == signal.SIGINT)
        server.stopping = True

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _handler_while_starting() -> Iterator[list[Callable[[], None]]]:
    """Yields a list: what SIGTERM calls before the process ends, while serve starts."""
    cleanups: list[Callable[[], None]] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: _stopped_while_starting(cleanups))
    try:
        yield cleanups
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _ready_file(path: str | None) -> Iterator[Callable[[str], None]]:
    """announce(url) writes ``path`` (whole or not at all: a reader never sees it half written);
    it is removed when the command ends, however it ends. One a killed server left is removed
    first: a script waiting for the file must not take it for this server's."""
    written = False
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    def announce(url: str) -> None:
        nonlocal written
        if path is None:
            return
        partial = f"{path}.{os.getpid()}.partial"
        try:
            with open(partial, "w", encoding="utf-8") as f:
                f.write(url + "\n")
            os.replace(partial, path)
        except OSError as exc:
            raise Failure(f"Can't write the ready file {path}: {exc.strerror or exc}.") from None
        written = True

    try:
        yield announce
    finally:
        if written:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)  # type: ignore[arg-type]


def _stopped_while_starting(cleanups: list[Callable[[], None]]) -> None:
    """SIGTERM before anything was served. What is half done (a migration, a queue of the queues
    file) is a transaction SQLite rolls back, as after a crash, and the next start does it again;
    what is owed is ``cleanups`` (an init script stopped, a folder removed), then the process
    ends here."""
    for cleanup in cleanups:
        cleanup()
    sys.stderr.write("sqsqlite stopped\n")
    sys.stderr.flush()
    os._exit(0)
