"""The aws CLI's conventions, piece by piece: formats against the aws CLI's own formatters, the
options in every SQS command's help, request files, pagination tokens, the request check."""

from __future__ import annotations

import argparse
import base64
import io
import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sqsqlite.cli import aws, calls, output, shapes, table
from sqsqlite.cli.main import cli


@pytest.fixture
def sq(tmp_path):
    path = str(tmp_path / "conventions.db")
    runner = CliRunner()

    def run(*args: str, code: int = 0):
        result = runner.invoke(cli, ["--db", path, *args])
        assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
        assert "Traceback" not in result.output
        return result

    return run


# ---------------------------------------------------------------------- help


def test_every_sqs_command_names_the_aws_clis_options_in_its_help(sq):
    for command in aws.COMMANDS:
        text = sq(command.name, "--help").stdout
        # --no-paginate is global in the aws CLI: every command takes it, a no-op where nothing pages.
        for option in (
            "--query",
            "--output",
            "--cli-input-json",
            "--cli-input-yaml",
            "--generate-cli-skeleton",
            "--color",
            "--no-paginate",
        ):
            assert option in text, (command.name, option)
        paged = command.operation in calls.PAGINATED
        for option in ("--max-items", "--starting-token", "--page-size"):
            assert (option in text) == paged, (command.name, option)
    top = sq("--help").stdout
    for option in (
        "--query",
        "--output",
        "yaml",
        "--cli-input-json",
        "--cli-input-yaml",
        "--generate-cli-skeleton",
        "fileb://",
        "--max-items",
    ):
        assert option in top


# ---------------------------------------------------------------------- formats against the aws CLI's

SCALARS = st.one_of(st.text(max_size=12), st.integers(-5, 10**6), st.booleans(), st.none(), st.floats(allow_nan=False))
KEYS = st.text(min_size=1, max_size=6)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=16)
# Responses, and what a --query can make of them: a list or a lone value.
RESPONSES = st.one_of(st.dictionaries(KEYS, VALUES, min_size=1, max_size=5), st.lists(VALUES, max_size=4), SCALARS)


@settings(max_examples=150, deadline=None)
@given(data=RESPONSES)
def test_text_output_is_what_the_aws_clis_text_formatter_writes(data):
    awscli_text = pytest.importorskip("awscli.text")
    stream = io.StringIO()
    try:
        awscli_text.format_text(data, stream)
    except (AttributeError, TypeError):
        return  # a list mixing objects and other values, which the aws CLI itself can't write
    assert output.render(data, "text") == stream.getvalue()


def _aws_table(data, title: str, color: str = "off") -> str | None:
    from awscli.formatter import TableFormatter

    stream = io.StringIO()
    try:  # the formatter after --query, so a list or a lone value can be drawn too
        TableFormatter(argparse.Namespace(query=None, color=color))._format_response(title, data, stream)
    except (ValueError, IndexError, AttributeError, TypeError, KeyError):
        return None  # shapes the aws CLI itself can't draw
    return stream.getvalue()


@settings(max_examples=150, deadline=None)
@given(data=RESPONSES)
def test_table_output_is_what_the_aws_clis_table_formatter_draws(data):
    pytest.importorskip("awscli.formatter")
    expected = _aws_table(data, "SomeOperation")
    if expected is not None:
        assert table.render(data, "SomeOperation", width=80) == expected


def test_a_table_wider_than_the_terminal_turns_its_one_row_sections_on_their_side_as_the_aws_cli_does():
    pytest.importorskip("awscli.formatter")
    data = {"Attributes": {f"Attribute{i}": "x" * 12 for i in range(6)}, "Wide": "漢字" * 5}
    expected = _aws_table(data, "GetQueueAttributes")
    assert expected is not None and max(len(line) for line in expected.splitlines()) <= 80
    assert "Attribute5 |" in expected  # one row of six columns became six rows of two
    assert table.render(data, "GetQueueAttributes", width=80) == expected


