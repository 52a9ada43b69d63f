"""pytest fixtures for code that uses SQS: a fresh sqsqlite database per test, in process or
behind a real endpoint, on the system clock or on one the test moves.

Installed with sqsqlite as a pytest plugin (the ``pytest11`` entry point), so a project's tests
ask for them by name, with no import and no conftest:

    def test_orders_are_processed(sqsqlite_endpoint):
        sqs = boto3.client("sqs")  # the application's own code, unchanged: it talks to sqsqlite
        ...

- ``sqsqlite_db``: a ``Database`` on a new file in the test's temporary directory.
- ``sqsqlite_client``: ``sqsqlite.client()`` on a new file (boto3's SQS client's methods,
  responses and exceptions, in process: no server, no network).
- ``sqsqlite_server``: ``sqsqlite serve`` on a new file, in a thread, on a free loopback port
  (a ``BackgroundServer``: ``.url``, ``.db``); stopped after the test.
- ``sqsqlite_endpoint``: that server's URL, also set for the test as ``AWS_ENDPOINT_URL_SQS``
  (with a region and placeholder credentials where none are set), so every
  ``boto3.client("sqs")`` made during the test, in the test or in the code it calls, uses it.
- ``sqsqlite_clock``: a ``ManualClock``. Asked for by a test, it is the clock of every fixture
  above in that test: ``sqsqlite_clock.advance(31)`` ends a 30-second visibility timeout, a
  delay or a retention period at once, with no sleep. A long poll that finds nothing then
  returns at once, having moved the clock on by its wait.

Each of these fixtures makes its own file (read the server's through ``sqsqlite_server.db``),
so tests never see each other's queues. Only this module's names
are imported when pytest loads the plugin; the engine and the server load when a test asks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .client import SQSClient
    from .clock import ManualClock
    from .core import Database
    from .server import BackgroundServer

# Filled in only where a test leaves them unset: botocore needs a region and credentials to sign
# with, and the server accepts any signature unless it was given keys.
_PLACEHOLDERS = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@contextlib.contextmanager
def _on_a_new_file(
    make: Callable[..., Any], request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, end: str = "close"
) -> Iterator[Any]:
    """make(path, **options) on a new file in the test's temporary directory, with the test's
    ManualClock when it asked for one; its method ``end`` called after the test."""
    options = {"clock": request.getfixturevalue("sqsqlite_clock")} if "sqsqlite_clock" in request.fixturenames else {}
    made = make(str(tmp_path_factory.mktemp("sqsqlite") / "sqs.db"), **options)
    try:
        yield made
    finally:
        getattr(made, end)()


@pytest.fixture
def sqsqlite_clock() -> ManualClock:
    """A clock that moves only when the test says (``advance(seconds)``, ``set(epoch_ms)``); the
    clock of the test's other sqsqlite fixtures."""
    from .clock import ManualClock

    return ManualClock()


@pytest.fixture
def sqsqlite_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A sqsqlite Database on a new file, closed after the test."""
    from .core import connect

    with _on_a_new_file(connect, request, tmp_path_factory) as db:
        yield db


@pytest.fixture
def sqsqlite_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQSClient]:
    """``sqsqlite.client()`` on a new file: boto3's SQS client, in process."""
    from .client import client

    with _on_a_new_file(client, request, tmp_path_factory) as sqs:
        yield sqs


@pytest.fixture
def sqsqlite_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """``sqsqlite serve`` on a new file, in a thread, on a free loopback port; stopped after. Its
    ``.db`` is the region and account the test's boto3 clients sign for (AWS_REGION or
    AWS_DEFAULT_REGION, else us-east-1; a 12-digit AWS_ACCESS_KEY_ID as the account): the queues
    they make are the ones it holds (one server keeps each region's and account's apart)."""
    import functools
    import os

    from . import validation as V
    from .errors import InvalidParameterValue
    from .server import BackgroundServer

    scope = {}
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or _PLACEHOLDERS["AWS_DEFAULT_REGION"]
    key = os.environ.get("AWS_ACCESS_KEY_ID") or ""
    with contextlib.suppress(InvalidParameterValue):  # one the server can't take: its default
        scope["region"] = V.region(region)
    with contextlib.suppress(InvalidParameterValue):
        scope["account_id"] = V.account_id(key)
    with _on_a_new_file(functools.partial(BackgroundServer, **scope), request, tmp_path_factory, end="stop") as server:
        yield server


@pytest.fixture
def sqsqlite_endpoint(sqsqlite_server: BackgroundServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test's server's URL, set as AWS_ENDPOINT_URL_SQS for the test (boto3 1.28.81 and later
    read it): every ``boto3.client("sqs")`` made meanwhile talks to the server."""
    import os

    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", sqsqlite_server.url)
    # Set, it would have boto3 ignore the variable above: the test's clients would reach Amazon SQS.
    monkeypatch.delenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", raising=False)
    for name, value in _PLACEHOLDERS.items():
        if not os.environ.get(name):
            monkeypatch.setenv(name, value)
    try:
        import boto3
    except ImportError:  # the code under test makes its clients some other way
        pass
    else:
        # boto3.client() keeps one session for the process, with the credentials it first found:
        # the test's own, from the variables above, and afterwards the one from before again, so
        # no later test signs with the placeholders (nor this one with a developer's keys).
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    return sqsqlite_server.url


def wait_until_ready(url: str, timeout: float = 30.0, process: Any = None, path: str = "/health") -> None:
    """Return once ``GET {url}{path}`` answers 200: ``sqsqlite serve`` migrated its database and
    serves (``sqsqlite console`` answers /health too, once it serves). An
    open port is not enough: ``serve`` listens first and answers 503 while it starts. Raises
    ``TimeoutError`` after ``timeout`` seconds, or ``RuntimeError`` as soon as ``process`` (a
    ``subprocess.Popen``, if given) has exited. Meant for tests and scripts that start a server
    in another process or thread."""
    import time
    import urllib.error
    import urllib.request

    health = url.rstrip("/") + path
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode} before {health} answered 200")
        try:
            with urllib.request.urlopen(health, timeout=max(0.1, min(5.0, deadline - time.monotonic()))) as answer:
                if answer.status == 200:
                    return
                last = answer.status
        except urllib.error.HTTPError as exc:  # 503 while it starts
            last = exc.code
        except OSError as exc:  # refused or reset: not listening yet
            last = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{health} did not answer 200 within {timeout:g} s (last: {last})")
        time.sleep(0.05)
