"""A queues file is read boundedly and applied whole: what a hostile or mistaken file gets (an
alias bomb, an include, a duplicate key, a huge or deep file, a mistake late in the file) is one
QueuesFileError line naming the file and where, at once, with nothing written."""

import json
import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.server.queues_file import QueuesFileError, apply_queues, read_queues_file

ARN = "arn:aws:sqs:us-east-1:000000000000:"


def alias_bomb(where: str) -> str:
    """A list of ten anchors, each a list of nine aliases of the last: 9**9 leaves when expanded."""
    items = ["&a0 [x, x, x, x, x, x, x, x, x]"] + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return f"queues:\n  - name: a\n    attributes:\n      {where}[" + ", ".join(items) + "]\n"


def refused(path, db=None) -> str:
    with pytest.raises(QueuesFileError) as caught:
        specs = read_queues_file(path)
        if db is not None:
            apply_queues(db, specs, str(path))
    message = str(caught.value)
    assert message.startswith(str(path)) and "\n" not in message
    return message


def names(db) -> list[str]:
    return db.queue_names()


# ---------------------------------------------------------------- aliases


@pytest.mark.parametrize("where", ["VisibilityTimeout: ", "Policy:\n        Statement: "])
def test_a_yaml_alias_bomb_is_refused_at_once_naming_the_line_and_key(tmp_path, where):
    (tmp_path / "q.yaml").write_text(alias_bomb(where))
    message = refused(tmp_path / "q.yaml")
    assert "anchor &a0" in message and "queues[0].attributes." in message
    assert ": line 4:" in message or ": line 5:" in message


def test_a_yaml_alias_is_refused_even_where_it_would_be_harmless(tmp_path):
    (tmp_path / "q.yaml").write_text("queues:\n  - name: a\n    tags: {team: payments}\n  - name: b\n    tags: *t\n")
    assert "line 5: YAML alias *t (at queues[1].tags)" in refused(tmp_path / "q.yaml")


def test_serve_on_a_yaml_alias_bomb_refuses_at_once_and_exits_with_one_line(tmp_path):
    (tmp_path / "q.yaml").write_text(alias_bomb("VisibilityTimeout: "))
    args = [sys.executable, "-m", "sqsqlite.server", "--db", str(tmp_path / "s.db"), "--port", "0", "--queues", str(tmp_path / "q.yaml")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)  # on the bomb it read for minutes, growing, and never listened
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 255 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"sqsqlite: {tmp_path / 'q.yaml'}: line 4: YAML anchor &a0")


# ---------------------------------------------------------------- HOCON includes


def test_a_hocon_include_url_is_refused_and_never_fetched(tmp_path):
    with socket.socket() as listener:  # a listener that never answers: a fetch would hang on it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        (tmp_path / "e.conf").write_text(f'include url("http://127.0.0.1:{port}/more.conf")\nqueues {{ a {{ }} }}\n')
        default = socket.getdefaulttimeout()
        socket.setdefaulttimeout(5)  # bounds the test where a fetch is made: it had no timeout of its own
        try:
            message = refused(tmp_path / "e.conf")
        finally:
            socket.setdefaulttimeout(default)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    assert f"line 1: include of the URL 'http://127.0.0.1:{port}/more.conf'" in message and "never fetches" in message


@pytest.mark.parametrize(
    "include",
    [
        'include "more.conf"',
        'include file("more.conf")',
        'include required(file("more.conf"))',
        'INCLUDE "http://example.invalid/x.conf"',
        'queues { b { }, include "more.conf" }',
        'include package("sqsqlite:more.conf")',
    ],
)
def test_a_hocon_include_of_a_file_is_refused_though_the_file_is_beside_it(tmp_path, monkeypatch, include):
    (tmp_path / "more.conf").write_text("queues { extra { } }\n")
    monkeypatch.chdir(tmp_path)  # where the parser would have looked for it
    (tmp_path / "e.conf").write_text(f"queues {{ a {{ }} }}\n{include}\n")
    message = refused(tmp_path / "e.conf")
    assert ": line 2: include of " in message and "read alone" in message


@pytest.mark.parametrize(
    "line",
    ['\u0131nclude "more.conf"', 'a = \\"x include "more.conf"'],
    ids=["a dotless i, which pyparsing's caseless keyword folds to I", "after an escaped quote in an unquoted value"],
)
def test_an_include_the_scan_reads_otherwise_than_the_parser_is_still_never_read(tmp_path, monkeypatch, line):
    (tmp_path / "more.conf").write_text("queues { injected { } }\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.conf").write_text(f"queues {{ a {{ }} }}\n{line}\n")
    message = refused(tmp_path / "e.conf")
    assert "include of 'more.conf'" in message and "read alone" in message