def test_colour_on_paints_table_values_and_bars_as_the_aws_cli_does(sq):
    pytest.importorskip("awscli.formatter")
    data = {"Messages": [{"Body": "hello", "MessageId": "1"}], "Count": 1}
    assert table.render(data, "ReceiveMessage", width=80, color=True) == _aws_table(data, "ReceiveMessage", color="on")
    sq("create-queue", "--queue-name", "q")
    coloured = sq("get-queue-url", "--queue-name", "q", "--output", "table", "--color", "on").stdout
    assert "\x1b[1m\x1b[34mQueueUrl\x1b[0m" in coloured
    assert "\x1b" not in sq("get-queue-url", "--queue-name", "q", "--output", "table").stdout  # auto: not a terminal


def test_yaml_output_is_block_style_with_keys_sorted_and_non_ascii_kept():
    data = {"QueueUrls": ["http://h/1", "http://h/2"], "Attributes": {"B": "é", "A": "60"}}
    assert output.render(data, "yaml") == "Attributes:\n  A: '60'\n  B: é\nQueueUrls:\n- http://h/1\n- http://h/2\n"
    assert output.render(None, "yaml") == "null\n...\n"  # a --query that finds nothing
    assert output.render({}, "yaml") == ""


def test_json_output_prints_what_a_query_finds_even_null_but_not_an_empty_object():
    assert output.render({"A": 1}, "json", query=output.compile_query("B")) == "null\n"
    assert output.render({"A": []}, "json", query=output.compile_query("A")) == "[]\n"
    assert output.render({"A": {}}, "json", query=output.compile_query("A")) == ""


def test_responses_are_printed_in_the_api_models_member_order():
    response = {"MessageId": "m", "MD5OfMessageBody": "d", "Extra": 1}
    assert list(calls.in_model_order(response, shapes.OUTPUT_SKELETONS["SendMessage"])) == ["MD5OfMessageBody", "MessageId", "Extra"]
    message = {
        "Messages": [{"Body": "b", "MessageAttributes": {"z": {"DataType": "String", "StringValue": "v"}, "a": {"DataType": "Number"}}}]
    }
    ordered = calls.in_model_order(message, shapes.OUTPUT_SKELETONS["ReceiveMessage"])
    attributes = ordered["Messages"][0]["MessageAttributes"]
    assert list(attributes) == ["z", "a"]  # a map keeps its keys' order
    assert list(attributes["z"]) == ["StringValue", "DataType"]


# ---------------------------------------------------------------------- requests from files


def test_cli_input_yaml_supplies_the_request_and_flags_given_as_well_win(sq, tmp_path):
    spec = tmp_path / "queue.yaml"
    spec.write_text("QueueName: from-yaml\nAttributes:\n  VisibilityTimeout: '45'\n")
    url = json.loads(sq("create-queue", "--cli-input-yaml", f"file://{spec}").stdout)["QueueUrl"]
    assert url.endswith("/from-yaml")
    out = sq("create-queue", "--cli-input-yaml", f"file://{spec}", "--queue-name", "from-flag", "--query", "QueueUrl", "--output", "text")
    assert out.stdout.strip().endswith("/from-flag")
    timeout = sq("get-queue-attributes", "--queue-url", "from-flag", "--attribute-names", "VisibilityTimeout", "--output", "text")
    assert timeout.stdout == "ATTRIBUTES\t45\n"


def test_cli_input_json_and_yaml_together_or_not_an_object_are_bad_usage(sq):
    both = sq("create-queue", "--cli-input-json", '{"QueueName": "a"}', "--cli-input-yaml", "QueueName: b", code=252)
    assert "Only one --cli-input-json or --cli-input-yaml" in both.stderr
    assert "expected an object" in sq("create-queue", "--cli-input-json", "[1]", code=252).stderr
    assert "Invalid YAML" in sq("create-queue", "--cli-input-yaml", "a: [", code=252).stderr


def test_the_yaml_input_skeleton_lists_the_members_in_the_models_order(sq):
    text = sq("change-message-visibility", "--generate-cli-skeleton", "yaml-input").stdout
    assert text == "QueueUrl: ''\nReceiptHandle: ''\nVisibilityTimeout: 0\n"


def test_the_yaml_input_skeleton_writes_each_member_out_without_anchors(sq):
    out = sq("send-message-batch", "--generate-cli-skeleton", "yaml-input").stdout
    assert "&" not in out and "*" not in out
    entry = output_yaml(out)["Entries"][0]
    assert entry["MessageAttributes"] == entry["MessageSystemAttributes"]
    assert entry["MessageAttributes"] is not entry["MessageSystemAttributes"]


