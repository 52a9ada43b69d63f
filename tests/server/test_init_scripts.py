"""LocalStack's init scripts under `sqsqlite serve --init-dir DIR`: boot.d's run before anything is
served, ready.d's once serve serves, one at a time top-down (a folder's own, then its subfolders'),
a failing one recorded ERROR while the rest still run, and none outliving serve; `awslocal sqs ...`
in them is sqsqlite's own sqs commands on the served database, any other service (or a run outside
serve's scripts) refused in one line; /_localstack/init and /_localstack/init/<stage> report the
scripts in LocalStack's shapes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqsqlite.cli.awslocal import OUTSIDE, REFUSED, translate
from sqsqlite.cli.main import cli
from sqsqlite.server.emulator import health_answer, is_health
from sqsqlite.server.init_scripts import InitScripts, StatusFile, find_scripts, script_environment

from .server_helpers import boto3_client, http_request

pytest.importorskip("uvicorn")

AWSLOCAL = str(Path(sys.executable).parent / "awslocal")
# A script that says its process id, then hangs (as the same process).
HANGS = "#!/bin/sh\necho $$ > {pid}\nexec sleep 300\n"

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


def _until(check, what, seconds: float = 60):
    """check()'s first true answer, polled; a guard, not a measure: after ``seconds`` the test
    fails, saying ``what`` (called, if callable, for what it shows then)."""
    deadline = time.monotonic() + seconds
    while not (answer := check()):
        if time.monotonic() > deadline:
            pytest.fail(str(what() if callable(what) else what))
        time.sleep(0.05)
    return answer


def _poll_json(url: str, path: str, until, seconds: float = 60) -> dict:
    """The path's JSON answer once ``until`` holds of it."""
    last: dict = {}

    def answer():
        status, _, body = http_request(url, path)
        assert status == 200
        last["answer"] = json.loads(body)
        return last["answer"] if until(last["answer"]) else None

    return _until(answer, lambda: f"last answer: {last.get('answer')}", seconds)


def _wait_for_file(path: Path, proc: subprocess.Popen | None, what, seconds: float = 60) -> str:
    """The text of ``path`` once it has one, while ``proc`` (if any) runs."""

    def text():
        assert proc is None or proc.poll() is None, what() if callable(what) else what
        return path.exists() and path.read_text().strip()

    return _until(text, what, seconds)


