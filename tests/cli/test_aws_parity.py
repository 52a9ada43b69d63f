"""The aws CLI and sqsqlite print the same thing for the same command line.

Each scenario runs its command lines twice on one database: through the real aws CLI (version 1,
the dev extra's, driven in this process as its `aws` script drives it) against `sqsqlite serve`
on that file, and through `sqsqlite` with the same --endpoint-url, so queue URLs agree. The two
sides use their own queues, named alike (`awsq-...` and `sqlq-...`, the same length, so tables
keep their widths). Standard output must be equal once message ids, receipt handles, timestamps,
task handles and pagination tokens (which embed the queue names) are normalised; so must the
error line of an SQS error.

Exit statuses: sqsqlite's are the aws CLI version 2's. Version 1 exits 2 for a command line it
can't parse and 255 for every error, so the scenarios state the two where they differ.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqsqlite.cli.main import cli
from sqsqlite.server import BackgroundServer

clidriver = pytest.importorskip("awscli.clidriver")

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_PAGER": "",
    "AWS_EC2_METADATA_DISABLED": "true",
}
SIDES = {"aws": "awsq", "sqsqlite": "sqlq"}


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parity")
    with BackgroundServer(str(folder / "parity.db")) as server:
        yield folder, server.url


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch):
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)


# ---------------------------------------------------------------------- the two sides


class Run:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr


def run_aws(driver, url: str, args: list[str]) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = driver.main(["--endpoint-url", url, "sqs", *args])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 255
    return Run(code, out.getvalue(), err.getvalue())


def run_sqsqlite(db: str, url: str, args: list[str]) -> Run:
    result = CliRunner().invoke(cli, ["--db", db, "--endpoint-url", url, *args])
    assert "Traceback" not in result.stderr
    return Run(result.exit_code, result.stdout, result.stderr)


_TOKEN = re.compile(r"eyJOZXh0VG9rZW4i[A-Za-z0-9+/]*=*")
_NORMALISE = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    (re.compile(r"\b[0-9a-f]{130}\b"), "<receipt-handle>"),
    (re.compile(r"eyJ0YXNrSWQi[A-Za-z0-9+/_=-]+"), "<task-handle>"),  # SQS's: base64 JSON of taskId and sourceArn
    (re.compile(r"\b1[0-9]{12}\b"), "<epoch-ms>"),
    (re.compile(r"\b1[0-9]{9}\b"), "<epoch-s>"),
]


def _token(match: re.Match) -> str:
    """A botocore pagination token names the side's queue inside (base64 of base64): show it."""
    token = json.loads(base64.b64decode(match.group()))
    if token.get("NextToken"):
        token["NextToken"] = base64.b64decode(token["NextToken"]).decode()
    return "<token " + json.dumps(token) + ">"


def normalise(text: str, prefix: str) -> str:
    text = _TOKEN.sub(_token, text)
    text = text.replace(prefix, "SIDE")
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement, text)
    return text


def _mask_enums(text: str) -> str:
    """The aws CLI's input skeleton picks a random value of an enum: compare the shape only."""
    data = json.loads(text)
    for key in ("AttributeNames", "MessageSystemAttributeNames"):
        if key in data:
            data[key] = ["<enum>"]
    return json.dumps(data, indent=4)


# ---------------------------------------------------------------------- scenarios
#
# A step is a command line (a string split on spaces, or a list) with {p} for the side's prefix,
# {url} for the endpoint, {dir} for the scenario's folder and {name} for a value captured by an
# earlier step; options: codes=(aws v1's, sqsqlite's), capture=name (stdout: a JSON string or text),
# stderr=True (standard error compared too), mask=True (input skeletons with enums), compare=False (the service's own NextToken, which is
# the side's queue name in base64), fresh=True (a new aws driver: one that has seen
# --cli-input-json keeps that operation's flags optional).

QU = "{url}/000000000000/{p}"
Q = "--queue-url " + QU


def S(line, **options):
    return (line, options)