def output_yaml(text: str):
    import yaml

    return yaml.safe_load(text)


def test_a_skeleton_runs_nothing(sq):
    sq("create-queue", "--queue-name", "q", "--generate-cli-skeleton")
    sq("create-queue", "--queue-name", "q", "--generate-cli-skeleton", "output")
    assert sq("list-queues").stdout == ""


def test_every_flag_takes_file_values_integers_and_handles_too(sq, tmp_path):
    sq("create-queue", "--queue-name", "q")
    (tmp_path / "delay").write_text("0\n")
    (tmp_path / "url").write_text("q")
    sent = sq(
        "send-message",
        "--queue-url",
        f"file://{tmp_path / 'url'}",
        "--message-body",
        "b",
        "--delay-seconds",
        f"file://{tmp_path / 'delay'}",
    )
    assert "MessageId" in sent.stdout
    handle = sq("receive-message", "--queue-url", "q", "--query", "Messages[0].ReceiptHandle", "--output", "text").stdout.strip()
    (tmp_path / "handle").write_text(handle)
    sq("delete-message", "--queue-url", "q", "--receipt-handle", f"file://{tmp_path / 'handle'}")


def test_a_file_path_expands_environment_variables_and_the_home_folder_as_the_aws_cli_does(sq, tmp_path, monkeypatch):
    monkeypatch.setenv("INPUTS", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "body.txt").write_text("from $INPUTS")
    (tmp_path / "in.json").write_text(json.dumps({"QueueUrl": "q", "MessageBody": "from the input"}))
    sq("create-queue", "--queue-name", "q")
    sq("send-message", "--queue-url", "q", "--message-body", "file://$INPUTS/body.txt")
    sq("send-message", "--queue-url", "q", "--message-body", "file://~/body.txt")
    sq("send-message", "--cli-input-json", "file://${INPUTS}/in.json")
    bodies = sq("receive-message", "--queue-url", "q", "--max-number-of-messages", "10", "--query", "Messages[].Body", "--output", "json")
    assert sorted(json.loads(bodies.stdout)) == ["from $INPUTS", "from $INPUTS", "from the input"]
    refused = sq("send-message", "--queue-url", "q", "--message-body", "fileb://$INPUTS/body.txt", code=252)
    assert "Invalid type for parameter MessageBody, value: b'from $INPUTS'" in refused.stderr


def test_the_request_check_speaks_botocores_words():
    assert calls.request_problems("ChangeMessageVisibility", {"QueueUrl": "q", "ReceiptHandle": "r", "VisibilityTimeout": "1"}) == [
        "Invalid type for parameter VisibilityTimeout, value: 1, type: <class 'str'>, valid types: <class 'int'>"
    ]
    # Python's bool is an int, to botocore too: SQS, not the check, refuses it.
    assert calls.request_problems("ChangeMessageVisibility", {"QueueUrl": "q", "ReceiptHandle": "r", "VisibilityTimeout": True}) == []
    assert calls.request_problems("PurgeQueue", {"QueueUrl": "q", "Nope": 1}) == [
        'Unknown parameter in input: "Nope", must be one of: QueueUrl'
    ]
    assert calls.request_problems("TagQueue", {"QueueUrl": "q"}) == ['Missing required parameter in input: "Tags"']


def _model_types(shape, structures: dict):
    """A botocore shape as cli.shapes writes it down."""
    if shape.type_name == "structure":
        if shape.name not in structures:
            structures[shape.name] = None
            structures[shape.name] = ({k: _model_types(v, structures) for k, v in shape.members.items()}, tuple(shape.required_members))
        return shape.name
    if shape.type_name in ("list", "map"):
        return (shape.type_name, _model_types(shape.member if shape.type_name == "list" else shape.value, structures))
    return shape.type_name


