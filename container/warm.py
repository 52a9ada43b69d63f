"""Run what the image runs once, in its build stage, so that Python writes the bytecode of exactly
the modules a start imports: ``sqsqlite apply-queues`` on an ElasticMQ file, then ``sqsqlite
serve`` with a YAML queues file, answering health, SQS (JSON and query), the console, /metrics
and the message look-up, stopped by SIGTERM. Each .pyc written is then made again as an
unchecked-hash one: the image's sources never change, and a copy between build stages that
changed their times would otherwise make every start compile them again (PYTHONDONTWRITEBYTECODE
in the image: a start would not keep them either). Run by slim.sh with the venv's python."""

from __future__ import annotations

import json
import os
import py_compile
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

BIN = Path(sys.prefix) / "bin"
SITE = Path(sysconfig.get_paths()["purelib"])
QUEUES_YAML = "queues:\n  - name: warm\n    attributes: {VisibilityTimeout: 45}\n    deadLetterQueue: {name: warm-dlq, maxReceiveCount: 3}\n  - name: warm-dlq\n"
ELASTICMQ = "queues {\n  warm-conf {\n    defaultVisibilityTimeout = 10 seconds\n    tags { team = a }\n  }\n}\n"


def call(url: str, path: str = "/", body: bytes | None = None, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url + path, data=body, headers={"Host": "localhost", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.read()
    except urllib.error.HTTPError as error:  # an error answer ran the same code
        return error.read()


def run_once(tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    db = str(tmp / "warm.db")
    (tmp / "queues.yaml").write_text(QUEUES_YAML)
    (tmp / "elasticmq.conf").write_text(ELASTICMQ)
    subprocess.run([BIN / "sqsqlite", "--db", db, "apply-queues", tmp / "elasticmq.conf"], env=env, check=True, capture_output=True)
    serve = [BIN / "sqsqlite", "serve", "--db", db, "--port", "0", "--queues", tmp / "queues.yaml"]
    proc = subprocess.Popen(serve, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = ""
        while "sqsqlite serving" not in line:
            line = proc.stderr.readline()
            if not line:
                raise SystemExit("sqsqlite serve stopped before serving")
        url = line.split(" at ", 1)[1].split()[0]
        for _ in range(300):  # "sqsqlite serving" is said once it serves: at once
            if json.loads(call(url, "/health"))["status"] == "ok":
                break
            time.sleep(0.1)
        call(url, "/_localstack/health")
        target = {"Content-Type": "application/x-amz-json-1.0"}
        queue = json.loads(call(url, "/", b'{"QueueName": "warm"}', {**target, "X-Amz-Target": "AmazonSQS.GetQueueUrl"}))["QueueUrl"]
        send = json.dumps({"QueueUrl": queue, "MessageBody": "warm"}).encode()
        call(url, "/", send, {**target, "X-Amz-Target": "AmazonSQS.SendMessage"})
        call(url, "/", b"Action=ListQueues", {"Content-Type": "application/x-www-form-urlencoded"})
        call(url, "/_aws/sqs/messages?QueueUrl=" + queue)
        receive = json.dumps({"QueueUrl": queue, "MaxNumberOfMessages": 10}).encode()
        call(url, "/", receive, {**target, "X-Amz-Target": "AmazonSQS.ReceiveMessage"})
        call(url, "/console")
        call(url, "/metrics")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_once(Path(tmp))
    made = 0
    for pyc in SITE.rglob("__pycache__/*.pyc"):
        source = pyc.parent.parent / (pyc.name.split(".", 1)[0] + ".py")
        if source.exists():
            py_compile.compile(str(source), cfile=str(pyc), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            made += 1
    print(f"warm: bytecode for the {made} modules a start imports")


if __name__ == "__main__":
    main()
