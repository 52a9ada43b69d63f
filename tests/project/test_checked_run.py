"""make test's gate (tests/checked_run.py): red unless every collected test ran to its end and
passed. pytest's own exit status is 0 when a test ends the process with os._exit(0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def checked(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_it.py").write_text(body)
    argv = [sys.executable, str(ROOT / "tests" / "checked_run.py"), "-q", "-p", "no:cacheprovider", str(tmp_path / "test_it.py")]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


ENDS_EARLY = "import os\n\ndef test_one(): pass\n\ndef test_two(): os._exit(0)\n\ndef test_three(): pass\n"


def test_a_run_a_test_ends_with_os_exit_0_is_red_though_pytest_exited_0(tmp_path):
    # pytest alone says nothing is wrong:
    (tmp_path / "x.py").write_text(ENDS_EARLY)
    bare = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "x.py")], cwd=ROOT, capture_output=True
    )
    assert bare.returncode == 0
    done = checked(tmp_path, ENDS_EARLY)
    assert done.returncode == 1, done
    assert "checked_run: FAILED: pytest exited with status 0 without finishing its session: the run ended early" in done.stderr


FORKS_THEN_ENDS_EARLY = (
    "import os\n\ndef test_one(): pass\n\n"
    "def test_two():\n    child = os.fork()\n    if child:\n        os.waitpid(child, 0)\n        os._exit(0)\n\n"
    "def test_three(): pass\n"
)


def test_a_child_a_test_forked_finishing_the_session_does_not_make_a_run_ended_early_green(tmp_path):
    # The child returns into pytest, runs the rest and finishes the session; the parent ends early.
    done = checked(tmp_path, FORKS_THEN_ENDS_EARLY)
    assert done.returncode == 1, done
    assert "the run ended early" in done.stderr


def test_a_run_where_every_test_ran_and_passed_is_green(tmp_path):
    done = checked(tmp_path, "import pytest\n\ndef test_one(): pass\n\n@pytest.mark.skip\ndef test_two(): pass\n")
    assert done.returncode == 0, done
    assert "checked_run: all 2 collected tests ran to their end" in done.stdout


@pytest.mark.parametrize(
    ("body", "status"),
    [("def test_one(): assert False\n", 1), ("def test_nothing_collected_here(): pass\n", 0)],
    ids=["a failure", "all passed"],
)
def test_pytests_own_failure_keeps_its_status(tmp_path, body, status):
    done = checked(tmp_path, body)
    assert done.returncode == status, done


@pytest.mark.parametrize(
    ("record", "status", "why"),
    [
        (None, 0, "without finishing its session"),
        ({"collected": 3, "finished": 1, "outcomes": {"passed": 1}, "exitstatus": 0}, 0, "1 of 3 collected tests ran to their end"),
        ({"collected": 0, "finished": 0, "outcomes": {}, "exitstatus": 0}, 0, "no test was collected"),
        ({"collected": 2, "finished": 2, "outcomes": {"passed": 1, "error": 1}, "exitstatus": 0}, 0, "1 error"),
        ({"collected": 2, "finished": 2, "outcomes": {"passed": 2}, "exitstatus": 0}, 0, None),
    ],
)
def test_the_verdict_on_a_record(record, status, why):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from checked_run import verdict
    finally:
        sys.path.remove(str(ROOT / "tests"))
    said = verdict(record, status)
    assert (said is None) if why is None else (why in said)