def test_the_request_shapes_the_cli_checks_are_the_sqs_models():
    import botocore.session

    model = botocore.session.get_session().get_service_model("sqs")
    structures: dict = {}
    for action in shapes.MEMBERS:
        shape = model.operation_model(action).input_shape
        assert list(shapes.MEMBERS[action]) == list(shape.members), action
        assert shapes.REQUIRED[action] == tuple(shape.required_members), action
        for name, member in shape.members.items():
            typed = _model_types(member, structures)
            assert shapes.MEMBERS[action][name] == member.type_name, (action, name)
            assert shapes.NESTED.get(action, {}).get(name, member.type_name) == typed, (action, name)
    assert shapes.STRUCTURES == structures


_scalars = st.one_of(st.text(max_size=3), st.integers(-2, 2), st.binary(max_size=2), st.none(), st.floats(allow_nan=False))
_names = st.sampled_from(["Id", "MessageBody", "DelaySeconds", "MessageAttributes", "ReceiptHandle", "VisibilityTimeout"])
_attribute_names = st.sampled_from(["DataType", "StringValue", "BinaryValue", "StringListValues", "Stringvalue"])
_attribute = st.dictionaries(_attribute_names, st.one_of(_scalars, st.lists(_scalars, max_size=2)), max_size=3)
_entry = st.dictionaries(_names, st.one_of(_scalars, st.dictionaries(st.text(max_size=2), _attribute, max_size=2)), max_size=4)
_requests = st.fixed_dictionaries(
    {"QueueUrl": st.one_of(st.just("q"), _scalars)},
    optional={
        "Entries": st.one_of(st.lists(st.one_of(_entry, _scalars), max_size=3), _scalars),
        "MessageBody": _scalars,
        "MessageAttributes": st.one_of(st.dictionaries(st.text(max_size=2), st.one_of(_attribute, _scalars), max_size=2), _scalars),
        "AttributeNames": st.one_of(st.lists(_scalars, max_size=2), _scalars),
        "Extra": _scalars,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    action=st.sampled_from(["SendMessage", "SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch", "ReceiveMessage"]),
    request=_requests,
)
def test_the_request_check_finds_what_botocore_finds_at_every_depth(action, request):
    import botocore.session
    from botocore.exceptions import ParamValidationError
    from botocore.validate import validate_parameters

    shape = botocore.session.get_session().get_service_model("sqs").operation_model(action).input_shape
    try:
        validate_parameters(request, shape)
        theirs = ""
    except ParamValidationError as exc:
        # botocore joins its problems with newlines after "Parameter validation failed:"; a value
        # may hold a newline itself, so the texts are compared whole, not split into lines.
        theirs = str(exc).split("\n", 1)[1]
    # The one rule stricter than botocore's: True is no integer.
    ours = [p for p in calls.request_problems(action, request) if "type: <class 'bool'>, valid types: <class 'int'>" not in p]
    assert "\n".join(ours) == theirs


def test_an_option_that_takes_a_value_refuses_one_that_looks_like_an_option_as_the_aws_cli_does(sq):
    sq("create-queue", "--queue-name", "q")
    for value in ("--help", "-x", "--", "--queue-url"):
        refused = sq("send-message", "--queue-url", "q", "--message-body", value, code=252)
        assert refused.stderr.splitlines()[0] == "sqsqlite: argument --message-body: expected one argument", value
    assert "argument --queue-url: expected one argument" in sq("get-queue-attributes", "--queue-url", "--help", code=252).stderr
    sq("peek", "--queue-url", "-q", code=254)  # sqsqlite's own commands parse as click does: the queue '-q'
    for value in ("-", "-1", "-1.5", "- buy milk", "-- a comment", "-a b"):  # argparse's values: a dash alone, negative numbers, a space
        sq("send-message", "--queue-url", "q", "--message-body", value)
    sq("send-message", "--queue-url", "q", "--message-body=--help")  # given with =, it is the value
    got = json.loads(sq("receive-message", "--queue-url", "q", "--max-number-of-messages", "10").stdout)["Messages"]
    assert sorted(m["Body"] for m in got) == sorted(["-", "--help", "-1", "-1.5", "- buy milk", "-- a comment", "-a b"])
    assert '"QueueUrl": ""' in sq("send-message", "--generate-cli-skeleton", "--queue-url", "q").stdout  # its value is optional


def test_a_misspelt_member_inside_a_batch_entry_or_an_attribute_stops_the_command_and_sends_nothing(sq):
    sq("create-queue", "--queue-name", "q")
    typo = sq("send-message-batch", "--queue-url", "q", "--entries", "Id=1,MessageBody=later,DelaySecond=600", code=252)
    assert 'Unknown parameter in Entries[0]: "DelaySecond"' in typo.stderr
    attr = sq(
        "send-message", "--queue-url", "q", "--message-body", "x", "--message-attributes", "a={DataType=String,Stringvalue=y}", code=252
    )
    assert 'Unknown parameter in MessageAttributes.a: "Stringvalue"' in attr.stderr
    assert (
        'Missing required parameter in Entries[0]: "MessageBody"'
        in sq("send-message-batch", "--queue-url", "q", "--entries", "Id=1", code=252).stderr
    )
    counts = json.loads(sq("get-queue-attributes", "--queue-url", "q", "--attribute-names", "All").stdout)["Attributes"]
    assert counts["ApproximateNumberOfMessages"] == counts["ApproximateNumberOfMessagesDelayed"] == "0"


def test_a_signed_integer_in_a_shorthand_entry_goes_to_sqs_as_the_aws_cli_sends_it_and_a_non_integer_stops_the_command(sq):
    sq("create-queue", "--queue-name", "q")
    entries = ["Id=neg,MessageBody=a,DelaySeconds=-1", "Id=pos,MessageBody=b,DelaySeconds=+1"]
    sent = json.loads(sq("send-message-batch", "--queue-url", "q", "--entries", *entries).stdout)
    assert [s["Id"] for s in sent["Successful"]] == ["pos"]
    [failed] = sent["Failed"]
    assert (failed["Id"], failed["Code"]) == ("neg", "InvalidParameterValue") and "Must be between 0 and 900" in failed["Message"]
    changed = sq("change-message-visibility-batch", "--queue-url", "q", "--entries", "Id=1,ReceiptHandle=r,VisibilityTimeout=-1")
    assert "Must be between 0 and 43200" in json.loads(changed.stdout)["Failed"][0]["Message"]
    # What int() refuses, the aws CLI fails on before sending (exit 255, Python's words).
    for value in ("abc", "1.5", "²", ""):
        bad = sq("send-message-batch", "--queue-url", "q", "--entries", f"Id=1,MessageBody=a,DelaySeconds={value}", code=255)
        assert bad.stderr == f"sqsqlite: invalid literal for int() with base 10: {value!r} (DelaySeconds in --entries takes an integer)\n"
    counts = json.loads(sq("get-queue-attributes", "--queue-url", "q", "--attribute-names", "All").stdout)["Attributes"]
    assert int(counts["ApproximateNumberOfMessages"]) + int(counts["ApproximateNumberOfMessagesDelayed"]) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["send-message", "--queue-url", "q", "--message-body", "x", "--delay-seconds", "abc"],
        ["receive-message", "--queue-url", "q", "--max-number-of-messages", "1.5"],
        ["receive-message", "--queue-url", "q", "--visibility-timeout", "²"],
        ["receive-message", "--queue-url", "q", "--wait-time-seconds", ""],
        ["change-message-visibility", "--queue-url", "q", "--receipt-handle", "h", "--visibility-timeout", "abc"],
        ["list-queues", "--max-results", "abc"],
        ["list-dead-letter-source-queues", "--queue-url", "q", "--max-results", "abc"],
        ["start-message-move-task", "--source-arn", "arn:aws:sqs:us-east-1:000000000000:q", "--max-number-of-messages-per-second", "x"],
        ["list-message-move-tasks", "--source-arn", "arn:aws:sqs:us-east-1:000000000000:q", "--max-results", "x"],
    ],
    ids=lambda args: f"{args[0]} {args[-2]}",
)
def test_a_non_integer_in_an_integer_flag_stops_the_command_with_pythons_words_and_exit_255_as_in_the_aws_cli(sq, args):
    sq("create-queue", "--queue-name", "q")
    bad = sq(*args, code=255)
    assert bad.stdout == ""
    assert bad.stderr == f"sqsqlite: invalid literal for int() with base 10: {args[-1]!r} ({args[-2]} takes an integer)\n"
    counts = json.loads(sq("get-queue-attributes", "--queue-url", "q", "--attribute-names", "All").stdout)["Attributes"]
    assert counts["ApproximateNumberOfMessages"] == counts["ApproximateNumberOfMessagesDelayed"] == "0"


