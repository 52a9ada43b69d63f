"""The container image, built from the repository's Dockerfile and run for real with podman: it
becomes healthy, applies the mounted queues file, serves boto3, keeps its messages on the /data
volume across a new container, and stops on SIGTERM within 2 s; a mounted LocalStack ready.d
script makes its queues with awslocal.

Run by ``make test-container`` (which .ci/run runs after ``make test``), with
SQSQLITE_CONTAINER_TEST=1; skipped, with the reason, elsewhere. The two base images, Debian's
essential packages with python3 made by mmdebstrap (no registry needed), the build stage's with
the venv module and binutils too, are built once and kept in podman's store (BASES); the
sqsqlite image is built anew each run (pip from PyPI with the host's CA bundle mounted).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.server.server_helpers import boto3_client

ROOT = Path(__file__).resolve().parents[2]
# Its own tag: other checkouts on the machine build theirs in the same podman store.
IMAGE_TAG = f"localhost/sqsqlite:test-{os.getpid()}"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# podman on this machine kind: runc (crun is not installed), and default ulimits within the host's.
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
"""
QUEUES = """\
queues:
  - name: orders
    attributes: {VisibilityTimeout: 45}
    deadLetterQueue: {name: orders-dlq, maxReceiveCount: 3}
  - name: orders-dlq
"""

# A LocalStack ready.d script as LocalStack's guides write them: a FIFO queue and its dead-letter
# queue, made with awslocal once the endpoint serves.
READY_SCRIPT = """\
#!/bin/sh
set -e
awslocal sqs create-queue --queue-name events-dlq.fifo --attributes FifoQueue=true
dlq_arn=$(awslocal sqs get-queue-attributes --queue-url events-dlq.fifo --attribute-names QueueArn \\
          --query Attributes.QueueArn --output text)
awslocal sqs create-queue --queue-name events.fifo --attributes \\
  FifoQueue=true,RedrivePolicy="'{\\"deadLetterTargetArn\\":\\"$dlq_arn\\",\\"maxReceiveCount\\":\\"2\\"}'"
"""

pytestmark = pytest.mark.slow


def _why_not() -> str | None:
    if os.environ.get("SQSQLITE_CONTAINER_TEST") != "1":
        return "the container test runs in `make test-container` (SQSQLITE_CONTAINER_TEST=1), which .ci/run runs after make test"
    missing = [tool for tool in ("podman", "runc", "mmdebstrap") if shutil.which(tool) is None]
    if missing:
        return f"no {', '.join(missing)}: install Debian's podman, runc and mmdebstrap (make test-container does, as root)"
    if os.geteuid() != 0:
        return "podman runs rootful here, and this user is not root"
    return None


pytest.importorskip("boto3")
if _why_not():
    pytest.skip(_why_not() or "", allow_module_level=True)


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    env = {**os.environ, "CONTAINERS_CONF": str(conf)}

    def run(*args: str, check: bool = True, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
        done = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=timeout, **kwargs)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    run.env = env  # type: ignore[attr-defined]
    return run


