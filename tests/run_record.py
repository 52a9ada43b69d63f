"""A pytest plugin that tests/checked_run.py loads (``-p tests.run_record``): when the session
finishes, it writes the run's record (tests collected, tests whose teardown ended, how many
passed, skipped, failed or errored, pytest's exit status) as JSON to the file that
$SQSQLITE_TEST_RECORD names. A run ended before that (os._exit, a signal) writes none."""

from __future__ import annotations

import json
import os

RECORD_VARIABLE = "SQSQLITE_TEST_RECORD"

# The run so far: tests collected, tests whose teardown ended, each test's worst outcome.
_run: dict = {}
_WORSE = ["passed", "skipped", "failed", "error"]
_record_path: list[str] = []
_pid: list[int] = []  # the session's own process: a child forked by a test writes no record


def pytest_configure(config):
    # Read once and taken out of the environment: a pytest that a test runs in a child process
    # must not write over this run's record.
    _record_path[:] = [os.environ.pop(RECORD_VARIABLE, "")]
    _pid[:] = [os.getpid()]


def pytest_collection_finish(session):
    _run.update(collected=len(session.items), finished=set(), outcomes={})


def pytest_runtest_logreport(report):
    if not _run:
        return
    if report.when == "call" or report.outcome != "passed":
        outcome = "error" if report.failed and report.when != "call" else report.outcome
        was = _run["outcomes"].get(report.nodeid, "passed")
        _run["outcomes"][report.nodeid] = max(was, outcome, key=_WORSE.index)
    if report.when == "teardown":
        _run["finished"].add(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    path = _record_path[0] if _record_path else ""
    if not path or _pid != [os.getpid()]:
        return
    counts: dict[str, int] = {}
    for outcome in _run.get("outcomes", {}).values():
        counts[outcome] = counts.get(outcome, 0) + 1
    record = {
        "collected": _run.get("collected"),
        "finished": len(_run.get("finished", ())),
        "outcomes": counts,
        "exitstatus": int(exitstatus),
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f)
