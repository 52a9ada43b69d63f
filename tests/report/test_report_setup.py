"""What the report needs around it, when it is wrong: the temporary directory it works in, and the
Java that Spark runs. Each is one line naming what is wrong, no traceback, and changes nothing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqsqlite.report import cli as report_cli
from sqsqlite.report import snapshot, synthetic
from sqsqlite.report import spark as sj
from sqsqlite.report.cli import report

pytestmark = [pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]

AS_OF = 1_750_000_000_000
REPORT = [sys.executable, "-m", "sqsqlite.report.cli"]
PAGE = 4096  # a tmpfs's unit of space


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> str:
    """1,000 messages: a snapshot of about 90 KB."""
    path = str(tmp_path_factory.mktemp("setup") / "app.db")
    synthetic.build(path, 1000, AS_OF)
    return path


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _no_spark_needed(*args, **kwargs):
    raise AssertionError("Spark started although the report could not run")


def in_a_small_tmpfs(tmp_path: Path, size: int, command: list[str], **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``command`` with ``env`` and a tmpfs of ``size`` bytes mounted at tmp_path/small (named
    $SMALL in ``env``'s values), in a mount namespace of its own that goes with it; returns the run
    and what the tmpfs held after it. Mounting needs root: skipped elsewhere."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount a small tmpfs in a mount namespace of its own")
    small, listing = tmp_path / "small", tmp_path / "listing"
    small.mkdir()
    script = (
        'mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99; shift 2; timeout -s KILL 60 "$@"; s=$?; ls -A "$SMALL" > "$LISTING"; exit $s'
    )
    values = {k: v.replace("$SMALL", str(small)) for k, v in env.items()}
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sh", str(size), str(small), *command],
        env={**os.environ, **values, "SMALL": str(small), "LISTING": str(listing)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode == 99:
        pytest.skip(f"could not mount a tmpfs: {done.stderr.strip()}")
    return done, listing.read_text().split()


# ------------------------------------------------------------------ the account and region


def test_the_account_and_region_given_after_report_pick_its_queues_over_those_given_before(database, monkeypatch):
    from sqsqlite.cli.main import cli

    scopes = []

    def take(*args, scope=None, **kwargs):
        scopes.append(scope)
        raise snapshot.SnapshotError("taken no further")

    monkeypatch.setattr(snapshot, "take", take)
    monkeypatch.setattr(report_cli, "get_session", _no_spark_needed)
    before = ["--db", database, "--region", "us-west-2", "--account-id", "222222222222"]
    result = CliRunner().invoke(cli, [*before, "report", "--region", "eu-west-1", "--account-id", "111111111111"])
    assert (result.exit_code, result.output) == (255, "sqsqlite: taken no further\n")
    result = CliRunner().invoke(cli, [*before, "report"])
    assert scopes == [("111111111111", "eu-west-1"), ("222222222222", "us-west-2")]


@pytest.mark.parametrize("flag, value", [("--region", "us_east!1"), ("--account-id", "12345")])
def test_an_account_or_region_after_report_that_is_none_is_bad_usage_before_the_database_is_read(database, monkeypatch, flag, value):
    from sqsqlite.cli.main import cli

    monkeypatch.setattr(snapshot, "take", _no_spark_needed)
    result = CliRunner().invoke(cli, ["--db", database, "report", flag, value])
    assert result.exit_code == 252, result.output
    assert f"Invalid value for '{flag}'" in result.output


# ------------------------------------------------------------------ the temporary directory


def test_a_full_temporary_directory_is_one_line_naming_it_and_the_os_error_and_changes_nothing(database, tmp_path):
    before = digest(database)
    done, left = in_a_small_tmpfs(tmp_path, 64 * 1024, [*REPORT, "--db", database], TMPDIR="$SMALL")
    small = tmp_path / "small"
    assert done.returncode == 255, done.stderr
    assert done.stderr == (
        f"sqsqlite: the temporary directory {small} cannot hold the report's working files (No space left on device): "
        "make room there, or set TMPDIR to a directory with room\n"
    )
    assert done.stdout == "" and left == [] and digest(database) == before


def test_a_temporary_directory_without_room_for_sparks_start_is_one_line_before_spark_starts(database, tmp_path):
    # The snapshot fits with a page to spare, which Spark's log took: its JVM could not hand
    # pyspark its port through a file there, stayed up, and pyspark waited for it for ever.
    snap = snapshot.take(database, str(tmp_path / "measure.db"))
    pages = -(-os.path.getsize(snap.path) // PAGE) + 1
    done, left = in_a_small_tmpfs(tmp_path, pages * PAGE, [*REPORT, "--db", database], TMPDIR="$SMALL")
    assert done.returncode == 255, done.stderr
    assert done.stderr == (
        f"sqsqlite: the temporary directory {tmp_path / 'small'} cannot hold the report's working files "
        "(4,096 bytes free, under the 65,536 Spark needs there to start): make room there, or set TMPDIR to a directory with room\n"
    )
    assert left == []


def test_a_tmpdir_python_passed_over_is_named_with_its_os_error_when_the_directory_used_is_full(database, tmp_path):
    (tmp_path / "a-file").write_text("")
    unusable = tmp_path / "a-file" / "tmp"  # under a regular file: Python takes TEMP's directory instead
    done, left = in_a_small_tmpfs(tmp_path, 64 * 1024, [*REPORT, "--db", database], TMPDIR=str(unusable), TEMP="$SMALL")
    assert done.returncode == 255, done.stderr
    assert done.stderr.startswith(
        f"sqsqlite: the temporary directory {tmp_path / 'small'} cannot hold the report's working files (No space"
    )
    assert done.stderr.endswith(f" (TMPDIR={unusable} was passed over: Not a directory)\n")
    assert left == []


def test_a_temporary_directory_that_refuses_the_reports_folder_is_one_line_naming_it(database, tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    blocked = tmp_path / "a-file" / "tmp"  # nothing can be made under a regular file, even by root
    monkeypatch.setattr(tempfile, "tempdir", str(blocked))
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(report_cli, "get_session", _no_spark_needed)
    result = CliRunner().invoke(report, ["--db", database])
    assert result.exit_code == 255, result.output
    assert result.output == (
        f"sqsqlite: the temporary directory {blocked} cannot hold the report's working files (Not a directory): "
        "make room there, or set TMPDIR to a directory with room\n"
    )


def test_an_out_folder_that_cannot_be_written_is_one_line_before_spark_starts(database, tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "report"  # nothing can be made under a regular file, even by root
    monkeypatch.setattr(report_cli, "get_session", _no_spark_needed)
    result = CliRunner().invoke(report, ["--db", database, "--out", str(out)])
    assert result.exit_code == 255, result.output
    assert result.output == f"sqsqlite: can't write the report to {out}: Not a directory\n"


def test_a_snapshot_that_fails_part_way_leaves_no_file_behind(database, tmp_path):
    def interrupted():
        raise KeyboardInterrupt

    dest = tmp_path / "snapshot.db"
    with pytest.raises(KeyboardInterrupt):
        snapshot.take(database, str(dest), while_open=interrupted)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ JAVA_HOME


def _missing(home: Path) -> str:
    return f"{home}: No such file or directory"


def _without_java(home: Path) -> str:
    home.mkdir()
    return f"{home}/bin/java: No such file or directory"


def _java_not_a_program(home: Path) -> str:
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("not a program\n")
    return f"{home}/bin/java is not an executable file"


@pytest.mark.parametrize(
    "make", [_missing, _without_java, _java_not_a_program], ids=["missing", "without bin/java", "bin/java not executable"]
)
def test_a_java_home_without_a_java_is_one_line_naming_it_though_java_is_on_the_path(database, tmp_path, make):
    on_path = shutil.which("java")
    if on_path is None:
        pytest.skip("needs a java on the PATH")
    home = tmp_path / "jdk"
    wrong = make(home)
    done = subprocess.run(
        [*REPORT, "--db", database], env={**os.environ, "JAVA_HOME": str(home)}, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 255, done.stderr[-2000:]
    assert done.stderr == (
        f"sqsqlite: JAVA_HOME={home} holds no java ({wrong}), and Spark runs JAVA_HOME's java whenever it is set: "
        f"point JAVA_HOME at a Java 17 or later installation (the directory above bin/java), or unset it to use {on_path}\n"
    )


def test_a_java_home_without_a_java_and_no_java_on_the_path_is_one_line_saying_what_to_install(database, tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", "/nonexistent")
    result = CliRunner().invoke(report, ["--db", database])
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"sqsqlite: JAVA_HOME={tmp_path / 'jdk'} holds no java ({tmp_path / 'jdk'}: No such file or directory)")
    assert result.output.endswith("or unset it and install Java 17 or later (e.g. `apt-get install openjdk-17-jre-headless`)\n")


@pytest.mark.parametrize(("master", "local_dir"), [("local[2]", True), ("local-cluster[2,1,1024]", True), ("spark://head:7077", False)])
def test_a_local_spark_keeps_its_scratch_space_in_the_temporary_directory_tmpdir_names(tmp_path, monkeypatch, master, local_dir):
    from pyspark.sql import SparkSession

    from sqsqlite.report import spark as report_spark

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    settings: dict[str, str] = {}

    class Builder:  # records the session's settings; starts nothing
        def master(self, value):
            return self

        def appName(self, value):  # noqa: N802 - pyspark's name
            return self

        def config(self, key, value):
            settings[key] = value
            return self

        def getOrCreate(self):  # noqa: N802 - pyspark's name
            raise RuntimeError("not started in this test")

    monkeypatch.setattr(SparkSession, "builder", Builder())
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    with pytest.raises(report_spark.SetupError):
        report_spark.get_session(master, jar="/usr/share/java/sqlite-jdbc.jar")
    assert settings.get("spark.local.dir") == (str(tmp_path) if local_dir else None)


def test_a_spark_job_that_fails_is_one_line_naming_its_root_cause(database, monkeypatch):
    failure = (
        "An error occurred while calling o97.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
        "Caused by: java.io.IOException: No space left on device\n"
        "\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)\n"
    )

    def failing(*args, **kwargs):
        raise RuntimeError(failure)

    monkeypatch.setattr(report_cli, "compute", failing)
    result = CliRunner().invoke(report, ["--db", database, "--as-of", str(AS_OF)])
    assert result.exit_code == 255, result.output
    assert result.output.splitlines()[-1] == "sqsqlite: the Spark job failed: java.io.IOException: No space left on device"


# ------------------------------------------------------------------ the Python Spark's workers run


def another_python() -> str:
    """A python3 of another minor version than this one (pyenv's, or on PATH), or a skip."""
    this = "{}.{}".format(*sys.version_info[:2])
    found = sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.*/bin/python3"))
    found += [Path(p) for p in filter(None, (shutil.which(f"python3.{minor}") for minor in range(10, 15)))]
    for python in found:
        done = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() not in ("", this) and done.stdout.startswith("3."):
            return str(python)
    pytest.skip(f"needs a python3 of another version than {this}")


def script_python() -> str:
    """The interpreter the console script beside this Python runs (its #! line)."""
    return (Path(sys.executable).parent / "sqsqlite").read_text().splitlines()[0].removeprefix("#!").strip()


def run_without_activating(tmp_path: Path, database: str, **env: str) -> subprocess.CompletedProcess:
    """`<venv>/bin/sqsqlite report`, as a cron job or a service runs it: the virtual environment
    not activated, and another version's python3 first on PATH."""
    script = Path(sys.executable).parent / "sqsqlite"
    if not script.exists():
        pytest.skip(f"no sqsqlite console script beside {sys.executable}")
    first = tmp_path / "other-python"
    first.mkdir()
    (first / "python3").symlink_to(another_python())
    (first / "python").symlink_to(another_python())
    quiet = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR", "VIRTUAL_ENV")}
    environment = {**quiet, "PATH": f"{first}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(
        [str(script), "report", "--db", database, "--as-of", str(AS_OF)], env=environment, capture_output=True, text=True, timeout=300
    )


def test_the_report_runs_sparks_workers_on_its_own_python_whatever_python3_is_first_on_path(database, jdbc_jar, tmp_path):
    done = run_without_activating(tmp_path, database, SQSQLITE_JDBC_JAR=jdbc_jar)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PYTHON_VERSION_MISMATCH" not in done.stdout + done.stderr
    assert "Fair queues" in done.stdout  # the whole report, down to its last section


def test_a_python_the_user_gives_spark_is_kept_and_a_mismatch_is_one_line_saying_what_to_set(database, jdbc_jar, tmp_path):
    done = run_without_activating(tmp_path, database, SQSQLITE_JDBC_JAR=jdbc_jar, PYSPARK_PYTHON=another_python())
    assert done.returncode == 255
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "sqsqlite: the Spark job failed: PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker has different version"
    )
    version = "{}.{}".format(*sys.version_info[:2])
    assert line.endswith(
        f"(give Spark's workers a Python {version}: PYSPARK_PYTHON or spark.pyspark.python; set neither, and in local mode they run {script_python()})"
    )


@pytest.mark.parametrize(
    "text",
    [
        "spark.pyspark.python /opt/py/bin/python3\n",
        "spark.pyspark.python=/opt/py/bin/python3\n",
        "spark.pyspark.python : /opt/py/bin/python3\n",
    ],
)
def test_spark_pyspark_python_in_spark_defaults_counts_as_the_users_own(tmp_path, text):
    (tmp_path / "spark-defaults.conf").write_text("# settings\nspark.driver.memory 4g\n" + text)
    assert sj.python_for_workers({"SPARK_CONF_DIR": str(tmp_path)}) == "/opt/py/bin/python3"
    assert sj.python_for_workers({"SPARK_HOME": str(tmp_path.parent), "PYSPARK_PYTHON": "/usr/bin/python3.11"}) == "/usr/bin/python3.11"
    assert sj.python_for_workers({"SPARK_HOME": str(tmp_path)}) is None  # no conf/ there