# Debian's essential packages with python3 (merged /usr by hook rather than the usrmerge package,
# which brings Perl), without manuals, locales or docs but the copyrights; the build base adds the
# venv module and binutils (strip), which the image itself never needs.
BASES = {
    "localhost/sqsqlite-base:bookworm-run": ["python3"],
    "localhost/sqsqlite-base:bookworm-build": ["python3", "python3-venv", "binutils"],
}
EXCLUDES = [
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    "--dpkgopt=path-include=/usr/share/locale/locale.alias",
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/info/*",
]
# What installing leaves behind that nothing reads: debconf's and dpkg's old copies, the logs.
TIDY = 'rm -rf "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/var/log/*.log "$1"/var/log/apt'


def make_base(podman, tag: str, packages: list[str]) -> None:
    """A Debian bookworm base made by mmdebstrap (no registry needed), imported into podman's store."""
    strap = subprocess.Popen(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=essential",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
            f"--include={','.join(packages)}",
            *EXCLUDES,
            f"--customize-hook={TIDY}",
            "bookworm",
            "-",
        ],
        stdout=subprocess.PIPE,
        env=podman.env,
    )
    imported = podman("import", "-", tag, stdin=strap.stdout)
    assert strap.wait(60) == 0 and imported.returncode == 0


@pytest.fixture(scope="module")
def image(podman):
    """The image, built on the cached Debian bases (each made first where missing); its tag is
    this run's own, removed afterwards."""
    for tag, packages in BASES.items():
        if podman("image", "exists", tag, check=False).returncode != 0:
            make_base(podman, tag, packages)
    run_base, build_base = BASES
    # --layers=false: no build stage left behind in the store as an untagged image each run.
    build = ["build", "--format", "docker", "--layers=false", "-t", IMAGE_TAG]
    build += ["--build-arg", f"BASE={run_base}", "--build-arg", f"BUILD_BASE={build_base}"]
    if CA_BUNDLE.exists():  # pip behind this machine's proxy trusts what the host trusts
        build += ["-v", f"{CA_BUNDLE}:/run/host-ca.crt:ro", "--build-arg", "PIP_CERT=/run/host-ca.crt"]
    podman(*build, str(ROOT))
    yield IMAGE_TAG
    podman("rmi", "-f", IMAGE_TAG, check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy_after(url: str, started: float, limit: float = 30.0) -> float:
    """Seconds from ``started`` until /health answers 200 (polled every 20 ms)."""
    while time.monotonic() - started < limit:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{url}/health did not answer 200 within {limit} s")


def test_the_image_serves_sqs_keeps_messages_on_its_volume_and_stops_within_two_seconds(podman, image, tmp_path):
    queues = tmp_path / "queues.yaml"
    queues.write_text(QUEUES)
    queues.chmod(0o644)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    volume = f"sqsqlite-test-{os.getpid()}"
    names = [f"sqsqlite-test-{os.getpid()}-{i}" for i in (1, 2)]
    podman("volume", "create", volume)
    figures = {"image_mb": round(int(podman("image", "inspect", image, "--format", "{{.Size}}").stdout) / 1e6, 1)}
    try:
        for round_, name in enumerate(names):
            started = time.monotonic()
            podman(
                "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:9324", "-v", f"{volume}:/data",
                "-v", f"{queues}:/etc/sqsqlite/queues.yaml:ro", image,
            )  # fmt: skip
            figures[f"healthy_s_{round_ + 1}"] = round(_healthy_after(url, started), 2)
            # The image's own HEALTHCHECK command, run as podman runs it.
            assert podman("healthcheck", "run", name, check=False).returncode == 0
            sqs = boto3_client(url)
            queue = sqs.get_queue_url(QueueName="orders")["QueueUrl"]
            attrs = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
            assert attrs["VisibilityTimeout"] == "45" and json.loads(attrs["RedrivePolicy"])["maxReceiveCount"] == 3
            if round_ == 0:
                for i in range(5):
                    sqs.send_message(QueueUrl=queue, MessageBody=f"kept {i}")
                assert podman("exec", name, "id", "-u").stdout.strip() == "10001"  # the image's own user, not root
            else:  # a new container on the same volume: every message is still there
                bodies = set()
                for _ in range(5):
                    for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
                        bodies.add(m["Body"])
                assert bodies == {f"kept {i}" for i in range(5)}
            began = time.monotonic()
            podman("stop", "--time", "10", name)
            figures[f"stop_s_{round_ + 1}"] = round(time.monotonic() - began, 2)
            assert figures[f"stop_s_{round_ + 1}"] < 2.0
            state = podman("inspect", name, "--format", "{{.State.ExitCode}}").stdout.strip()
            assert state == "0", podman("logs", name, check=False).stderr
            assert "sqsqlite stopped" in podman("logs", name).stderr
            podman("rm", name)
    finally:
        for name in names:
            podman("rm", "-f", name, check=False)
        podman("volume", "rm", "-f", volume, check=False)
    print(f"\ncontainer figures: {json.dumps(figures)}")


def test_a_mounted_localstack_ready_script_makes_a_fifo_queue_and_its_dead_letter_queue(podman, image, tmp_path):
    ready = tmp_path / "ready.d"
    ready.mkdir()
    ready.chmod(0o755)
    script = ready / "01-queues.sh"
    script.write_text(READY_SCRIPT)
    script.chmod(0o755)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    name = f"sqsqlite-test-{os.getpid()}-init"
    try:
        podman("run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:9324", "-v", f"{ready}:/etc/localstack/init/ready.d:ro", image)
        _healthy_after(url, time.monotonic())
        deadline = time.monotonic() + 60
        while True:  # what a LocalStack wait script polls
            with urllib.request.urlopen(url + "/_localstack/init/ready", timeout=5) as r:
                answer = json.loads(r.read())
            if answer["completed"]:
                break
            assert time.monotonic() < deadline, answer
            time.sleep(0.1)
        assert answer["scripts"] == [{"stage": "READY", "name": "01-queues.sh", "state": "SUCCESSFUL"}], podman("logs", name).stderr
        sqs = boto3_client(url)
        queue = sqs.get_queue_url(QueueName="events.fifo")["QueueUrl"]
        dlq = sqs.get_queue_url(QueueName="events-dlq.fifo")["QueueUrl"]
        attrs = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        assert attrs["FifoQueue"] == "true"
        assert json.loads(attrs["RedrivePolicy"]) == {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2}
        assert sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == [queue]
        podman("stop", "--time", "10", name)
    finally:
        podman("rm", "-f", name, check=False)
