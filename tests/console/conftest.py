"""A served database with something in every state, on a manual clock."""

from __future__ import annotations

import pytest

import sqsqlite
from sqsqlite.server import BackgroundServer

from .helpers import Browserless, populate


@pytest.fixture
def served(tmp_path, clock):
    """An endpoint (SQS, /console, /metrics) on a populated database."""
    path = str(tmp_path / "console.db")
    with sqsqlite.connect(path, clock=clock) as db:
        db.set_history_retention(14 * 86_400)  # on, as a user turns it on: the queue pages chart it
        populate(db, clock)
    server = BackgroundServer(path, clock=clock)
    yield server
    server.stop()


@pytest.fixture
def web(served):
    return Browserless(served.url)