def _process_exists(pid: int) -> bool:
    """Whether process ``pid`` is alive (a zombie waiting for its reaper counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _ended(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while _process_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _process_exists(pid)


def _serve(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen:
    """serve with its standard output and error on pipes, as a caller waiting for its end has them
    (a --port in ``args`` wins over this 0)."""
    command = [sys.executable, "-m", "sqsqlite.server", "--db", str(tmp_path / "q.db"), "--port", "0", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def _stopped(proc: subprocess.Popen) -> tuple[int, str]:
    """SIGTERM to serve; its exit status and standard error once its pipes close (a guard: a script
    left holding them open fails it)."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("serve's output stayed open 60 s after SIGTERM: something it started outlived it")
    return proc.returncode, err


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ready_scripts_run_once_served_and_awslocal_makes_a_fifo_queue_with_its_dead_letter_queue(tmp_path, workers):
    init = _init_dir(tmp_path)
    ready = tmp_path / "ready"
    args = ["--db", str(tmp_path / "q.db"), "--port", "0", "--workers", workers, "--init-dir", str(init), "--ready-file", str(ready)]
    # serve's standard error (the scripts' too) to a file: read in an assertion's message.
    err = tmp_path / "serve.err"
    # A proxy nothing answers at: the scripts must not wait on it (nothing polls over HTTP).
    env = {k: v for k, v in os.environ.items() if k.lower() != "no_proxy"}
    env.update(http_proxy="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    with err.open("w") as errors:
        proc = subprocess.Popen([sys.executable, "-m", "sqsqlite.server", *args], stdout=subprocess.DEVNULL, stderr=errors, env=env)
    try:
        url = _wait_for_file(ready, proc, lambda: f"no ready file: {err.read_text()}")  # written once /health answers 200

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

        boot = json.loads(http_request(url, "/_localstack/init/boot")[2])
        assert boot == {"completed": True, "scripts": [{"stage": "BOOT", "name": "01-boot.sh", "state": "SUCCESSFUL"}]}

        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve did not stop 60 s after SIGTERM: {err.read_text()}")
        assert code == 0, err.read_text()
        assert "02-fail.sh failed (exit status 3)" in err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_scripts_run_top_down_a_folders_own_first_and_a_failing_one_does_not_stop_the_rest(tmp_path):
    ready = tmp_path / "init" / "ready.d"
    log = tmp_path / "log"
    _script(ready / "b" / "01.sh", f"#!/bin/sh\necho b/01 >> {log}\n")
    _script(ready / "sub" / "00.sh", f"#!/bin/sh\necho sub/00 >> {log}\n")
    _script(ready / "zz.sh", f"#!/bin/sh\necho zz >> {log}\n")
    _script(ready / "a.sh", f"#!/bin/sh\necho a >> {log}\nexit 1\n")
    _script(ready / "c.py", f"open({str(log)!r}, 'a').write('c\\n')\n")
    (ready / "d.sh").write_text(f"#!/bin/sh\necho d >> {log}\n")  # not executable: ERROR, as LocalStack's
    (ready / "notes.txt").write_text("not a script\n")
    init = InitScripts(tmp_path / "init")
    names = ("a.sh", "c.py", "d.sh", "zz.sh", "01.sh", "00.sh")
    assert init.status() == {
        "completed": {"BOOT": False, "START": True, "READY": False, "SHUTDOWN": False},
        "scripts": [{"stage": "READY", "name": n, "state": "UNKNOWN"} for n in names],
    }
    init.run_stage("BOOT", os.environ)
    init.run_stage("READY", os.environ)
    assert log.read_text() == "a\nc\nzz\nb/01\nsub/00\n"
    status = init.status()
    assert status["completed"] == {"BOOT": True, "START": True, "READY": True, "SHUTDOWN": False}
    assert [s["state"] for s in status["scripts"]] == ["ERROR", "SUCCESSFUL", "ERROR", "SUCCESSFUL", "SUCCESSFUL", "SUCCESSFUL"]


def test_a_stopped_init_starts_no_script_and_ends_the_one_running(tmp_path):
    pid = tmp_path / "pid"
    _script(tmp_path / "init" / "ready.d" / "01-hangs.sh", HANGS.format(pid=pid))
    _script(tmp_path / "init" / "ready.d" / "02-never.sh", f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    init = InitScripts(tmp_path / "init")
    thread = init.start_ready(os.environ)
    _wait_for_file(pid, None, "the script never started", 30)
    init.stop()
    thread.join(30)
    assert not thread.is_alive(), "the ready stage went on after stop()"
    assert _ended(int(pid.read_text())), "the script outlived stop()"
    assert not (tmp_path / "ran").exists()
    assert [s["state"] for s in init.status()["scripts"]] == ["ERROR", "UNKNOWN"]
    assert init.status()["completed"]["READY"] is False


def test_the_status_file_holds_what_the_workers_report(tmp_path):
    _script(tmp_path / "init" / "ready.d" / "01.sh", "#!/bin/sh\nexit 0\n")
    state = tmp_path / "status.json"
    init = InitScripts(tmp_path / "init", str(state))
    assert json.loads(state.read_text()) == init.status()
    init.run_stage("READY", os.environ)
    assert json.loads(state.read_text())["scripts"] == [{"stage": "READY", "name": "01.sh", "state": "SUCCESSFUL"}]


def test_a_worker_that_cannot_read_the_status_file_reports_nothing_completed(tmp_path):
    status = StatusFile(str(tmp_path / "none.json")).status()
    assert status == {"completed": {"BOOT": False, "START": False, "READY": False, "SHUTDOWN": False}, "scripts": []}
    assert json.loads(health_answer("/_localstack/init/ready", "ok", "1", status).body) == {"completed": False, "scripts": []}


def test_each_stage_is_answered_at_its_own_path_in_any_case_and_another_is_not_found():
    init = {
        "completed": {"BOOT": True, "START": True, "READY": False, "SHUTDOWN": False},
        "scripts": [{"stage": "BOOT", "name": "b.sh", "state": "SUCCESSFUL"}, {"stage": "READY", "name": "r.sh", "state": "RUNNING"}],
    }
    for path in ("/_localstack/init/boot", "/_localstack/init/BOOT", "/_localstack/init/Boot"):
        assert is_health(path)
        assert json.loads(health_answer(path, "ok", "1", init).body) == {"completed": True, "scripts": [init["scripts"][0]]}
    assert json.loads(health_answer("/_localstack/init/start", "ok", "1", init).body) == {"completed": True, "scripts": []}
    assert json.loads(health_answer("/_localstack/init/shutdown", "ok", "1", init).body) == {"completed": False, "scripts": []}
    assert json.loads(health_answer("/_localstack/init/ready", "ok", "1", init).body) == {
        "completed": False,
        "scripts": [init["scripts"][1]],
    }
    unknown = health_answer("/_localstack/init/later", "ok", "1", init)
    assert (unknown.status, unknown.body) == (404, b"")
    assert not is_health("/_localstack/init/ready/more")


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


def test_serve_with_an_init_folder_that_is_a_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "q.db"), "--port", "0", "--init-dir", str(tmp_path / "file")])
    assert result.exit_code != 0
    assert result.stderr.strip() == f"sqsqlite: The init folder {tmp_path / 'file'} is not a folder."
    assert not (tmp_path / "q.db").exists()


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
    env = {**os.environ, "SQSQLITE_INIT": "1", "SQSQLITE_DB": str(tmp_path / "q.db")}
    result = subprocess.run([AWSLOCAL, "s3", "ls"], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (255, "", REFUSED + "\n")
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("marker", [{}, {"SQSQLITE_INIT": "1"}], ids=["no marker", "no database"])
def test_awslocal_outside_serves_init_scripts_is_refused_in_one_line_and_makes_no_database(tmp_path, marker):
    env = {k: v for k, v in os.environ.items() if k not in ("SQSQLITE_INIT", "SQSQLITE_DB")}
    result = subprocess.run(
        [AWSLOCAL, "sqs", "list-queues"], capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**env, **marker}
    )
    assert (result.returncode, result.stdout, result.stderr) == (255, "", OUTSIDE + "\n")
    assert OUTSIDE.startswith("awslocal: ") and "aws --endpoint-url http://localhost:9324" in OUTSIDE
    assert not any(tmp_path.iterdir())  # no ./sqsqlite.db


