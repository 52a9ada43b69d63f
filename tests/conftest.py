"""Shared fixtures: a fresh database on a manual clock for every timing rule."""

import pytest

import sqsqlite


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
