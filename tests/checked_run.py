"""Run pytest, then fail unless every test it collected ran to its end and none failed.

    python tests/checked_run.py [pytest's arguments]

pytest's own exit status is not enough: a test (or the code it runs) that ends the process, by
os._exit(0) for one, ends the run with status 0 after however many tests had run. The plugin
tests/run_record.py, loaded here, writes a record when the session finishes (tests collected,
tests finished, their outcomes, pytest's exit status); no record, or one with fewer tests
finished than collected, is a failure.
make test, test-pythons, test-sqlite and test-container run their suites through this.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from run_record import RECORD_VARIABLE  # beside this file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def verdict(record: dict | None, status: int) -> str | None:
    """Why the run is a failure, or None if every collected test ran and none failed."""
    if record is None:
        return f"pytest exited with status {status} without finishing its session: the run ended early"
    if record["exitstatus"] != status:
        return f"pytest exited with status {status} after its session finished with {record['exitstatus']}"
    if status != 0:
        return f"pytest exited with status {status}"
    if not record["collected"]:
        return "no test was collected"
    if record["finished"] != record["collected"]:
        return f"{record['finished']} of {record['collected']} collected tests ran to their end"
    bad = {k: n for k, n in record["outcomes"].items() if k in ("failed", "error")}
    if bad:
        return "tests failed: " + ", ".join(f"{n} {k}" for k, n in bad.items())
    return None


def main(argv: list[str]) -> int:
    fd, path = tempfile.mkstemp(prefix="sqsqlite-test-record-", suffix=".json")
    os.close(fd)
    os.remove(path)  # only pytest_sessionfinish makes it
    try:
        path_before = os.environ.get("PYTHONPATH")
        env = {**os.environ, RECORD_VARIABLE: path, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, path_before]))}
        status = subprocess.call([sys.executable, "-m", "pytest", "-p", "tests.run_record", *argv], env=env)
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
        except (FileNotFoundError, ValueError):
            record = None
    finally:
        if os.path.exists(path):
            os.remove(path)
    why = verdict(record, status)
    if why is None:
        assert record is not None
        print(f"checked_run: all {record['collected']} collected tests ran to their end", flush=True)
        return 0
    print(f"checked_run: FAILED: {why}", file=sys.stderr, flush=True)
    return status or 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
