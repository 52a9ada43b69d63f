"""What the report needs around it, when it is wrong: the Java that Spark runs. Each is one line
naming what is wrong, no traceback, and changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqsqlite.report import synthetic
from sqsqlite.report.cli import report

pytestmark = [pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]

AS_OF = 1_750_000_000_000
REPORT = [sys.executable, "-m", "sqsqlite.report.cli"]


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> str:
    """1,000 messages."""
    path = str(tmp_path_factory.mktemp("setup") / "app.db")
    synthetic.build(path, 1000, AS_OF)
    return path


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
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr == (
        f"Error: JAVA_HOME={home} holds no java ({wrong}), and Spark runs JAVA_HOME's java whenever it is set: "
        f"point JAVA_HOME at a Java 17 or later installation (the directory above bin/java), or unset it to use {on_path}\n"
    )


def test_a_java_home_without_a_java_and_no_java_on_the_path_is_one_line_saying_what_to_install(database, tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", "/nonexistent")
    result = CliRunner().invoke(report, ["--db", database])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"Error: JAVA_HOME={tmp_path / 'jdk'} holds no java ({tmp_path / 'jdk'}: No such file or directory)")
    assert result.output.endswith("or unset it and install Java 17 or later (e.g. `apt-get install openjdk-17-jre-headless`)\n")