def test_awslocal_sqs_runs_sqsqlites_command_on_the_database_of_sqsqlite_db(tmp_path):
    env = {**os.environ, "SQSQLITE_INIT": "1", "SQSQLITE_DB": str(tmp_path / "q.db"), "AWS_ENDPOINT_URL": "http://localhost:4566"}
    env.pop("SQSQLITE_ACCOUNT_ID", None)
    made = subprocess.run(
        [AWSLOCAL, "--region", "eu-west-1", "sqs", "create-queue", "--queue-name", "q"], capture_output=True, text=True, timeout=60, env=env
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {"QueueUrl": "http://localhost:4566/000000000000/q"}
    listed = subprocess.run(
        [AWSLOCAL, "sqs", "list-queues", "--region", "eu-west-1", "--output", "text"], capture_output=True, text=True, timeout=60, env=env
    )
    assert listed.stdout.split() == ["QUEUEURLS", "http://localhost:4566/000000000000/q"]


@pytest.mark.slow
def test_sigterm_while_a_boot_script_runs_stops_serve_and_the_script_at_once(tmp_path):
    pid, endpoint = tmp_path / "pid", tmp_path / "endpoint"
    _script(
        tmp_path / "init" / "boot.d" / "01-hangs.sh", HANGS.format(pid=pid).replace("\n", f'\necho "$AWS_ENDPOINT_URL" > {endpoint}\n', 1)
    )
    temp = tmp_path / "tmp"  # where --workers 2 would keep its status file
    temp.mkdir()
    with socket.socket() as probe:  # a port free now: the one the boot script is told
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = _serve(tmp_path, "--workers", "2", "--port", str(port), "--init-dir", str(tmp_path / "init"), TMPDIR=str(temp))
    try:
        script = int(_wait_for_file(pid, proc, "the boot script never started"))
        assert endpoint.read_text().strip() == f"http://localhost:{port}"  # awslocal's queue URLs are the endpoint's
        code, err = _stopped(proc)
        assert (code, err.strip()) == (0, "sqsqlite stopped")
        assert _ended(script), "the boot script outlived serve"
        assert list(temp.iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_ready_script_still_running_when_serve_stops_ends_with_it(tmp_path, workers):
    pid = tmp_path / "pid"
    _script(tmp_path / "init" / "ready.d" / "01-hangs.sh", HANGS.format(pid=pid))
    _script(tmp_path / "init" / "ready.d" / "02-never.sh", f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    proc = _serve(tmp_path, "--workers", workers, "--init-dir", str(tmp_path / "init"))
    try:
        script = int(_wait_for_file(pid, proc, "the ready script never started"))
        code, err = _stopped(proc)
        assert code == 0, err
        assert err.splitlines()[-1] == "sqsqlite stopped"
        assert _ended(script), "the ready script outlived serve"
        assert not (tmp_path / "ran").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
