"""LocalStack's init scripts under `sqsqlite serve --init-dir DIR`: boot.d's run before anything is
served, ready.d's once /health answers 200, one at a time in lexical order, a failing one recorded
ERROR while the rest still run; `awslocal sqs ...` in them is sqsqlite's own sqs commands on the
served database, any other service refused in one line; /_localstack/init and
/_localstack/init/ready report the scripts in LocalStack's shapes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqsqlite.cli.awslocal import REFUSED, translate
from sqsqlite.cli.main import cli
from sqsqlite.server.emulator import health_answer
from sqsqlite.server.init_scripts import InitScripts, find_scripts, script_environment

from .server_helpers import boto3_client, http_request

pytest.importorskip("uvicorn")

AWSLOCAL = str(Path(sys.executable).parent / "awslocal")

CREATE_FIFO_WITH_DLQ = """\
#!/bin/sh
set -e
awslocal sqs create-queue --queue-name jobs-dlq.fifo --attributes FifoQueue=true
arn=$(awslocal sqs get-queue-attributes --queue-url jobs-dlq.fifo --attribute-names QueueArn \\
      --query Attributes.QueueArn --output text)
awslocal --region "$AWS_DEFAULT_REGION" sqs create-queue --queue-name jobs.fifo --attributes \\
  "{\\"FifoQueue\\":\\"true\\",\\"RedrivePolicy\\":\\"{\\\\\\"deadLetterTargetArn\\\\\\":\\\\\\"$arn\\\\\\",\\\\\\"maxReceiveCount\\\\\\":\\\\\\"3\\\\\\"}\\"}"
