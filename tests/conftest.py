"""Shared fixtures: a fresh database on a manual clock for every timing rule."""

import pytest

import sqsqlite


@pytest.fixture
def clock():
    return sqsqlite.ManualClock()


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
