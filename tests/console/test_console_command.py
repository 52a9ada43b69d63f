"""``sqsqlite console`` as a real process: it says where it listens, serves, and stops on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.cli.main import cli
from sqsqlite.testing import wait_until_ready

from .helpers import Browserless, populate


@pytest.mark.slow
def test_the_console_command_serves_until_sigterm_and_then_exits_0(tmp_path):
    path = str(tmp_path / "cmd.db")
    with sqsqlite.connect(path) as db:
        populate(db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.cli.main", "--db", path, "console", "--port", "0", "--read-only"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "(read-only; no credentials asked)" in line, line
        url = re.search(r"at (http://127\.0\.0\.1:\d+)/console", line).group(1)
        wait_until_ready(url, process=proc)
        page = Browserless(url).get("/console")
        assert page.status == 200 and 'data-queue="orders-dlq"' in page.text and path in page.text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert "sqsqlite console stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_access_key_without_its_secret_key_is_bad_usage(tmp_path):
    r = CliRunner().invoke(cli, ["console", "--db", str(tmp_path / "x.db"), "--access-key", "AKID"], env={"SQSQLITE_SECRET_KEY": None})
    assert r.exit_code == 252 and "--access-key and --secret-key go together" in r.output


def test_the_console_command_is_listed_and_has_help_with_an_example():
    r = CliRunner().invoke(cli, ["--help"])
    assert re.search(r"console\s+The web console and /metrics", r.output)
    r = CliRunner().invoke(cli, ["console", "--help"])
    assert r.exit_code == 0 and "Example: sqsqlite console --db app.db --read-only" in r.output and "--read-only" in r.output


def test_without_the_console_extra_the_command_says_what_to_install_and_exits_255(monkeypatch):
    from sqsqlite.cli import main

    for module in ("sqsqlite.server.console_command", "sqsqlite.console.app"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if Jinja2 were not installed
    monkeypatch.delitem(main.cli.commands, "console", raising=False)
    r = CliRunner().invoke(main.cli, ["console"], standalone_mode=True)
    assert r.exit_code == 255
    assert (
        "`sqsqlite console` needs jinja2, which is not installed: pip install 'sqsqlite[console]' (from a clone: pip install -e '.[console]')."
        in r.output
    )


def test_a_server_off_this_machine_without_keys_is_started_with_a_warning(tmp_path):
    from sqsqlite.console import exposure_warning

    assert exposure_warning("127.0.0.1", keyed=False) is None and exposure_warning("::1", keyed=False) is None
    assert exposure_warning("0.0.0.0", keyed=True) is None
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.cli.main", "--db", str(tmp_path / "lan.db"), "console", "--host", "0.0.0.0", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        warning, serving = proc.stderr.readline(), proc.stderr.readline()
        assert warning.startswith("warning: listening on 0.0.0.0 with no --access-key/--secret-key") and "DNS rebinding" in warning
        assert serving.startswith("sqsqlite console on"), serving
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("value", ["alias:9325", "http://alias", "alias/console", ""])
def test_an_allow_host_with_a_port_scheme_or_path_or_empty_is_refused_by_serve_and_console(value):
    from sqsqlite.server.command import serve
    from sqsqlite.server.console_command import console

    # Under the group's own context, as the command line makes them: click keeps the first help
    # option a command is given, and a context of its own would leave serve's --help without -h.
    parent = click.Context(cli, info_name="sqsqlite", **cli.context_settings)
    for command in (console, serve):  # options parsed, nothing run
        with pytest.raises(click.BadParameter, match="without a port, scheme or path"):
            command.make_context(command.name, ["--allow-host", value], parent=parent)


def test_a_bad_allow_host_is_a_usage_error_said_before_anything_starts(tmp_path):
    path = str(tmp_path / "never.db")
    r = CliRunner().invoke(cli, ["--db", path, "console", "--read-only", "--allow-host", "alias:9325"])
    assert r.exit_code == 252 and "Invalid value for '--allow-host': 'alias:9325' is not a host name" in r.output


def test_a_read_only_console_refuses_a_file_of_an_older_schema_instead_of_upgrading_it(tmp_path):
    from sqsqlite import migrate
    from sqsqlite.store import HEAD_REVISION, Store

    path = str(tmp_path / "old.db")
    store = Store(path)
    migrate.downgrade(store, "-1")
    older = store.current_revision()
    store.close()
    r = CliRunner().invoke(cli, ["--db", path, "console", "--read-only"])
    assert r.exit_code == 255
    assert f"{path!r} has schema revision {older!r}, older than this sqsqlite's ({HEAD_REVISION!r})" in r.output
    assert f"upgrade it first: sqsqlite db upgrade --db {path}" in r.output
    store = Store(path, migrate=False)
    assert store.current_revision() == older  # nothing written
    store.close()


def test_a_read_only_console_refuses_an_empty_file_and_leaves_it_empty(tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    r = CliRunner().invoke(cli, ["--db", str(path), "console", "--read-only"])
    assert r.exit_code == 255 and "has no sqsqlite schema yet" in r.output
    assert path.stat().st_size == 0