def test_an_integer_flag_takes_what_int_takes(sq, tmp_path):
    sq("create-queue", "--queue-name", "q")
    (tmp_path / "delay").write_text(" 0\n")
    for value in (" 1 ", "+0", f"file://{tmp_path / 'delay'}"):
        sq("send-message", "--queue-url", "q", "--message-body", "x", "--delay-seconds", value)


def test_a_non_integer_in_a_paging_flag_is_bad_usage_as_argparse_says_it_in_the_aws_cli(sq):
    for flag in ("--max-items", "--page-size"):
        assert f"Invalid value for '{flag}'" in sq("list-queues", flag, "abc", code=252).stderr


def test_a_bool_for_an_integer_member_goes_to_sqs_as_botocore_lets_it_and_sqs_refuses_it_in_its_words(sq):
    sq("create-queue", "--queue-name", "q")
    sq("create-queue", "--queue-name", "dlq")
    arn = "arn:aws:sqs:us-east-1:000000000000:dlq"
    given = {"QueueUrl": "q", "MessageBody": "x", "ReceiptHandle": "bogus", "SourceArn": arn}
    for action, members in shapes.MEMBERS.items():
        for name in (n for n, kind in members.items() if kind in ("integer", "long")):
            command = next(c.name for c in aws.COMMANDS if c.operation == action)
            request = {m: given[m] for m in shapes.REQUIRED[action] if m in given} | {name: True}
            refused = sq(command, "--cli-input-json", json.dumps(request), code=254)
            first = refused.stderr.splitlines()[0]
            assert first.startswith(
                f"An error occurred (InvalidParameterValue) when calling the {action} operation: Value True for parameter {name} is invalid."
            ), first
    for command, entry in (
        ("send-message-batch", {"Id": "1", "MessageBody": "x", "DelaySeconds": True}),
        ("change-message-visibility-batch", {"Id": "1", "ReceiptHandle": "bogus", "VisibilityTimeout": True}),
    ):
        answered = json.loads(sq(command, "--cli-input-json", json.dumps({"QueueUrl": "q", "Entries": [entry]})).stdout)
        [failed] = answered["Failed"]
        assert failed["Code"] == "InvalidParameterValue" and failed["Message"].startswith("Value True for parameter"), failed


