"""The ``awslocal`` console script, as LocalStack's init scripts call it: ``awslocal sqs <command>
...`` runs sqsqlite's own aws-vocabulary command (``sqsqlite <command> ...``, the same flags and
output as ``aws sqs``) on the database of ``$SQSQLITE_DB``, its queue URLs based at
``$AWS_ENDPOINT_URL`` in the account ``$SQSQLITE_ACCOUNT_ID`` (``serve --init-dir`` sets all
three for its scripts). Any other service is refused in one line, and so is a run outside those
scripts (without ``$SQSQLITE_INIT`` set to 1): there nothing says which database, and the server
is reached with ``aws --endpoint-url``. The name is the one PyPI's awscli-local installs too:
in one environment, whichever is installed last is ``awslocal``.

The aws CLI's global options are taken wherever they stand: ``--region``, ``--output``,
``--query``, ``--color``, ``--cli-binary-format``, ``--no-paginate`` and ``--no-cli-pager`` as
sqsqlite takes them; ``--endpoint-url``, ``--profile``, ``--ca-bundle``, ``--debug``,
``--no-verify-ssl``, ``--no-sign-request``, the timeouts and the auto-prompt flags are left out
(nothing goes over the network). Without ``--region``, ``$AWS_DEFAULT_REGION`` or ``$AWS_REGION``.

Example: awslocal sqs create-queue --queue-name jobs.fifo --attributes FifoQueue=true
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from sqsqlite import defaults as D

# The aws CLI's global options that sqsqlite leaves out, with a value and without one.
IGNORED_WITH_VALUE = ("--endpoint-url", "--profile", "--ca-bundle", "--cli-read-timeout", "--cli-connect-timeout")
IGNORED_FLAGS = ("--debug", "--no-verify-ssl", "--no-sign-request", "--cli-auto-prompt", "--no-cli-auto-prompt")
# The ones taken before the service's name (those with a value: it follows).
GLOBAL_WITH_VALUE = ("--region", "--output", "--query", "--color", "--cli-binary-format", *IGNORED_WITH_VALUE)
SERVICE = "sqs"
REFUSED = "awslocal: only sqs is served here (sqsqlite)"
OUTSIDE = (
    "awslocal: sqsqlite's awslocal runs in `sqsqlite serve --init-dir`'s init scripts only; "
    f"elsewhere use aws --endpoint-url {D.DEFAULT_ENDPOINT} sqs ... (or sqsqlite's own commands)"
)
EXIT_REFUSED = 255


def translate(args: list[str], env: Mapping[str, str]) -> list[str] | None:
    """The ``sqsqlite`` arguments for ``awslocal`` ``args``; None: not an sqs call."""
    kept: list[str] = []
    service: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in IGNORED_WITH_VALUE:
            i += 1 if "=" in arg else 2
            continue
        if arg in IGNORED_FLAGS:
            i += 1
            continue
        if service is None and not arg.startswith("-"):
            service = arg
            i += 1
            continue
        kept.append(arg)
        if service is None and name in GLOBAL_WITH_VALUE and "=" not in arg and i + 1 < len(args):
            kept.append(args[i + 1])
            i += 1
        i += 1
    if service != SERVICE:
        return None
    prefix: list[str] = []
    if env.get("AWS_ENDPOINT_URL"):
        prefix += ["--endpoint-url", env["AWS_ENDPOINT_URL"]]
    if env.get("SQSQLITE_ACCOUNT_ID"):
        prefix += ["--account-id", env["SQSQLITE_ACCOUNT_ID"]]
    region = env.get("AWS_DEFAULT_REGION") or env.get("AWS_REGION")
    if region and not any(a == "--region" or a.startswith("--region=") for a in kept):
        prefix += ["--region", region]
    return prefix + kept


def main() -> None:
    """``awslocal sqs <command> ...``: sqsqlite's command; ``awslocal <other service>``: refused."""
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help", "help"):
        sys.stdout.write("usage: awslocal sqs <command> [options]  (sqsqlite's aws sqs commands; sqsqlite --help lists them)\n")
        return
    if os.environ.get(D.INIT_ENV) != "1" or not os.environ.get(D.DB_PATH_ENV):
        sys.stderr.write(OUTSIDE + "\n")
        sys.exit(EXIT_REFUSED)
    translated = translate(args, os.environ)
    if translated is None:
        sys.stderr.write(REFUSED + "\n")
        sys.exit(EXIT_REFUSED)
    from .entry import main as sqsqlite_main

    sys.argv = ["awslocal sqs", *translated]
    sqsqlite_main()


if __name__ == "__main__":
    main()
