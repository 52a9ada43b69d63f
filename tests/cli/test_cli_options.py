"""The aws shorthand parser, the structured argument types and the output renderers."""

from __future__ import annotations

import json

import click
import pytest

from sqsqlite.cli import output, shorthand
from sqsqlite.cli.values import ENTRY, MAP, MESSAGE_ATTRIBUTES, STRINGS
from sqsqlite.command_options import Failure

CASES = [
    "VisibilityTimeout=60",
    "VisibilityTimeout=60,DelaySeconds=5",
    "a=b,c",
    "a=b,c,d=e",
    "name={DataType=String,StringValue=x}",
    'a={DataType=String,StringValue="x, y"},b={DataType=Number,StringValue=3}',
    "Id=1,MessageBody=hello world",
    "k=[a,b]",
    "k=[{x=1},{x=2}]",
    "x=a\\,b",
    "q='single quoted, with comma'",
    'q="it\\"s"',
    "a= b , c = d",
    "empty=",
    "Policy=arn:aws:iam::123:role/x",
    "u=https://example.com/path?x=1",
    "a=b,,c=d",
]
BAD = ["novalue", "a={x=1", "a=[1,2", "a='open", "a=1,a=2"]


@pytest.mark.parametrize("text", CASES)
def test_shorthand_parses_as_the_aws_cli_parses(text):
    awscli = pytest.importorskip("awscli.shorthand")
    assert shorthand.parse(text) == awscli.ShorthandParser().parse(text)


@pytest.mark.parametrize("text", BAD)
def test_shorthand_refuses_what_the_aws_cli_refuses(text):
    awscli = pytest.importorskip("awscli.shorthand")
    with pytest.raises(awscli.ShorthandParseError):
        awscli.ShorthandParser().parse(text)
    with pytest.raises(shorthand.ShorthandError):
        shorthand.parse(text)


def test_shorthand_examples_without_awscli():
    assert shorthand.parse("VisibilityTimeout=60,DelaySeconds=5") == {"VisibilityTimeout": "60", "DelaySeconds": "5"}
    assert shorthand.parse("a={DataType=String,StringValue=x}") == {"a": {"DataType": "String", "StringValue": "x"}}


def test_a_shorthand_error_points_at_the_position():
    with pytest.raises(shorthand.ShorthandError, match=r"expected '=' at position 7: novalue<here>"):
        shorthand.parse("novalue")


def _convert(kind, value):
    return kind.convert(value, None, None)


def test_map_arguments_take_shorthand_json_and_files(tmp_path):
    (tmp_path / "a.json").write_text('{"DelaySeconds": "5"}')
    assert _convert(MAP, "DelaySeconds=5") == {"DelaySeconds": "5"}
    assert _convert(MAP, ' {"DelaySeconds": "5"}') == {"DelaySeconds": "5"}
    assert _convert(MAP, f"file://{tmp_path / 'a.json'}") == {"DelaySeconds": "5"}
    (tmp_path / "s.txt").write_text("DelaySeconds=7\n")
    assert _convert(MAP, f"file://{tmp_path / 's.txt'}") == {"DelaySeconds": "7"}


def test_a_map_value_with_an_unescaped_comma_is_refused_with_a_hint():
    with pytest.raises(click.BadParameter, match="takes one string"):
        _convert(MAP, "Policy=a,b")


def test_entries_convert_numeric_members_as_the_aws_cli_model_does():
    assert _convert(ENTRY, "Id=1,MessageBody=5,DelaySeconds=5") == {"Id": "1", "MessageBody": "5", "DelaySeconds": 5}
    assert _convert(ENTRY, '[{"Id": "1"}, {"Id": "2"}]') == [{"Id": "1"}, {"Id": "2"}]


def test_a_numeric_member_int_refuses_such_as_a_superscript_digit_stops_the_command_as_in_the_aws_cli():
    with pytest.raises(Failure, match=r"invalid literal for int\(\) with base 10: '²'"):
        _convert(ENTRY, "Id=1,MessageBody=a,DelaySeconds=²")
    assert _convert(ENTRY, "Id=1,MessageBody=a,DelaySeconds=-1") == {"Id": "1", "MessageBody": "a", "DelaySeconds": -1}


def test_message_attributes_are_parsed_and_their_form_left_to_the_whole_requests_check():
    assert _convert(MESSAGE_ATTRIBUTES, "a={DataType=String,StringValue=x}") == {"a": {"DataType": "String", "StringValue": "x"}}
    assert _convert(MESSAGE_ATTRIBUTES, "a=x") == {"a": "x"}  # botocore's words refuse it (test_cli.py)


def test_string_lists_take_names_or_a_json_list():
    assert _convert(STRINGS, "All") == "All"
    assert _convert(STRINGS, '["A", "B"]') == ["A", "B"]
    with pytest.raises(click.BadParameter):
        _convert(STRINGS, "[1, 2]")


def test_json_output_is_the_aws_clis_with_binary_as_base64_and_no_response_metadata():
    data = {"A": "é", "B": b"\x00\x01", "ResponseMetadata": {"RequestId": "x"}}
    assert output.render(data, "json") == json.dumps({"A": "é", "B": "AAE="}, indent=4, ensure_ascii=False) + "\n"


def test_an_empty_response_renders_nothing_in_every_format():
    for fmt in ("json", "table", "text", "yaml"):
        assert output.render({"ResponseMetadata": {}}, fmt) == ""


def test_text_output_matches_the_aws_cli_formatter():
    awscli_text = pytest.importorskip("awscli.text")
    import io

    data = {
        "Messages": [
            {
                "MessageId": "1",
                "Body": "a",
                "Attributes": {"SentTimestamp": "5"},
                "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}},
            },
            {"MessageId": "2", "Body": "b", "MD5OfBody": "x"},
        ],
        "QueueUrls": ["u1", "u2"],
        "Count": 3,
    }
    buf = io.StringIO()
    awscli_text.format_text(data, buf)
    assert output.render(data, "text") == buf.getvalue()


def test_the_administration_table_puts_a_list_of_objects_in_columns():
    table = output.render({"Successful": [{"Id": "1", "MessageId": "m"}], "Failed": []}, "table", "Stats", admin=True)
    lines = table.splitlines()
    assert "Stats: Successful" in lines[1]
    assert [c.strip() for c in lines[3].strip("|").split("|")] == ["Id", "MessageId"]
    assert [c.strip() for c in lines[5].strip("|").split("|")] == ["1", "m"]