# ---------------------------------------------------------------------- pagination


def test_a_starting_token_is_botocores_or_its_older_form():
    token = calls.encode_token({"NextToken": "abc", "boto_truncate_amount": 2})
    assert calls.decode_token(token) == ({"NextToken": "abc"}, 2)
    assert calls.decode_token(calls.encode_token({"NextToken": None, "boto_truncate_amount": 1})) == ({"NextToken": None}, 1)
    assert calls.decode_token("abc___3") == ({"NextToken": "abc"}, 3)
    assert calls.decode_token("plain") == ({"NextToken": "plain"}, 0)
    assert calls.decode_token(calls.encode_token([1])) == ({"NextToken": "WzFd"}, 0)  # botocore, too, takes it for a raw one
    assert calls.decode_token(calls.encode_token({"NextToken": "a", "boto_truncate_amount": None})) == ({"NextToken": "a"}, 0)
    assert calls.starting_request({"NextToken": "old", "QueueNamePrefix": "p"}, calls.encode_token({"NextToken": None})) == (
        {"QueueNamePrefix": "p"},
        0,
    )


def _b64(value) -> str:
    return calls.encode_token(value)


@pytest.mark.parametrize(
    "token, code, said",
    [
        (
            _b64({"x": 1}),
            252,
            'Parameter validation failed:\nUnknown parameter in input: "x", must be one of: QueueNamePrefix, NextToken, MaxResults\n',
        ),
        (
            _b64({"NextToken": 5}),
            252,
            "Parameter validation failed:\nInvalid type for parameter NextToken, value: 5, type: <class 'int'>, valid types: <class 'str'>\n",
        ),
        (
            _b64({"NextToken": None, "boto_truncate_amount": "a"}),
            255,
            f'sqsqlite: Bad starting token: {_b64({"NextToken": None, "boto_truncate_amount": "a"})}: its boto_truncate_amount is "a", not an integer\n',
        ),
        (_b64("abc"), 255, f'sqsqlite: Bad starting token: {_b64("abc")} is base64 of JSON "abc", not of an object\n'),
    ],
    ids=["unknown member", "NextToken no string", "count no integer", "no object"],
)
def test_a_starting_token_of_botocores_form_that_botocore_cannot_use_fails_with_the_aws_clis_exit_status(sq, token, code, said):
    sq("create-queue", "--queue-name", "q")
    done = sq("list-queues", "--starting-token", token, code=code)
    assert (done.stdout, done.stderr) == ("", said)


