"""The CLI's tests run whatever the caller's shell has set for the aws CLI."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_default_output_of_the_callers(monkeypatch):
    # An SQS command prints in the format AWS_DEFAULT_OUTPUT names: tests that want it set it.
    monkeypatch.delenv("AWS_DEFAULT_OUTPUT", raising=False)