"""


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    path.chmod(0o755)
    return path


def _init_dir(tmp_path: Path) -> Path:
    init = tmp_path / "init"
    _script(init / "boot.d" / "01-boot.sh", "#!/bin/sh\nawslocal sqs create-queue --queue-name made-at-boot > /dev/null\n")
    # Waits for the test's word: the test sees it RUNNING and the scripts after it UNKNOWN.
    _script(init / "ready.d" / "00-wait.sh", "#!/bin/sh\ni=0\nwhile [ ! -f ../../go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n")
    _script(init / "ready.d" / "01-create.sh", CREATE_FIFO_WITH_DLQ)
    _script(init / "ready.d" / "02-fail.sh", "#!/bin/sh\nexit 3\n")
    _script(init / "ready.d" / "03-other-service.sh", "#!/bin/sh\nawslocal s3 ls 2> ../../s3.err\necho $? > ../../s3.status\n")
    return init


def _poll_json(url: str, path: str, until, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        status, _, body = http_request(url, path)
        assert status == 200
        answer = json.loads(body)
        if until(answer):
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ready_scripts_run_once_served_and_awslocal_makes_a_fifo_queue_with_its_dead_letter_queue(tmp_path, workers):
    init = _init_dir(tmp_path)
    ready = tmp_path / "ready"
    args = ["--db", str(tmp_path / "q.db"), "--port", "0", "--workers", workers, "--init-dir", str(init), "--ready-file", str(ready)]
    # serve's standard error (the scripts' too) to a file: read in an assertion's message.
    err = tmp_path / "serve.err"
    with err.open("w") as errors:
        proc = subprocess.Popen([sys.executable, "-m", "sqsqlite.server", *args], stdout=subprocess.DEVNULL, stderr=errors)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():  # written once /health answers 200
            assert proc.poll() is None and time.monotonic() < deadline, f"no ready file: {err.read_text()}"
            time.sleep(0.05)
        url = ready.read_text().strip()

        waiting = _poll_json(url, "/_localstack/init", lambda a: a["scripts"][1:] and a["scripts"][1]["state"] == "RUNNING")
        assert waiting["completed"] == {"BOOT": True, "START": True, "READY": False, "SHUTDOWN": False}
        assert [(s["stage"], s["name"], s["state"]) for s in waiting["scripts"]] == [
            ("BOOT", "01-boot.sh", "SUCCESSFUL"),
            ("READY", "00-wait.sh", "RUNNING"),
            ("READY", "01-create.sh", "UNKNOWN"),
            ("READY", "02-fail.sh", "UNKNOWN"),
            ("READY", "03-other-service.sh", "UNKNOWN"),
        ]
        (tmp_path / "go").touch()

        done = _poll_json(url, "/_localstack/init/ready", lambda a: a["completed"])
        assert [s["state"] for s in done["scripts"]] == ["SUCCESSFUL", "SUCCESSFUL", "ERROR", "SUCCESSFUL"], err.read_text()
        assert done["scripts"] == [
            {"stage": "READY", "name": "00-wait.sh", "state": "SUCCESSFUL"},
            {"stage": "READY", "name": "01-create.sh", "state": "SUCCESSFUL"},
            {"stage": "READY", "name": "02-fail.sh", "state": "ERROR"},
            {"stage": "READY", "name": "03-other-service.sh", "state": "SUCCESSFUL"},
        ]
        sqs = boto3_client(url)
        queue_url = sqs.get_queue_url(QueueName="jobs.fifo")["QueueUrl"]
        dlq_url = sqs.get_queue_url(QueueName="jobs-dlq.fifo")["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        assert attributes["FifoQueue"] == "true"
        assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}
        assert sqs.list_dead_letter_source_queues(QueueUrl=dlq_url)["queueUrls"] == [queue_url]
        assert sqs.get_queue_url(QueueName="made-at-boot")["QueueUrl"]
        assert (tmp_path / "s3.err").read_text() == REFUSED + "\n"
        assert (tmp_path / "s3.status").read_text().strip() == "255"

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, err.read_text()
        assert "02-fail.sh failed (exit status 3)" in err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_scripts_run_in_lexical_order_and_a_failing_one_does_not_stop_the_rest(tmp_path):
    ready = tmp_path / "init" / "ready.d"
    log = tmp_path / "log"
    _script(ready / "b" / "01.sh", f"#!/bin/sh\necho b/01 >> {log}\n")
    _script(ready / "a.sh", f"#!/bin/sh\necho a >> {log}\nexit 1\n")
    _script(ready / "c.py", f"open({str(log)!r}, 'a').write('c\\n')\n")
    (ready / "d.sh").write_text(f"#!/bin/sh\necho d >> {log}\n")  # not executable: ERROR, as LocalStack's
    (ready / "notes.txt").write_text("not a script\n")
    init = InitScripts(tmp_path / "init")
    assert init.status() == {
        "completed": {"BOOT": False, "START": True, "READY": False, "SHUTDOWN": False},
        "scripts": [{"stage": "READY", "name": n, "state": "UNKNOWN"} for n in ("a.sh", "01.sh", "c.py", "d.sh")],
    }
    init.run_stage("BOOT", os.environ)
    init.run_stage("READY", os.environ)
    assert log.read_text() == "a\nb/01\nc\n"
    status = init.status()
    assert status["completed"] == {"BOOT": True, "START": True, "READY": True, "SHUTDOWN": False}
    assert [s["state"] for s in status["scripts"]] == ["ERROR", "SUCCESSFUL", "SUCCESSFUL", "ERROR"]


def test_the_status_file_holds_what_the_workers_report(tmp_path):
    _script(tmp_path / "init" / "ready.d" / "01.sh", "#!/bin/sh\nexit 0\n")
    state = tmp_path / "status.json"
    init = InitScripts(tmp_path / "init", str(state))
    assert json.loads(state.read_text()) == init.status()
    init.run_stage("READY", os.environ)
    assert json.loads(state.read_text())["scripts"] == [{"stage": "READY", "name": "01.sh", "state": "SUCCESSFUL"}]


def test_a_stage_without_its_folder_has_no_scripts(tmp_path):
    assert find_scripts(tmp_path / "ready.d") == []


def test_the_ready_path_is_not_completed_while_the_database_is_unavailable():
    init = {"completed": {"BOOT": True, "START": True, "READY": True, "SHUTDOWN": False}, "scripts": []}
    assert json.loads(health_answer("/_localstack/init/ready", "unavailable", "1", init).body) == {"completed": False, "scripts": []}
    assert json.loads(health_answer("/_localstack/init/ready", "ok", "1", init).body) == {"completed": True, "scripts": []}
    # Without --init-dir: no scripts, READY completed once served.
    assert json.loads(health_answer("/_localstack/init", "ok", "1").body)["completed"]["READY"] is True


def test_the_scripts_get_the_endpoint_the_database_and_defaults(tmp_path, monkeypatch):
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    env = script_environment("http://localhost:9324", "q.db", "123456789012", "eu-west-1", None, None)
    assert env["AWS_ENDPOINT_URL"] == "http://localhost:9324"
    assert env["SQSQLITE_DB"] == str(tmp_path / "q.db")  # absolute: the scripts run in their own folder
    assert (env["SQSQLITE_ACCOUNT_ID"], env["AWS_DEFAULT_REGION"]) == ("123456789012", "eu-west-1")
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("test", "test")
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert "AWS_DEFAULT_REGION" not in script_environment("", "q.db", "000000000000", "us-east-1", "k", "s")


def test_serve_with_an_init_folder_that_does_not_exist_is_refused_in_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "q.db"), "--port", "0", "--init-dir", str(tmp_path / "none")])
    assert result.exit_code != 0
    assert result.stderr.strip() == f"sqsqlite: The init folder {tmp_path / 'none'} does not exist."


def test_awslocal_keeps_the_aws_clis_global_options_sqsqlite_takes_and_drops_the_rest():
    env = {"AWS_ENDPOINT_URL": "http://localhost:4566", "SQSQLITE_ACCOUNT_ID": "000000000000", "AWS_DEFAULT_REGION": "eu-west-1"}
    args = ["--endpoint-url=http://localhost:4566", "--profile", "p", "--output", "text", "sqs", "list-queues", "--no-verify-ssl"]
    assert translate(args, env) == [
        "--endpoint-url",
        "http://localhost:4566",
        "--account-id",
        "000000000000",
        "--region",
        "eu-west-1",
        "--output",
        "text",
        "list-queues",
    ]
    # A region given wins over the environment's, wherever it stands.
    assert translate(["sqs", "list-queues", "--region", "us-west-2"], env)[-3:] == ["list-queues", "--region", "us-west-2"]
    assert "eu-west-1" not in translate(["sqs", "list-queues", "--region", "us-west-2"], env)
    assert translate(["--region", "us-west-2", "s3", "ls"], env) is None
    assert translate([], env) is None


def test_awslocal_refuses_any_other_service_in_one_line(tmp_path):
    result = subprocess.run([AWSLOCAL, "s3", "ls"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (255, "", REFUSED + "\n")
    assert not any(tmp_path.iterdir())  # nothing written


def test_awslocal_sqs_runs_sqsqlites_command_on_the_database_of_sqsqlite_db(tmp_path):
    env = {**os.environ, "SQSQLITE_DB": str(tmp_path / "q.db"), "AWS_ENDPOINT_URL": "http://localhost:4566"}
    env.pop("SQSQLITE_ACCOUNT_ID", None)
    made = subprocess.run(
        [AWSLOCAL, "--region", "eu-west-1", "sqs", "create-queue", "--queue-name", "q"], capture_output=True, text=True, timeout=60, env=env
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {"QueueUrl": "http://localhost:4566/000000000000/q"}
    listed = subprocess.run(
        [AWSLOCAL, "sqs", "list-queues", "--region", "eu-west-1", "--output", "text"], capture_output=True, text=True, env=env
    )
    assert listed.stdout.split() == ["QUEUEURLS", "http://localhost:4566/000000000000/q"]


@pytest.mark.slow
def test_sigterm_while_a_boot_script_runs_stops_serve_at_once(tmp_path):
    started, done = tmp_path / "started", tmp_path / "done"
    # Runs until the test says so (30 s at most): SIGTERM must not wait for it.
    _script(
        tmp_path / "init" / "boot.d" / "01-slow.sh",
        f"#!/bin/sh\ntouch {started}\ni=0\nwhile [ ! -f {done} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n",
    )
    args = ["--db", str(tmp_path / "q.db"), "--port", "0", "--init-dir", str(tmp_path / "init")]
    proc = subprocess.Popen([sys.executable, "-m", "sqsqlite.server", *args], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the boot script never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert proc.stderr.read().strip() == "sqsqlite stopped"  # type: ignore[union-attr]
    finally:
        done.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