SCENARIOS = {
    "queues": [
        S("create-queue --queue-name {p}-orders --attributes VisibilityTimeout=60,DelaySeconds=0 --tags team=billing,env=dev"),
        S("create-queue --queue-name {p}-orders --attributes VisibilityTimeout=60,DelaySeconds=0 --output text"),
        S("create-queue --queue-name {p}-orders --attributes VisibilityTimeout=61", codes=(255, 254)),
        S("get-queue-url --queue-name {p}-orders --output table"),
        S("get-queue-url --queue-name {p}-orders --output text"),
        S("get-queue-url --queue-name {p}-nope", codes=(255, 254)),
        S("list-queues --queue-name-prefix {p}-ord"),
        S("list-queues --queue-name-prefix {p}-ord --output text"),
        S("list-queues --queue-name-prefix {p}-ord --output table"),
        S("list-queues --queue-name-prefix {p}-none"),
        S("list-queues --queue-name-prefix {p}-none --output text"),
        S("list-queues --queue-name-prefix {p}-none --output table"),
        S("get-queue-attributes " + Q + "-orders --attribute-names All"),
        S("get-queue-attributes " + Q + "-orders --attribute-names All --output text"),
        S("get-queue-attributes " + Q + "-orders --attribute-names All --output table"),
        S("set-queue-attributes " + Q + "-orders --attributes MessageRetentionPeriod=3600,MaximumMessageSize=2048"),
        S("get-queue-attributes " + Q + "-orders --attribute-names MessageRetentionPeriod MaximumMessageSize --output text"),
        S("set-queue-attributes " + Q + "-orders --attributes VisibilityTimeout=99999", codes=(255, 254)),
        S("tag-queue " + Q + "-orders --tags owner=ops"),
        S("untag-queue " + Q + "-orders --tag-keys env"),
        S("list-queue-tags " + Q + "-orders"),
        S("list-queue-tags " + Q + "-orders --output text"),
        S("list-queue-tags " + Q + "-orders --output table"),
        S("add-permission " + Q + "-orders --label Send --aws-account-ids 111122223333 --actions SendMessage ReceiveMessage"),
        S("get-queue-attributes " + Q + "-orders --attribute-names Policy"),
        S("remove-permission " + Q + "-orders --label Send"),
        S("remove-permission " + Q + "-orders --label Send", codes=(255, 254)),
        S("purge-queue " + Q + "-orders"),
        S("delete-queue " + Q + "-orders"),
        S("list-queues --queue-name-prefix {p}-ord --output text"),
        S("delete-queue " + Q + "-orders", codes=(255, 254)),
    ],
    "messages": [
        S("create-queue --queue-name {p}-msgs --output text"),
        S(
            [
                "send-message",
                "--queue-url",
                QU + "-msgs",
                "--message-body",
                "order #1",
                "--message-attributes",
                "priority={{DataType=String,StringValue=high}}",
            ]
        ),
        S(["send-message", "--queue-url", QU + "-msgs", "--message-body", "héllo 漢字", "--delay-seconds", "0", "--output", "text"]),
        S(["send-message", "--queue-url", QU + "-msgs", "--message-body", "file://{dir}/body.txt", "--output", "table"]),
        S("send-message-batch " + Q + "-msgs --entries Id=a,MessageBody=one Id=b,MessageBody=two"),
        S("send-message-batch " + Q + "-msgs --entries Id=c,MessageBody=three Id=c,MessageBody=dup", codes=(255, 254)),
        S("send-message-batch " + Q + "-msgs --entries Id=c,MessageBody=three Id=d,MessageBody=four,DelaySeconds=99999 --output table"),
        S("receive-message " + Q + "-msgs --max-number-of-messages 10 --visibility-timeout 0 --message-attribute-names All"),
        S("receive-message " + Q + "-msgs --max-number-of-messages 10 --visibility-timeout 0 --attribute-names All --output text"),
        S("receive-message " + Q + "-msgs --max-number-of-messages 2 --visibility-timeout 0 --message-attribute-names All --output table"),
        S(
            "receive-message " + Q + "-msgs --max-number-of-messages 10 --message-system-attribute-names ApproximateReceiveCount"
            " --query Messages[].[Body,Attributes.ApproximateReceiveCount] --output text"
        ),
        S("receive-message " + Q + "-msgs --visibility-timeout 0", capture="none"),
        S("change-message-visibility-batch " + Q + "-msgs --entries Id=x,ReceiptHandle=bogus,VisibilityTimeout=0 --output text"),
        S("change-message-visibility " + Q + "-msgs --receipt-handle bogus --visibility-timeout 0", codes=(255, 254)),
        S("purge-queue " + Q + "-msgs"),
        S("send-message " + Q + "-msgs --message-body last --query MD5OfMessageBody --output text"),
        S("receive-message " + Q + "-msgs --query Messages[0].ReceiptHandle --output text", capture="h1"),
        S("change-message-visibility " + Q + "-msgs --receipt-handle {h1} --visibility-timeout 0"),
        S("receive-message " + Q + "-msgs --query Messages[0].ReceiptHandle --output text", capture="h2"),
        S("change-message-visibility-batch " + Q + "-msgs --entries Id=1,ReceiptHandle={h2},VisibilityTimeout=5"),
        S("delete-message-batch " + Q + "-msgs --entries Id=1,ReceiptHandle={h2} Id=2,ReceiptHandle=bogus"),
        S("delete-message-batch " + Q + "-msgs --entries Id=1,ReceiptHandle={h2} --output text"),
        S("delete-message " + Q + "-msgs --receipt-handle {h2}"),
        S("delete-message " + Q + "-msgs --receipt-handle bogus", codes=(255, 254)),
        S("send-message-batch " + Q + "-msgs --entries Id=neg,MessageBody=a,DelaySeconds=-1 Id=pos,MessageBody=b,DelaySeconds=+0"),
        S("change-message-visibility-batch " + Q + "-msgs --entries Id=x,ReceiptHandle=bogus,VisibilityTimeout=-1 --output text"),
        S("send-message-batch " + Q + "-msgs --entries Id=x,MessageBody=a,DelaySeconds=x", codes=(255, 255)),
        S("delete-queue " + Q + "-msgs"),
    ],
    "query": [
        S("create-queue --queue-name {p}-qa --query QueueUrl --output text"),
        S("create-queue --queue-name {p}-qb --attributes VisibilityTimeout=7 --query QueueUrl"),
        S("list-queues --queue-name-prefix {p}-q --query QueueUrls[-1]"),
        S(["list-queues", "--queue-name-prefix", "{p}-q", "--query", "QueueUrls[?ends_with(@, 'qb')]", "--output", "text"]),
        S(["list-queues", "--queue-name-prefix", "{p}-q", "--query", "length(QueueUrls)"]),
        S(
            [
                "list-queues",
                "--queue-name-prefix",
                "{p}-q",
                "--query",
                "{{count: length(QueueUrls), first: QueueUrls[0]}}",
                "--output",
                "table",
            ]
        ),
        S(["list-queues", "--queue-name-prefix", "{p}-q", "--query", "QueueUrls", "--output", "table"]),
        S("get-queue-attributes " + Q + "-qb --attribute-names All --query Attributes.VisibilityTimeout --output text"),
        S("get-queue-attributes " + Q + "-qb --attribute-names All --query Attributes.[VisibilityTimeout,DelaySeconds] --output table"),
        S("get-queue-attributes " + Q + "-qb --attribute-names All --query Attributes.Nothing"),
        S("get-queue-attributes " + Q + "-qb --attribute-names All --query Attributes.Nothing --output text"),
        S(
            [
                "send-message-batch",
                "--queue-url",
                QU + "-qb",
                "--entries",
                "Id=1,MessageBody=a",
                "Id=2,MessageBody=b",
                "--query",
                "Successful[].Id",
            ]
        ),
        S(
            [
                "receive-message",
                "--queue-url",
                QU + "-qb",
                "--max-number-of-messages",
                "10",
                "--query",
                "Messages[].{{B: Body, M: MD5OfBody}}",
                "--output",
                "table",
            ]
        ),
        S("list-queues --query [", codes=(255, 252)),
        S("create-queue --queue-name {p}-qempty --query QueueUrl --output text"),
        S(["receive-message", "--queue-url", QU + "-qempty", "--query", "length(Messages)"], codes=(255, 255), stderr=True),
    ],
    "pagination": [
        *[S(f"create-queue --queue-name {{p}}-page-{i} --query QueueUrl --output text") for i in range(5)],
        S("list-queues --queue-name-prefix {p}-page --max-items 2"),
        S("list-queues --queue-name-prefix {p}-page --max-items 2 --output text"),
        S("list-queues --queue-name-prefix {p}-page --max-items 2 --output table"),
        S("list-queues --queue-name-prefix {p}-page --page-size 2"),
        S("list-queues --queue-name-prefix {p}-page --page-size 2 --max-items 3 --output text"),
        S("list-queues --queue-name-prefix {p}-page --page-size 2 --max-items 2"),
        S("list-queues --queue-name-prefix {p}-page --page-size 2 --max-items 2 --query NextToken", capture="t1"),
        S("list-queues --queue-name-prefix {p}-page --starting-token {t1} --max-items 2"),
        S("list-queues --queue-name-prefix {p}-page --max-items 3 --query NextToken", capture="t2"),
        S("list-queues --queue-name-prefix {p}-page --starting-token {t2} --page-size 1 --output text"),
        S("list-queues --queue-name-prefix {p}-page --starting-token {t2} --query QueueUrls[0] --output text"),
        S("list-queues --queue-name-prefix {p}-page --max-results 2 --query QueueUrls"),
        S("list-queues --queue-name-prefix {p}-page --max-results 2 --query NextToken --output text", capture="t3", compare=False),
        S("list-queues --queue-name-prefix {p}-page --max-results 2 --next-token {t3} --query QueueUrls --output text"),
        S("list-queues --queue-name-prefix {p}-page --no-paginate --output text --query QueueUrls[0]"),
        S("list-queues --queue-name-prefix {p}-page --no-paginate --max-items 1", codes=(255, 255), stderr=True),
        S("list-queues --queue-name-prefix {p}-page --starting-token eyJ4IjogMX0=", codes=(255, 252)),  # {"x": 1}
        S("list-queues --queue-name-prefix {p}-page --starting-token eyJOZXh0VG9rZW4iOiA1fQ==", codes=(255, 252)),  # NextToken 5
        S(  # boto_truncate_amount "a"
            "list-queues --queue-name-prefix {p}-page --starting-token eyJOZXh0VG9rZW4iOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiAiYSJ9",
            codes=(255, 255),
        ),
        S("list-queues --queue-name-prefix {p}-page --starting-token eyJOZXh0VG9rZW4iOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiB0cnVlfQ=="),
    ],
    "dead letters": [
        S("create-queue --queue-name {p}-dlq --query QueueUrl --output text"),
        S("create-queue --queue-name {p}-work --attributes file://{dir}/redrive.json --query QueueUrl --output text"),
        S("create-queue --queue-name {p}-work2 --attributes file://{dir}/redrive.json --query QueueUrl --output text"),
        S("list-dead-letter-source-queues " + Q + "-dlq"),
        S("list-dead-letter-source-queues " + Q + "-dlq --output text"),
        S("list-dead-letter-source-queues " + Q + "-dlq --output table"),
        S("list-dead-letter-source-queues " + Q + "-dlq --max-items 1"),
        S("list-dead-letter-source-queues " + Q + "-dlq --max-items 1 --output text"),
        S("list-dead-letter-source-queues " + Q + "-work"),
        S("send-message " + Q + "-work --message-body poison --query MD5OfMessageBody --output text"),
        S("receive-message " + Q + "-work --visibility-timeout 0 --query Messages[].Body --output text"),
        S("receive-message " + Q + "-work --visibility-timeout 0 --query Messages[].Body --output text"),
        S("get-queue-attributes " + Q + "-dlq --attribute-names ApproximateNumberOfMessages --output text"),
        S("list-message-move-tasks --source-arn arn:aws:sqs:us-east-1:000000000000:{p}-dlq"),
        S("start-message-move-task --source-arn arn:aws:sqs:us-east-1:000000000000:{p}-work", codes=(255, 254)),
        S("start-message-move-task --source-arn arn:aws:sqs:us-east-1:000000000000:{p}-dlq"),
        S("list-message-move-tasks --source-arn arn:aws:sqs:us-east-1:000000000000:{p}-dlq --query length(Results)"),
        S("cancel-message-move-task --task-handle bogus", codes=(255, 254)),
    ],
    "inputs": [
        S(["create-queue", "--cli-input-json", '{{"QueueName": "{p}-in", "Attributes": {{"DelaySeconds": "3"}}}}']),
        S(["get-queue-attributes", "--cli-input-json", "file://{dir}/input.json", "--output", "text"]),
        S(["get-queue-attributes", "--cli-input-json", "file://{dir}/input.json", "--attribute-names", "QueueArn", "--output", "text"]),
        S(["send-message", "--cli-input-json", '{{"QueueUrl": "{url}/000000000000/{p}-in"}}'], codes=(255, 252)),
        S(["send-message", "--cli-input-json", '{{"QueueUrl": "x", "MessageBody": "x", "Bogus": 1}}'], codes=(255, 252)),
        S(["send-message", "--cli-input-json", '{{"QueueUrl": "x", "MessageBody": "x", "DelaySeconds": "1"}}'], codes=(255, 252)),
        S(["send-message", "--cli-input-json", "{{{{not json"], codes=(255, 252)),
        S(["send-message", "--queue-url", "{url}/000000000000/{p}-in", "--message-body", "fileb://{dir}/body.txt"], codes=(255, 252)),
        S(["send-message", "--queue-url", "x", "--message-body", "file://{dir}/missing.txt"], codes=(255, 252)),
        S("send-message --queue-url x", codes=(2, 252), fresh=True),
        S("send-message --queue-url x --message-body --help", codes=(2, 252), fresh=True),
        S("send-message " + Q + "-in --message-body -1 --query MD5OfMessageBody", fresh=True),
        S("send-message " + Q + "-in --message-body x --delay-seconds abc", codes=(255, 255)),
        # botocore takes a bool for an integer (Python's bool is an int): SQS refuses it.
        S(
            ["send-message", "--cli-input-json", '{{"QueueUrl": "' + QU + '-in", "MessageBody": "x", "DelaySeconds": true}}'],
            codes=(255, 254),
        ),
        S(["receive-message", "--cli-input-json", '{{"QueueUrl": "' + QU + '-in", "MaxNumberOfMessages": false}}'], codes=(255, 254)),
        S(
            [
                "send-message-batch",
                "--cli-input-json",
                '{{"QueueUrl": "' + QU + '-in", "Entries": [{{"Id": "1", "MessageBody": "x", "DelaySeconds": true}}]}}',
            ]
        ),
        S(["list-queues", "--cli-input-json", '{{"MaxResults": true}}'], codes=(255, 254)),
        S("list-queues --max-items abc", codes=(2, 252)),
        S("delete-queue " + Q + "-in"),
    ],
    # argparse, the aws CLI's parser, keeps a repeated list flag's last occurrence only.
    "repeated flags": [
        S("create-queue --queue-name {p}-rep --tags a=1,b=2,c=3 --output text"),
        S("get-queue-attributes " + Q + "-rep --attribute-names DelaySeconds Policy --attribute-names VisibilityTimeout"),
        S("get-queue-attributes " + Q + "-rep --attribute-names=DelaySeconds --attribute-names=VisibilityTimeout --output text"),
        S("untag-queue " + Q + "-rep --tag-keys a b --tag-keys c"),
        S("list-queue-tags " + Q + "-rep"),
        S(
            "send-message-batch "
            + Q
            + "-rep --entries Id=1,MessageBody=a --entries Id=2,MessageBody=b Id=3,MessageBody=c --query Successful[].Id"
        ),
        S("send-message-batch " + Q + "-rep --entries=Id=4,MessageBody=d --entries=Id=5,MessageBody=e --query Successful[].Id"),
        S(
            "receive-message "
            + Q
            + "-rep --max-number-of-messages 10 --attribute-names All --attribute-names SenderId --query Messages[].[Body,Attributes]"
        ),
        S("receive-message " + Q + "-rep --max-number-of-messages 10 --query Messages[0].ReceiptHandle --output text", capture="h"),
        S("delete-message-batch " + Q + "-rep --entries Id=1,ReceiptHandle={h} --entries Id=2,ReceiptHandle=bogus --query Failed[].Id"),
        S("delete-queue " + Q + "-rep"),
    ],
}

