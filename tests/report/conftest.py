"""Spark for the report's tests. A machine without Java or the SQLite JDBC driver skips the
tests that need them, saying what to install; every other test still runs."""

from __future__ import annotations

import os
import shutil

import pytest

from sqsqlite.report import spark as sj


@pytest.fixture(scope="session")
def jdbc_jar() -> str:
    """The driver jar, when Java and the driver are there to run Spark with."""
    try:
        jar = sj.resolve_jar(os.environ.get("SQSQLITE_JDBC_JAR"))
    except sj.SetupError:
        jar = None
    if shutil.which("java") is None or jar is None:
        pytest.skip(f"needs Java and the SQLite JDBC driver at {sj.DEFAULT_JAR} (make jdbc, or apt-get install libxerial-sqlite-jdbc-java)")
    return jar


@pytest.fixture(scope="session")
def spark(jdbc_jar):
    session, created = sj.get_session("local[2]", jdbc_jar)
    yield session
    if created:
        session.stop()