def test_pages_are_fetched_until_the_service_gives_no_token_and_max_items_cuts_inside_a_page():
    urls = [f"u{i}" for i in range(5)]
    seen = []

    def call(request):
        seen.append(dict(request))
        start = int(request.get("NextToken", 0))
        size = request.get("MaxResults", 1000)
        page = {"QueueUrls": urls[start : start + size]}
        if start + size < len(urls):
            page["NextToken"] = str(start + size)
        return page

    pages = calls.paginate(call, "ListQueues", {}, max_items=3, skip=0, page_size=2)
    assert pages.full_result() == {
        "QueueUrls": ["u0", "u1", "u2"],
        "NextToken": calls.encode_token({"NextToken": "2", "boto_truncate_amount": 1}),
    }
    request, skip = calls.starting_request({}, pages.resume)
    rest = calls.paginate(call, "ListQueues", request, max_items=None, skip=skip, page_size=2)
    assert rest.full_result() == {"QueueUrls": ["u3", "u4"]}
    assert [r.get("MaxResults") for r in seen] == [2, 2, 2, 2]


def test_no_paginate_with_a_paging_flag_fails_as_the_aws_cli_does(sq):
    sq("create-queue", "--queue-name", "q")
    out = sq("list-queues", "--no-paginate", "--page-size", "1", "--max-items", "2", code=255)
    # The aws CLI's own words, printed as it prints them: without sqsqlite's prefix.
    assert out.stderr == "Error during pagination: Cannot specify --no-paginate along with pagination arguments: --page-size, --max-items\n"
    sq("--no-paginate", "list-queues")


def test_no_paginate_is_taken_after_any_command_as_the_aws_clis_global_option(sq):
    sq("create-queue", "--queue-name", "q", "--no-paginate")
    sq("send-message", "--queue-url", "q", "--message-body", "x", "--no-paginate")
    sq("stats", "--no-paginate")


def test_aws_default_output_sets_the_sqs_commands_format_and_output_wins_over_it(sq, monkeypatch):
    queue = json.loads(sq("create-queue", "--queue-name", "q").stdout)["QueueUrl"]
    monkeypatch.setenv("AWS_DEFAULT_OUTPUT", "text")
    assert sq("list-queues").stdout == f"QUEUEURLS\t{queue}\n"
    assert json.loads(sq("list-queues", "--output", "json").stdout) == {"QueueUrls": [queue]}
    assert sq("get-queue-url", "--queue-name", "q", "--generate-cli-skeleton", "output").stdout == "QueueUrl\n"
    assert sq("stats").stdout.startswith("+")  # the administration commands keep their own default
    monkeypatch.setenv("AWS_DEFAULT_OUTPUT", "yaml")
    assert sq("list-queues").stdout == f"QueueUrls:\n- {queue}\n"


@pytest.mark.parametrize("value", ["xml", "TEXT", ""])
def test_an_aws_default_output_the_aws_cli_does_not_know_is_bad_usage_naming_it_before_anything_is_sent(sq, monkeypatch, value):
    sq("create-queue", "--queue-name", "q")
    monkeypatch.setenv("AWS_DEFAULT_OUTPUT", value)
    refused = sq("send-message", "--queue-url", "q", "--message-body", "x", code=252)
    assert refused.stdout == ""
    assert refused.stderr == f"Unknown output type: {value} (from AWS_DEFAULT_OUTPUT; it takes json, text, table or yaml)\n"
    counts = sq("get-queue-attributes", "--queue-url", "q", "--attribute-names", "ApproximateNumberOfMessages", "--output", "json")
    assert json.loads(counts.stdout) == {"Attributes": {"ApproximateNumberOfMessages": "0"}}


