"""The container's entrypoint turns its environment variables into sqsqlite serve's options, as
docs/howto/emulator.md's table says (run here with a stand-in sqsqlite that prints its arguments)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ENTRYPOINT = Path(__file__).resolve().parents[2] / "container" / "entrypoint.sh"


def serve_args(tmp_path, **env: str) -> list[str]:
    stub = tmp_path / "bin" / "sqsqlite"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    stub.chmod(0o755)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SQSQLITE_")}
    done = subprocess.run(
        ["sh", str(ENTRYPOINT)], env={**clean, **env, "PATH": f"{stub.parent}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=10
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX sh")


def test_without_settings_it_serves_the_data_volume_on_9324_for_the_containers_network(tmp_path):
    args = serve_args(tmp_path)
    assert args[:7] == ["serve", "--db", "/data/sqsqlite.db", "--host", "0.0.0.0", "--port", "9324"]


def test_each_setting_becomes_its_option(tmp_path):
    args = serve_args(
        tmp_path,
        SQSQLITE_DB="/data/x.db",
        SQSQLITE_PORT="4566",
        SQSQLITE_REGION="eu-west-1",
        SQSQLITE_ACCOUNT_ID="123456789012",
        SQSQLITE_WORKERS="2",
        SQSQLITE_CONSOLE_READ_ONLY="true",
        SQSQLITE_VERBOSE="1",
        SQSQLITE_ALLOW_HOSTS="sqs app.local",
    )
    text = " ".join(args)
    for part in (
        "--db /data/x.db",
        "--port 4566",
        "--region eu-west-1",
        "--account-id 123456789012",
        "--workers 2",
        "--console-read-only",
        "--verbose",
        "--allow-host sqs --allow-host app.local",
    ):
        assert part in text
    assert "--queues" not in args or not os.path.exists("/opt/elasticmq.conf")


def test_an_init_folder_named_by_its_variable_is_left_to_serve_to_read(tmp_path):
    # SQSQLITE_INIT_DIR is serve's own environment variable, as SQSQLITE_QUEUES is.
    args = serve_args(tmp_path, SQSQLITE_INIT_DIR="/srv/init")
    assert "--init-dir" not in args


def test_a_queues_file_named_by_its_variable_is_left_to_serve_to_read(tmp_path):
    # SQSQLITE_QUEUES is serve's own environment variable: the entrypoint adds no --queues of its own.
    args = serve_args(tmp_path, SQSQLITE_QUEUES="/etc/q.yaml")
    assert "--queues" not in args
