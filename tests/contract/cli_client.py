"""A boto3-shaped SQS client whose every call is a ``sqsqlite`` command, for running the shared
scenario suite (tests/contract/scenarios.py) through the CLI.

``client.send_message(QueueUrl=u, MessageBody=b)`` runs ``sqsqlite --db F --output json
send-message --queue-url=u --message-body=b`` through click's CliRunner: each keyword becomes its
flag (structured values as JSON, as a shell user would type them), the printed JSON becomes the
response dict, and an SQS error, printed as the one stderr line
``An error occurred (<Code>) when calling the <Action> operation: <message>``, is raised as the
exception class the in-process client raises (``client.exceptions``). An action the CLI has no
command or flag for raises NotImplementedError, so nothing is silently left out.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any

from botocore.exceptions import ParamValidationError
from click.testing import CliRunner

from sqsqlite import errors
from sqsqlite.actions import ACTIONS, UNSUPPORTED
from sqsqlite.cli.main import EXIT_SERVICE, EXIT_USAGE, cli
from sqsqlite.client import _Exceptions, error_response, method_name
from tests.cli.test_cli_admin import ClockedSettings

ERROR_LINE = re.compile(r"An error occurred \((?P<wire>[^)]+)\) when calling the (?P<operation>\w+) operation: (?P<message>.*)")


def _kebab(name: str) -> str:
    """SQS member name -> aws CLI flag: MaxNumberOfMessages -> max-number-of-messages,
    QueueOwnerAWSAccountId -> queue-owner-aws-account-id, tags -> tags."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name).lower()


def _to_cli(value: Any) -> Any:
    """boto3's Python values -> the JSON the aws CLI takes: blobs as base64."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {k: _to_cli(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_cli(v) for v in value]
    return value


def _blobs_to_bytes(response: dict) -> dict:
    """The CLI prints message attribute blobs as base64, as the aws CLI does; boto3 hands bytes."""
    for message in response.get("Messages", []):
        for attribute in (message.get("MessageAttributes") or {}).values():
            if "BinaryValue" in attribute:
                attribute["BinaryValue"] = base64.b64decode(attribute["BinaryValue"])
            if "BinaryListValues" in attribute:
                attribute["BinaryListValues"] = [base64.b64decode(v) for v in attribute["BinaryListValues"]]
    return response


class CliClient:
    """boto3's SQS client methods, each one ``sqsqlite <command>`` on ``path``, on ``clock``."""

    def __init__(self, path: str, clock: Any = None):
        self.path = path
        self.clock = clock
        self.runner = CliRunner()
        self.exceptions = _Exceptions()
        self._commands = {c.name: c for c in cli.commands.values()}

    def __getattr__(self, name: str) -> Any:
        action = _ACTIONS.get(name)
        if action is None:
            raise AttributeError(name)
        return lambda **params: self._call(action, params)

    def close(self) -> None:
        pass  # each command opens and closes the file itself

    def _args(self, action: str, params: dict[str, Any]) -> list[str]:
        name = _kebab(action)
        command = self._commands.get(name)
        if command is None:
            raise NotImplementedError(f"the CLI has no `sqsqlite {name}` command for {action}")
        flags = {opt for p in command.params for opt in p.opts}
        args = [name]
        for member, value in params.items():
            flag = "--" + _kebab(member)
            if flag not in flags:
                raise NotImplementedError(f"`sqsqlite {name}` has no {flag} flag for {action}'s {member}")
            if isinstance(value, (dict, list, tuple)):
                value = json.dumps(_to_cli(value))
            # --flag=value: a value starting with "-" stays the flag's value.
            args.append(f"{flag}={value}")
        return args

    def _call(self, action: str, params: dict[str, Any]) -> dict:
        settings = ClockedSettings()
        settings.clock = self.clock
        result = self.runner.invoke(cli, ["--db", self.path, "--output", "json", *self._args(action, params)], obj=settings)
        assert "Traceback" not in result.output, result.output
        if result.exit_code == 0:
            response = _blobs_to_bytes(json.loads(result.stdout)) if result.stdout.strip() else {}
            response["ResponseMetadata"] = {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": 200, "HTTPHeaders": {}, "RetryAttempts": 0}
            return response
        if result.exit_code == EXIT_SERVICE:
            lines = result.stderr.splitlines()
            # SQS's error as the aws CLI prints it, then at most sqsqlite's hint
            assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), result.stderr
            m = ERROR_LINE.fullmatch(lines[0])
            assert m and m["operation"] == action, lines[0]
            code = errors.code_from_wire(m["wire"])
            error_class = errors.ALL_ERRORS.get(code)
            if error_class is None:  # a code sqsqlite doesn't know: still botocore's ClientError
                err = errors.SQSError(m["message"])
                err.code = code
                raise self.exceptions.ClientError(error_response(err), action)
            hint = lines[1].removeprefix("hint: ") if len(lines) == 2 else None
            raise self.exceptions.from_error(error_class(m["message"], hint), action)
        if result.exit_code == EXIT_USAGE:
            # What boto3 refuses before sending anything.
            raise ParamValidationError(report=result.stderr.strip())
        raise RuntimeError(f"sqsqlite {action} exited {result.exit_code}: {result.stderr.strip()}")


_ACTIONS = {method_name(a): a for a in ACTIONS + UNSUPPORTED}
