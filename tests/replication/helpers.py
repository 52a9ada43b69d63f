"""What the replication tests share: the command line run in this process, and a stand-in for
the litestream program."""

from __future__ import annotations

import shutil
from pathlib import Path


def cli_here(*args: str):
    """The sqsqlite group in this process, as the console script runs it (exit codes included)."""
    from click.testing import CliRunner

    from sqsqlite.cli.main import cli

    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output and "unexpected error" not in result.output, result.output
    return result


def fake_litestream(tmp_path: Path, script: str, monkeypatch) -> Path:
    """``script`` as the litestream program this process finds."""
    program = tmp_path / "litestream"
    program.write_text(script)
    program.chmod(0o755)
    real = shutil.which  # other programs (an --exec command) are looked up as ever
    monkeypatch.setattr(shutil, "which", lambda name, path=None: str(program) if name == "litestream" else real(name, path=path))
    return program