@pytest.mark.parametrize("suffix", [".json", ".conf"])
def test_a_file_of_escaped_quotes_is_refused_in_one_pass(tmp_path, suffix):
    # An unterminated string of 32,000 escaped quotes: the scan once tried it again from every
    # quote (75 s for 64 KB). Read in a child, so that a return of that is a failure, not a hang.
    (tmp_path / f"q{suffix}").write_text('"' + '\\"' * 32_000 + "\n")
    code = "import sys\nfrom sqsqlite.server.queues_file import read_queues_file\ntry: read_queues_file(sys.argv[1])\nexcept ValueError: pass\n"
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"q{suffix}")], timeout=60, capture_output=True)
    assert done.returncode == 0, done.stderr


def test_an_include_in_a_comment_or_a_string_is_no_include(tmp_path):
    (tmp_path / "e.conf").write_text(
        'include required(classpath("application.conf"))\n'
        '# include "more.conf"\n'
        '// include url("http://example.invalid/")\n'
        'queues { a { tags { include = "include more.conf" } } }\n'
        'rest-sqs { note = "include \\"x\\"", more = """include "x" """ }\n'
    )
    [spec] = read_queues_file(tmp_path / "e.conf")
    assert spec.tags == {"include": "include more.conf"}


def test_a_hocon_substitution_in_the_queues_block_is_refused_and_one_elsewhere_never_expanded(tmp_path):
    (tmp_path / "e.conf").write_text("base = 5 seconds\nqueues { a { delay = ${base} } }\n")
    assert "queues.a.delay: a substitution" in refused(tmp_path / "e.conf")
    # a ${a} ${a} ... doubling, never resolved: the queues are read as they are
    chain = "".join(f"l{i} = ${{l{i - 1}}} ${{l{i - 1}}}\n" for i in range(1, 60))
    (tmp_path / "e.conf").write_text(f"l0 = [1]\n{chain}queues {{ a {{ delay = 5 seconds }} }}\n")
    assert read_queues_file(tmp_path / "e.conf")[0].attributes == {"DelaySeconds": "5"}


# ---------------------------------------------------------------- a mistake late in the file


def test_a_redrive_policy_naming_a_queue_declared_later_in_the_file_is_applied(tmp_path):
    (tmp_path / "q.yaml").write_text(
        f"queues:\n  - name: a\n  - name: b\n    attributes:\n      RedrivePolicy: {{deadLetterTargetArn: '{ARN}c', maxReceiveCount: 3}}\n"
        "  - name: c\n"
    )
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    outcome = apply_queues(db, read_queues_file(tmp_path / "q.yaml"), "q.yaml")
    assert outcome["Created"] == ["a", "b", "c"]
    assert json.loads(db.queue("b").get_queue_attributes(["RedrivePolicy"])["RedrivePolicy"])["deadLetterTargetArn"] == f"{ARN}c"


@pytest.mark.parametrize(
    ("late", "named"),
    [
        (f"RedrivePolicy: {{deadLetterTargetArn: '{ARN}nowhere', maxReceiveCount: 3}}", "neither declared in the file nor in the database"),
        (f"RedrivePolicy: {{deadLetterTargetArn: '{ARN}d.fifo', maxReceiveCount: 3}}", "must be FIFO, and a standard queue's standard"),
        ("RedrivePolicy: {deadLetterTargetArn: 'arn:aws:sqs:eu-west-1:000000000000:d', maxReceiveCount: 3}", "eu-west-1"),
        (f"RedrivePolicy: {{deadLetterTargetArn: '{ARN}deny', maxReceiveCount: 3}}", "RedriveAllowPolicy does not allow"),
    ],
)
def test_a_mistake_late_in_the_file_leaves_no_queue_before_it_created(tmp_path, late, named):
    (tmp_path / "q.yaml").write_text(
        "queues:\n  - name: a\n  - name: d.fifo\n  - name: deny\n    attributes: {RedriveAllowPolicy: {redrivePermission: denyAll}}\n"
        f"  - name: b\n    attributes:\n      {late}\n"
    )
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    message = refused(tmp_path / "q.yaml", db)
    assert "queue 'b'" in message and named in message
    assert names(db) == []


def test_apply_queues_on_the_command_line_with_a_late_mistake_creates_nothing(tmp_path):
    from sqsqlite.cli.main import cli

    (tmp_path / "q.yaml").write_text(
        f"queues:\n  - name: a\n  - name: b\n    attributes:\n      RedrivePolicy: {{deadLetterTargetArn: '{ARN}gone', maxReceiveCount: 3}}\n"
    )
    db_path = str(tmp_path / "q.db")
    result = CliRunner().invoke(cli, ["--db", db_path, "apply-queues", str(tmp_path / "q.yaml")])
    assert result.exit_code == 255 and "queue 'b': RedrivePolicy: dead-letter queue" in result.output
    assert names(sqsqlite.connect(db_path)) == []


