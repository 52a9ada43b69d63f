"""Shared fixtures: a fresh database on a manual clock for every timing rule, and a check that no
test leaves a signal handler, working directory or environment variable changed."""

import os
import signal
import threading
import warnings

import pytest

import sqsqlite

# Set by pytest itself around each phase of each test.
_PYTEST_OWN = {"PYTEST_CURRENT_TEST"}
# Set in process, for good, by a library a test runs (Celery's worker, for the children it forks;
# the aws CLI's package, when first imported).
_LIBRARIES_OWN = ("CELERY_LOG_", "_MP_FORK_", "AWS_DATA_PATH")
_SIGNALS = [signal.SIGTERM, signal.SIGINT]


class LeftThread(UserWarning):
    """A test left a non-daemon thread running."""


@pytest.fixture(autouse=True)
def _leaves_the_process_as_it_found_it():
    """Fails a test after which SIGTERM's or SIGINT's handler, the working directory or an
    environment variable is not what it was (monkeypatch's changes are undone before this looks).
    A handler left behind would end or outlive a later test: serve's while-starting handler
    once ended the whole run with exit status 0. What was changed is put back first. A
    non-daemon thread the test started and left running is reported as a warning only (one
    finishing its last step as the test ends is no fault)."""
    handlers = [signal.getsignal(s) for s in _SIGNALS]
    threads = set(threading.enumerate())
    cwd = os.getcwd()
    environ = _environ()
    yield
    left = []
    for sig, handler in zip(_SIGNALS, handlers):
        now = signal.getsignal(sig)
        if now != handler:
            left.append(f"{sig.name}'s handler {now!r} (was {handler!r})")
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    if os.getcwd() != cwd:
        left.append(f"the working directory {os.getcwd()!r} (was {cwd!r})")
        os.chdir(cwd)
    after = _environ()
    if after != environ:
        changed = sorted(k for k in environ.keys() | after.keys() if environ.get(k) != after.get(k))
        left.append("the environment variables " + ", ".join(changed))
        for k in after.keys() - environ.keys():
            del os.environ[k]
        os.environ.update(environ)
    running = [t.name for t in threading.enumerate() if t not in threads and not t.daemon and t.is_alive()]
    if running:
        warnings.warn(LeftThread(f"the test left non-daemon threads running: {', '.join(running)}"), stacklevel=1)
    if left:
        pytest.fail("the test left the process changed: " + "; ".join(left), pytrace=False)


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _PYTEST_OWN and not k.startswith(_LIBRARIES_OWN)}


@pytest.fixture
def clock():
    return sqsqlite.ManualClock()


class SteppingClock(sqsqlite.SystemClock):
    """The system clock, which a test steps as NTP at boot or a resumed virtual machine does:
    now_ms moves by ``offset`` milliseconds; real waits stay real."""

    offset = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.offset


@pytest.fixture
def stepping_clock():
    return SteppingClock()


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "test.db")


@pytest.fixture
def db(db_path, clock):
    database = sqsqlite.connect(db_path, clock=clock)
    yield database
    database.close()


@pytest.fixture
def queue(db):
    return db.create_queue("orders")


@pytest.fixture(scope="module")
def moto_server():
    """moto's server on loopback, standing in for Amazon SQS and S3: (endpoint URL, an environment
    with its dummy credentials). One per test module; each test names its own queues or buckets."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    pytest.importorskip("moto")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise
            time.sleep(0.2)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
    env.pop("AWS_CA_BUNDLE", None)
    yield endpoint, env
    server.terminate()
    server.wait(timeout=10)