# Skeletons through the aws CLI for three commands here (a fresh aws driver each time: one that
# has printed a skeleton prints it again later, and a driver costs 0.3 s); every command's below.
SCENARIOS["skeletons"] = [
    S("get-queue-attributes --generate-cli-skeleton", mask=True, fresh=True),
    S("send-message-batch --generate-cli-skeleton input", fresh=True),
    S("send-message --generate-cli-skeleton output --queue-url q --message-body b --output text", fresh=True),
    S("list-queues --generate-cli-skeleton output --output table", fresh=True),
]


def _setup(folder: Path, side: str, prefix: str, url: str) -> Path:
    where = folder / side
    where.mkdir(exist_ok=True)
    (where / "body.txt").write_text("from a file\n", encoding="utf-8")
    arn = f"arn:aws:sqs:us-east-1:000000000000:{prefix}-dlq"
    (where / "redrive.json").write_text(json.dumps({"RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "1"})}))
    (where / "input.json").write_text(json.dumps({"QueueUrl": f"{url}/000000000000/{prefix}-in", "AttributeNames": ["DelaySeconds"]}))
    return where


def _play(side: str, steps: list, folder: Path, url: str) -> list[Run]:
    prefix = SIDES[side]
    where = _setup(folder, side, prefix, url)
    db = str(folder / "parity.db")
    driver = clidriver.create_clidriver() if side == "aws" else None
    captured: dict[str, str] = {}
    runs = []
    for line, options in steps:
        words = line.split() if isinstance(line, str) else line
        args = [w.format(p=prefix, url=url, dir=where, **captured) for w in words]
        if side == "aws" and options.get("fresh"):
            driver = clidriver.create_clidriver()
        run = run_aws(driver, url, args) if side == "aws" else run_sqsqlite(db, url, args)
        if "capture" in options:
            text = run.stdout.strip()
            captured[options["capture"]] = json.loads(text) if text.startswith('"') else text
        runs.append(run)
    return runs


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_aws_cli_and_sqsqlite_print_the_same(scenario, endpoint):
    folder, url = endpoint
    steps = SCENARIOS[scenario]
    aws_runs = _play("aws", steps, folder, url)
    our_runs = _play("sqsqlite", steps, folder, url)
    for (line, options), theirs, ours in zip(steps, aws_runs, our_runs):
        shown = line if isinstance(line, str) else " ".join(line)
        aws_code, our_code = options.get("codes", (0, 0))
        assert (theirs.code, ours.code) == (aws_code, our_code), (shown, theirs.stderr, ours.stderr)
        expected, got = normalise(theirs.stdout, SIDES["aws"]), normalise(ours.stdout, SIDES["sqsqlite"])
        if options.get("mask"):
            expected, got = _mask_enums(expected), _mask_enums(got)
        assert got == expected or options.get("compare") is False, shown
        if options.get("stderr"):  # the aws CLI's own words (it starts them with a blank line)
            assert normalise(ours.stderr, SIDES["sqsqlite"]).strip() == normalise(theirs.stderr, SIDES["aws"]).strip(), shown
        if our_code == 254:  # an SQS error: the same line (sqsqlite may add a hint below it)
            first = normalise(ours.stderr, SIDES["sqsqlite"]).strip().splitlines()[0]
            assert first == normalise(theirs.stderr, SIDES["aws"]).strip(), shown


def test_the_scenarios_run_every_sqs_command():
    from sqsqlite.cli import aws

    run = set()
    for steps in SCENARIOS.values():
        for line, options in steps:
            words = line.split() if isinstance(line, str) else line
            if options.get("codes", (0, 0))[1] == 0 and "--generate-cli-skeleton" not in words:
                run.add(words[0])
    assert run | {"cancel-message-move-task"} == {c.name for c in aws.COMMANDS}  # cancel: no task is left running to cancel


def test_the_aws_script_itself_agrees_on_a_table_a_text_page_and_an_error(endpoint):
    """One check through the real `aws` executable, as a shell runs it (the scenarios drive it in
    this process to keep the suite quick)."""
    aws = shutil.which("aws", path=str(Path(sys.executable).parent))
    if aws is None:
        pytest.skip("the aws CLI's script is not installed")
    folder, url = endpoint
    env = {**os.environ, **AWS_ENV}
    for args in (["list-queues", "--output", "table"], ["list-queues", "--max-items", "1", "--output", "text"]):
        done = subprocess.run([aws, "--endpoint-url", url, "sqs", *args], env=env, capture_output=True, text=True, timeout=60)
        ours = run_sqsqlite(str(folder / "parity.db"), url, args)
        assert (done.returncode, done.stdout) == (ours.code, ours.stdout)
    done = subprocess.run(
        [aws, "--endpoint-url", url, "sqs", "delete-queue", "--queue-url", "nope"], env=env, capture_output=True, text=True
    )
    ours = run_sqsqlite(str(folder / "parity.db"), url, ["delete-queue", "--queue-url", "nope"])
    assert (done.returncode, ours.code) == (255, 254) and done.stderr.strip() == ours.stderr.strip().splitlines()[0]


_REQUIRED_FLAGS = {
    "create-queue": ["--queue-name", "q"],
    "get-queue-url": ["--queue-name", "q"],
    "set-queue-attributes": ["--queue-url", "q", "--attributes", "A=1"],
    "send-message": ["--queue-url", "q", "--message-body", "b"],
    "send-message-batch": ["--queue-url", "q", "--entries", "Id=1,MessageBody=b"],
    "delete-message": ["--queue-url", "q", "--receipt-handle", "r"],
    "delete-message-batch": ["--queue-url", "q", "--entries", "Id=1,ReceiptHandle=r"],
    "change-message-visibility": ["--queue-url", "q", "--receipt-handle", "r", "--visibility-timeout", "1"],
    "change-message-visibility-batch": ["--queue-url", "q", "--entries", "Id=1,ReceiptHandle=r"],
    "tag-queue": ["--queue-url", "q", "--tags", "a=b"],
    "untag-queue": ["--queue-url", "q", "--tag-keys", "a"],
    "add-permission": ["--queue-url", "q", "--label", "l", "--aws-account-ids", "1", "--actions", "a"],
    "remove-permission": ["--queue-url", "q", "--label", "l"],
    "start-message-move-task": ["--source-arn", "a"],
    "list-message-move-tasks": ["--source-arn", "a"],
    "cancel-message-move-task": ["--task-handle", "t"],
    "list-queues": [],
}


def test_every_commands_skeletons_are_the_ones_the_aws_cli_prints(tmp_path):
    """Input skeletons as the aws CLI makes them (botocore's ArgumentGenerator over the SQS model,
    4-space JSON) and sample responses through the aws CLI's own json and text formatters, for
    every command (the aws CLI itself can't stub receive-message's, which has binary members)."""
    import argparse

    import botocore.session
    from awscli.formatter import get_formatter
    from botocore.utils import ArgumentGenerator

    from sqsqlite.cli import aws

    model = botocore.session.get_session().get_service_model("sqs")
    db = str(tmp_path / "skeletons.db")
    for command in aws.COMMANDS:
        operation = model.operation_model(command.operation)
        expected = json.dumps(ArgumentGenerator().generate_skeleton(operation.input_shape), indent=4) + "\n"
        ours = run_sqsqlite(db, "http://localhost:9324", [command.name, "--generate-cli-skeleton"])
        assert ours.code == 0 and _mask_enums(ours.stdout) == _mask_enums(expected), command.name
        sample = ArgumentGenerator(use_member_names=True).generate_skeleton(operation.output_shape) if operation.output_shape else {}
        for fmt in ("json", "text"):
            stream = io.StringIO()
            get_formatter(fmt, argparse.Namespace(query=None, color="off"))(command.operation, json.loads(json.dumps(sample)), stream)
            flags = _REQUIRED_FLAGS.get(command.name, ["--queue-url", "q"])
            ours = run_sqsqlite(db, "http://localhost:9324", [command.name, "--generate-cli-skeleton", "output", *flags, "--output", fmt])
            assert (ours.code, ours.stdout) == (0, stream.getvalue()), (command.name, fmt)