def test_a_refusal_only_the_database_can_make_midway_rolls_back_every_queue_before_it(tmp_path):
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    db.create_queue("kept", visibility_timeout=30)
    db.delete_queue(db.create_queue("recent").url)  # its name can't be used again for 60 seconds
    (tmp_path / "q.yaml").write_text(
        "queues:\n  - name: a\n  - name: kept\n    attributes: {VisibilityTimeout: 90}\n    tags: {t: x}\n  - name: recent\n"
    )
    message = refused(tmp_path / "q.yaml", db)
    assert "queue 'recent'" in message and "60 seconds" in message
    assert names(db) == ["kept"]
    assert db.queue("kept").get_queue_attributes(["VisibilityTimeout"])["VisibilityTimeout"] == "30"
    assert db.queue("kept").list_queue_tags() == {}


# ---------------------------------------------------------------- duplicate keys, size, depth, numbers


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        ("q.yaml", "queues:\n  - name: a\nqueues:\n  - name: b\n", "line 3: key 'queues' is given twice in one map (first on line 1)"),
        ("q.yaml", "queues:\n  - name: a\n    attributes: {DelaySeconds: 1, DelaySeconds: 2}\n", "line 3: key 'DelaySeconds'"),
        (
            "q.json",
            '{"queues": [{"name": "a"}],\n "queues": [{"name": "b"}]}',
            "line 2: key 'queues' is given twice in one map (first on line 1)",
        ),
        ("q.json", '{"queues": [{"name": "a", "tags": {"t": "1", "t": "2"}}]}', "line 1: key 't'"),
    ],
)
def test_a_key_given_twice_is_refused_naming_the_key_and_its_lines(tmp_path, name, text, named):
    (tmp_path / name).write_text(text)
    assert named in refused(tmp_path / name)


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text("queues:\n  - name: a\n" + "#" * D.QUEUES_FILE_MAX_BYTES)
    message = refused(path)
    assert f"more than the {D.QUEUES_FILE_MAX_BYTES:,} a queues file may hold" in message
    (tmp_path / "e.conf").write_text("queues { a { } }\n" + "#" * D.QUEUES_FILE_MAX_HOCON_BYTES)
    assert f"more than the {D.QUEUES_FILE_MAX_HOCON_BYTES:,} a queues file may hold" in refused(tmp_path / "e.conf")
    path.write_text("queues:\n  - name: a\n")
    assert [s.name for s in read_queues_file(path, max_bytes=len("queues:\n  - name: a\n"))] == ["a"]


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        ("q.yaml", "queues:\n  - name: a\n    attributes:\n      Policy: " + "[" * 500 + "]" * 500 + "\n", "line 4: nested deeper than"),
        ("q.yaml", "queues: " + "[" * 5000 + "]" * 5000, "nesting depth"),
        ("q.json", '{"queues":\n' + "[" * 5000 + "]" * 5000 + "}", "line 2: nested deeper than"),
        ("q.conf", "queues {\n a { tags { " + "x { " * 5000 + "}" * 5000 + " } } }", "line 2: nested deeper than"),
    ],
)
def test_nesting_past_the_limit_is_refused_without_a_recursion_error(tmp_path, name, text, named):
    (tmp_path / name).write_text(text)
    assert named in refused(tmp_path / name)


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        ("q.yaml", "queues:\n  - name: a\n    attributes: {DelaySeconds: " + "9" * 5000 + "}\n", "line 3: the number 9"),
        ("q.yaml", "queues:\n  - name: a\n    tags: {t: 0x" + "f" * 5000 + "}\n", "line 3: the number 0x"),
        ("q.json", '{"queues": [{"name": "a", "attributes": {"DelaySeconds": ' + "9" * 5000 + "}}]}", "line 1: the number 9"),
        ("q.conf", "queues { a { delay = " + "9" * 5000 + " } }", "line 1: the number 9"),
        ("q.conf", "queues { a { delay = 1e400 } }", "queue 'a': delay: inf is far longer"),
        ("q.conf", "queues { a { delay = 99999999999999999999 } }", "queue 'a': delay: 99999999999999999999 is far longer"),
    ],
)
def test_a_huge_number_is_refused_cleanly_naming_where(tmp_path, name, text, named):
    (tmp_path / name).write_text(text)
    assert named in refused(tmp_path / name)