def test_global_options_work_before_the_command_too(sq):
    out = sq("--query", "QueueUrl", "--output", "text", "create-queue", "--queue-name", "q")
    assert out.stdout == "http://localhost:9324/000000000000/q\n"
    assert "Bad value for --query" in sq("--query", "[", "list-queues", code=252).stderr


def test_no_cli_pager_is_taken_before_or_after_any_command_and_changes_nothing(sq):
    queue = json.loads(sq("create-queue", "--queue-name", "q").stdout)["QueueUrl"]
    assert json.loads(sq("--no-cli-pager", "list-queues").stdout) == {"QueueUrls": [queue]}
    assert json.loads(sq("list-queues", "--no-cli-pager").stdout) == {"QueueUrls": [queue]}
    sq("stats", "--no-cli-pager")


def _binary_values(sq) -> list[str]:
    got = sq("receive-message", "--queue-url", "q", "--max-number-of-messages", "10", "--message-attribute-names", "All")
    return sorted(m["MessageAttributes"]["b"]["BinaryValue"] for m in json.loads(got.stdout)["Messages"])


def test_cli_binary_format_base64_reads_a_binary_value_as_base64_and_raw_in_base64_out_as_its_bytes(sq):
    sq("create-queue", "--queue-name", "q")
    hello = base64.b64encode(b"hello").decode()
    sq("send-message", "--queue-url", "q", "--message-body", "x", "--message-attributes", f"b={{DataType=Binary,BinaryValue={hello}}}")
    sq(
        *("--cli-binary-format", "base64", "send-message", "--queue-url", "q", "--message-body", "x"),
        *("--message-attributes", f"b={{DataType=Binary,BinaryValue={hello}}}"),
    )
    raw = ["--message-attributes", "b={DataType=Binary,BinaryValue=hello}", "--cli-binary-format", "raw-in-base64-out"]
    sent = json.loads(sq("send-message", "--queue-url", "q", "--message-body", "x", *raw).stdout)
    assert (
        sent["MD5OfMessageAttributes"]
        == json.loads(
            sq(
                "send-message",
                "--queue-url",
                "q",
                "--message-body",
                "x",
                "--message-attributes",
                f"b={{DataType=Binary,BinaryValue={hello}}}",
            ).stdout
        )["MD5OfMessageAttributes"]
    )
    entry = {"Id": "1", "MessageBody": "x", "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "hello"}}}
    sq("send-message-batch", "--queue-url", "q", "--entries", json.dumps([entry]), "--cli-binary-format", "raw-in-base64-out")
    request = {"QueueUrl": "q", "MessageBody": "x", "MessageAttributes": entry["MessageAttributes"]}
    sq("--cli-binary-format", "raw-in-base64-out", "send-message", "--cli-input-json", json.dumps(request))
    assert _binary_values(sq) == [hello] * 6


def test_a_raw_binary_value_that_is_no_text_stops_the_command_in_botocores_words_and_sends_nothing(sq):
    # A byte the shell's locale could not decode reaches Python as a lone surrogate: botocore's
    # UTF-8 encoding of the blob fails, and the aws CLI prints its words (exit 255).
    sq("create-queue", "--queue-name", "q")
    request = {"QueueUrl": "q", "MessageBody": "x", "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "\udcff"}}}
    failed = sq("--cli-binary-format", "raw-in-base64-out", "send-message", "--cli-input-json", json.dumps(request), code=255)
    assert failed.stderr.strip() == "'utf-8' codec can't encode character '\\udcff' in position 0: surrogates not allowed"
    assert "Messages" not in json.loads(sq("receive-message", "--queue-url", "q").stdout or "{}")


def test_a_cli_binary_format_the_aws_cli_does_not_have_is_bad_usage(sq):
    refused = sq("list-queues", "--cli-binary-format", "raw", code=252)
    assert "Invalid value for '--cli-binary-format'" in refused.stderr
