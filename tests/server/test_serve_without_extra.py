"""Without the server extra (uvicorn), both ways to start the endpoint say what to install, in one
line, and change nothing."""

import subprocess
import sys

from click.testing import CliRunner

# As if uvicorn were not installed: an import of it fails, as a missing module's does.
_WITHOUT_UVICORN = "import runpy, sys; sys.modules['uvicorn'] = None; sys.argv = ['sqsqlite serve', *sys.argv[1:]]; "
_ONE_LINE = "sqsqlite: `sqsqlite serve` needs uvicorn, which is not installed: pip install 'sqsqlite[server]' (from a clone: pip install -e '.[server]').\n"


def test_python_m_sqsqlite_server_without_uvicorn_prints_one_line_and_exits_255(tmp_path):
    path = tmp_path / "app.db"
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_UVICORN + "runpy.run_module('sqsqlite.server', run_name='__main__')", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (run.returncode, run.stdout, run.stderr) == (255, "", _ONE_LINE)
    assert not path.exists()


def test_sqsqlite_serve_without_uvicorn_prints_one_line_and_exits_255(tmp_path, monkeypatch):
    from sqsqlite.cli import main

    monkeypatch.delitem(sys.modules, "sqsqlite.server.endpoint", raising=False)  # imported again, and failing
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    monkeypatch.delitem(main.cli.commands, "serve", raising=False)
    path = tmp_path / "app.db"
    r = CliRunner().invoke(main.cli, ["serve", "--db", str(path)], standalone_mode=True)
    assert (r.exit_code, r.output) == (255, _ONE_LINE)
    assert not path.exists()
