"""Start-up: ``import sqsqlite`` loads only what a program uses, and every public name still works."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import sqsqlite


def python(code: str, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )
    assert done.returncode == 0, done.stderr
    return done


def test_every_public_name_is_there():
    for name in sqsqlite.__all__:
        assert getattr(sqsqlite, name) is not None, name
    assert set(sqsqlite.__all__) <= set(dir(sqsqlite))
    assert sqsqlite.Queue.__module__ == "sqsqlite.core.queue"
    assert sqsqlite.MessageAttribute.__module__ == "sqsqlite.validation"


def test_an_unknown_name_is_an_attribute_error():
    try:
        sqsqlite.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("no AttributeError")


def test_import_sqsqlite_loads_no_engine_client_or_consumer_until_used():
    done = python("""
        import sys
        import sqsqlite
        print(sorted(m for m in sys.modules if m.startswith("sqsqlite")))
        sqsqlite.Consumer
        print("sqsqlite.consumer" in sys.modules, "sqsqlite.client" in sys.modules)
        """)
    first, second = done.stdout.splitlines()
    assert first == "['sqsqlite', 'sqsqlite.clock', 'sqsqlite.errors']"
    assert second == "True False"


def test_sqsqlite_client_stays_the_function_however_its_module_is_first_imported():
    # The module sqsqlite.client defines the function sqsqlite.client; importing the module
    # directly must not replace the function with it, as Python does for a package's submodule.
    for first in ("from sqsqlite.client import SQSClient", "import sqsqlite.client", "import sqsqlite.actions", "import sqsqlite"):
        done = python(f"""
            {first}
            import sqsqlite
            from sqsqlite import client
            print(callable(sqsqlite.client), sqsqlite.client is client, sqsqlite.client.__module__)
            """)
        assert done.stdout.split() == ["True", "True", "sqsqlite.client"], first


def test_star_import_gives_every_public_name():
    done = python("""
        from sqsqlite import *
        print(Queue.__name__, client.__name__, Consumer.__name__, SQSError.__name__, connect.__name__)
        """)
    assert done.stdout.split() == ["Queue", "client", "Consumer", "SQSError", "connect"]
