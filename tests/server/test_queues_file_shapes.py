"""Queues files as teams leaving other emulators write them: CreateQueue's own entry shape
(QueueName, Attributes, tags), a map of queue names to their attributes, fauxqs's init.json, and
dead-letter queues by bare name or ARN. Every malformed shape is one line naming the file, the
line (YAML) and the key; an invalid attribute gets CreateQueue's own words; nothing is written."""

import json
import re
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite.errors import SQSError
from sqsqlite.server.queues_file import QueuesFileError, apply_queues, read_queues_file

PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "emulator.md"
ARN = "arn:aws:sqs:us-east-1:000000000000:"


def apply_text(tmp_path, text, name="queues.yaml", db=None):
    path = tmp_path / name
    path.write_text(text)
    db = db or sqsqlite.connect(str(tmp_path / "q.db"))
    return db, apply_queues(db, read_queues_file(path), str(path))


def refused(tmp_path, text, name="queues.yaml"):
    path = tmp_path / name
    path.write_text(text)
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    with pytest.raises(QueuesFileError) as caught:
        apply_queues(db, read_queues_file(path), str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert db.queue_names() == []  # checked whole before anything was written
    return message


def attributes(db, name):
    return db.queue(name).get_queue_attributes(["All"])


def redrive(db, name):
    return json.loads(attributes(db, name)["RedrivePolicy"])


def test_an_entry_may_be_create_queues_own_input_with_string_values_and_tags(tmp_path):
    db, outcome = apply_text(
        tmp_path,
        "queues:\n"
        "  - QueueName: jobs.fifo\n"
        "    Attributes:\n"
        "      FifoQueue: 'true'\n"
        "      VisibilityTimeout: '45'\n"
        "      ContentBasedDeduplication: 'true'\n"
        '      RedrivePolicy: \'{"deadLetterTargetArn": "jobs-dlq.fifo", "maxReceiveCount": "4"}\'\n'
        "    tags: {team: payments}\n"
        "  - QueueName: jobs-dlq.fifo\n"
        "    Attributes: {FifoQueue: 'true'}\n",
    )
    assert outcome["Created"] == ["jobs.fifo", "jobs-dlq.fifo"]
    jobs = attributes(db, "jobs.fifo")
    assert (jobs["FifoQueue"], jobs["VisibilityTimeout"], jobs["ContentBasedDeduplication"]) == ("true", "45", "true")
    assert redrive(db, "jobs.fifo") == {"deadLetterTargetArn": db.queue_arn("jobs-dlq.fifo"), "maxReceiveCount": 4}
    assert db.queue("jobs.fifo").list_queue_tags() == {"team": "payments"}


def test_create_queue_input_as_json_says_what_the_same_entry_in_yaml_says(tmp_path):
    entries = [
        {"QueueName": "orders", "Attributes": {"DelaySeconds": "5"}, "tags": {"env": "dev"}},
        {"QueueName": "audit"},
    ]
    db, outcome = apply_text(tmp_path, json.dumps({"queues": entries}), "queues.json")
    assert outcome["Created"] == ["orders", "audit"]
    assert attributes(db, "orders")["DelaySeconds"] == "5" and db.queue("orders").list_queue_tags() == {"env": "dev"}


def test_a_file_may_map_each_queue_name_to_its_attributes(tmp_path):
    db, outcome = apply_text(
        tmp_path,
        "orders:\n"
        "  VisibilityTimeout: 30\n"
        "  RedrivePolicy: {deadLetterTargetArn: orders-dlq, maxReceiveCount: 5}\n"
        "orders-dlq:\n"  # nothing: a queue with SQS's defaults
        "events.fifo: {ContentBasedDeduplication: true}\n",
    )
    assert outcome["Created"] == ["orders", "orders-dlq", "events.fifo"]
    assert attributes(db, "orders")["VisibilityTimeout"] == "30"
    assert redrive(db, "orders") == {"deadLetterTargetArn": db.queue_arn("orders-dlq"), "maxReceiveCount": 5}
    assert attributes(db, "orders-dlq")["VisibilityTimeout"] == "30"  # SQS's default
    assert attributes(db, "events.fifo")["FifoQueue"] == "true"


def test_a_json_map_of_queue_names_applies_and_applies_again_unchanged(tmp_path):
    text = json.dumps({"orders": {"VisibilityTimeout": "60"}, "audit": {}})
    db, outcome = apply_text(tmp_path, text, "queues.json")
    assert outcome["Created"] == ["orders", "audit"]
    _, again = apply_text(tmp_path, text, "queues.json", db=db)
    assert again == {"Created": [], "Updated": [], "Unchanged": ["orders", "audit"], "NotInFile": []}


def test_fauxqs_init_json_applies_as_it_always_did(tmp_path):
    init = {
        "queues": [
            {"name": "orders", "attributes": {"VisibilityTimeout": "30", "DelaySeconds": "2"}},
            {"name": "orders.fifo", "attributes": {"FifoQueue": "true", "ContentBasedDeduplication": "true"}},
            {"name": "plain"},
        ]
    }
    db, outcome = apply_text(tmp_path, json.dumps(init), "init.json")
    assert outcome["Created"] == ["orders", "orders.fifo", "plain"]
    orders = attributes(db, "orders")
    assert (orders["VisibilityTimeout"], orders["DelaySeconds"]) == ("30", "2")
    assert attributes(db, "orders.fifo")["ContentBasedDeduplication"] == "true"


@pytest.mark.parametrize(
    "dead_letter",
    [
        "attributes: {RedrivePolicy: {deadLetterTargetArn: dlq, maxReceiveCount: 3}}",
        f"attributes: {{RedrivePolicy: {{deadLetterTargetArn: '{ARN}dlq', maxReceiveCount: 3}}}}",
        'Attributes: {RedrivePolicy: \'{"deadLetterTargetArn": "dlq", "maxReceiveCount": "3"}\'}',
        f'Attributes: {{RedrivePolicy: \'{{"deadLetterTargetArn": "{ARN}dlq", "maxReceiveCount": 3}}\'}}',
        "deadLetterQueue: {name: dlq, maxReceiveCount: 3}",
        f"deadLetterQueue: {{name: '{ARN}dlq', maxReceiveCount: 3}}",
    ],
)
def test_a_dead_letter_queue_is_named_by_bare_name_or_arn_and_may_come_later(tmp_path, dead_letter):
    db, outcome = apply_text(tmp_path, f"queues:\n  - name: src\n    {dead_letter}\n  - name: dlq\n")
    assert outcome["Created"] == ["src", "dlq"]
    assert redrive(db, "src") == {"deadLetterTargetArn": db.queue_arn("dlq"), "maxReceiveCount": 3}


@pytest.mark.parametrize("arn", ["arn:aws:sqs:us-east-1:111111111111:dlq", "arn:aws:sqs:eu-west-1:000000000000:dlq"])
@pytest.mark.parametrize("form", ["RedrivePolicy", "deadLetterQueue"])
def test_a_dead_letter_queue_of_another_account_or_region_is_refused_as_sqs_refuses_it(tmp_path, arn, form):
    scratch = sqsqlite.connect(str(tmp_path / "scratch.db"))
    scratch.create_queue("dlq")
    with pytest.raises(SQSError) as sqs:  # what SetQueueAttributes says of the same ARN
        scratch.create_queue("src").set_queue_attributes({"RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})})
    given = (
        f"attributes: {{RedrivePolicy: {{deadLetterTargetArn: '{arn}', maxReceiveCount: 3}}}}"
        if form == "RedrivePolicy"
        else f"deadLetterQueue: {{name: '{arn}', maxReceiveCount: 3}}"
    )
    message = refused(tmp_path, f"queues:\n  - name: src\n    {given}\n  - name: dlq\n")
    assert "queue 'src'" in message and arn in message
    assert sqs.value.hint.split(f"{arn!r} ")[1] in message  # names account ... in ...; this database holds ...


@pytest.mark.parametrize(
    ("key", "value", "yaml_value"),
    [
        ("VisibilityTimeout", "99999", "'99999'"),
        ("DelaySeconds", "-1", "-1"),
        ("MaximumMessageSize", "big", "big"),
        ("FifoThroughputLimit", "perGroup", "perGroup"),
        ("RedriveAllowPolicy", '{"redrivePermission": "sometimes"}', '\'{"redrivePermission": "sometimes"}\''),
        (
            "RedrivePolicy",
            '{"deadLetterTargetArn": "' + ARN + 'd", "maxReceiveCount": 0}',
            f'\'{{"deadLetterTargetArn": "{ARN}d", "maxReceiveCount": 0}}\'',
        ),
        ("RedrivePolicy", '{"maxReceiveCount": 3}', "'{\"maxReceiveCount\": 3}'"),
        ("ApproximateNumberOfMessages", "3", "'3'"),
        ("Colour", "blue", "blue"),
    ],
)
@pytest.mark.parametrize("shape", ["list", "CreateQueue", "map"])
def test_an_invalid_attribute_gets_create_queues_own_message_in_every_shape(tmp_path, key, value, yaml_value, shape):
    db = sqsqlite.connect(str(tmp_path / "scratch.db"))
    with pytest.raises(SQSError) as create_queue:
        db.create_queue("q", attributes={key: value})
    text = {
        "list": f"queues:\n  - name: q\n    attributes:\n      {key}: {yaml_value}\n",
        "CreateQueue": f"queues:\n  - QueueName: q\n    Attributes:\n      {key}: {yaml_value}\n",
        "map": f"q:\n  {key}: {yaml_value}\n",
    }[shape]
    message = refused(tmp_path, text)
    assert f"queue 'q': attribute '{key}': " in message
    assert message.endswith(create_queue.value.hint or create_queue.value.message)
    assert re.match(rf"{re.escape(str(tmp_path / 'queues.yaml'))}: line {text.count(chr(10))}: ", message)  # the attribute's own line


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("", "the file holds nothing"),
        ("- name: a\n", "expected queues: a list of queues"),
        ("queues:\n  - name: a\ntopics: []\n", "line 3: key 'topics': a file with a queues list holds nothing else"),
        ("queues: {a: {}}\n", "line 1: queues: expected a list of queues"),
        ("queues:\n  - name: a\n  - just-a-name\n", "line 3: queues[1]: expected a map with a name or QueueName"),
        ("queues:\n  - attributes: {DelaySeconds: 1}\n", "line 2: queues[0]: no name or QueueName"),
        ("queues:\n  - name: a\n    QueueName: a\n", "line 2: queues[0]: name and QueueName: give the queue's name once"),
        ("queues:\n  - QueueName: [a]\n", "line 2: queues[0].QueueName: expected the queue's name as text"),
        ("queues:\n  - QueueName: a\n    Tags: {t: x}\n", "line 3: queue 'a': key 'Tags' is unknown"),
        ("queues:\n  - name: a\n    attributes: {}\n    Attributes: {}\n", "line 4: queue 'a': attributes and Attributes"),
        ("queues:\n  - QueueName: a\n    Attributes: [VisibilityTimeout]\n", "line 3: queue 'a': Attributes: expected a map"),
        (
            "queues:\n  - name: a\n    deadLetterQueue: d\n",
            "line 3: queue 'a': deadLetterQueue: expected a map of name and maxReceiveCount",
        ),
        ("queues:\n  - name: a\n    deadLetterQueue: {name: d}\n", "line 3: queue 'a': deadLetterQueue.maxReceiveCount: missing"),
        (
            "queues:\n  - name: a\n    deadLetterQueue:\n      name: d\n      maxReceiveCount: 2\n      after: 3\n",
            "line 6: queue 'a': deadLetterQueue.after: unknown key",
        ),
        ("queues:\n  - name: a\n    deadLetterQueue: {name: [d], maxReceiveCount: 2}\n", "queue 'a': deadLetterQueue: name: expected"),
        (
            "queues:\n  - name: a\n    deadLetterQueue: {name: 'no such!', maxReceiveCount: 2}\n",
            "queue 'a': deadLetterQueue: name: Invalid QueueName",
        ),
        (
            "queues:\n  - name: a\n    attributes:\n      RedrivePolicy: {deadLetterTargetArn: 'no such!', maxReceiveCount: 2}\n",
            "line 4: queue 'a': attribute 'RedrivePolicy': deadLetterTargetArn: Invalid QueueName",
        ),
        (
            "queues:\n  - name: a\n    deadLetterQueue: {name: d, maxReceiveCount: 2}\n    attributes: {RedrivePolicy: {deadLetterTargetArn: d, maxReceiveCount: 2}}\n"
            "  - name: d\n",
            "queue 'a': give the dead-letter queue once",
        ),
        ("orders:\n  VisibilityTimeout: 30\naudit: [1]\n", "line 3: queue 'audit': expected a map of its attributes"),
        (
            "orders:\n  VisibilityTimeout: 30\n  tags: {t: x}\n",
            "line 3: queue 'orders': tags: a map of queue names holds each queue's attributes only",
        ),
        ("orders:\n  Attributes: {VisibilityTimeout: 30}\n", "line 2: queue 'orders': Attributes: a map of queue names holds"),
        ("'bad name!': {}\n", "line 1: queue 'bad name!': name: Invalid QueueName"),
        ("orders: {}\norders.fifo: {FifoQueue: false}\n", "line 2: queue 'orders.fifo': attribute 'FifoQueue'"),
    ],
)
def test_each_malformed_shape_is_one_line_naming_the_file_line_and_key(tmp_path, text, named):
    assert named in refused(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"queues": {"a": {}}}', "queues: expected a list of queues"),
        ('{"queues": [{"QueueName": "a", "Tags": {}}]}', "queue 'a': key 'Tags' is unknown"),
        ('{"a": {"VisibilityTimeout": "x"}}', "queue 'a': attribute 'VisibilityTimeout': Invalid value 'x'"),
        ('["a"]', "expected queues: a list of queues"),
    ],
)
def test_a_json_file_is_refused_naming_the_key_too(tmp_path, text, named):
    assert named in refused(tmp_path, text, "queues.json")


# ---------------------------------------------------------------- the page's examples


def page_examples() -> list[tuple[str, str, str]]:
    """(where, suffix, text) of each yaml and json block in the emulator page's queues-file section."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("\n## Queues from a file")
    end = text.index("\n## ", start + 1)
    found = []
    for m in re.finditer(r"^```(yaml|json)\n(.*?)^```", text[start:end], flags=re.M | re.S):
        line = text.count("\n", 0, start + m.start()) + 1
        found.append((f"emulator.md:{line}", m.group(1), m.group(2)))
    return found


EXAMPLES = page_examples()


def test_the_page_shows_each_shape_a_queues_file_takes():
    shown = "\n".join(text for _, _, text in EXAMPLES)
    assert len(EXAMPLES) >= 4
    for shape in ("queues:", "QueueName:", '"queues": [', "deadLetterTargetArn"):
        assert shape in shown


@pytest.mark.parametrize(("where", "suffix", "text"), EXAMPLES, ids=[w for w, _, _ in EXAMPLES])
def test_each_queues_file_the_page_shows_applies_and_applies_again_unchanged(tmp_path, where, suffix, text):
    db, outcome = apply_text(tmp_path, text, f"queues.{suffix}")
    assert outcome["Created"] and not outcome["Updated"], where
    _, again = apply_text(tmp_path, text, f"queues.{suffix}", db=db)
    assert again["Unchanged"] == outcome["Created"], where


# ---------------------------------------------------------------- a review's findings


@pytest.mark.parametrize(
    "form", ["q:\n  Policy: {Version: 2012-10-17}\n", "queues:\n  - name: q\n    attributes:\n      Policy: {Version: 2012-10-17}\n"]
)
def test_an_unquoted_date_in_a_map_valued_policy_is_read_as_the_text_written(tmp_path, form):
    db, _ = apply_text(tmp_path, form)
    assert json.loads(attributes(db, "q")["Policy"]) == {"Version": "2012-10-17"}


@pytest.mark.parametrize(
    "text, named",
    [
        ("q:\n  Policy: {Statement: !!binary aGk=}\n", "line 2: YAML !!binary value (at q.Policy.Statement)"),
        ("q:\n  Policy: !!set {a, b}\n", "line 2: YAML !!set value (at q.Policy)"),
        ("q:\n  RedrivePolicy: {deadLetterTargetArn: !!binary aGk=, maxReceiveCount: 1}\n", "line 2: YAML !!binary value"),
    ],
)
def test_a_yaml_value_json_has_no_kind_for_is_refused_naming_line_and_key(tmp_path, text, named):
    assert named in refused(tmp_path, text)


@pytest.mark.parametrize("attribute", ["Policy", "RedrivePolicy", "RedriveAllowPolicy"])
def test_json_nested_deep_inside_a_string_attribute_is_refused_as_create_queue_refuses_it(tmp_path, attribute):
    deep = "[" * 100_000
    for text, name in ((json.dumps({"q": {attribute: deep}}), "queues.json"), (f"q:\n  {attribute}: '{deep}'\n", "queues.yaml")):
        message = refused(tmp_path, text, name)
        assert f"queue 'q': attribute '{attribute}': Invalid value '[[[" in message
        assert message.endswith(f" for {attribute}: must be a JSON object.")  # as a malformed one is


@pytest.mark.parametrize(
    "text",
    [
        "q: {FifoQueue: false}\n",
        "queues:\n  - name: q\n    attributes: {FifoQueue: false}\n",
        "queues:\n  - QueueName: q\n    Attributes: {FifoQueue: 'false'}\n",
    ],
)
def test_fifo_queue_false_on_a_standard_queue_is_refused_as_create_queue_refuses_it(tmp_path, text):
    with pytest.raises(SQSError) as sqs:
        sqsqlite.connect(str(tmp_path / "other.db")).create_queue("q", attributes={"FifoQueue": "false"})
    assert sqs.value.message == "Unknown Attribute FifoQueue."
    assert "queue 'q': " in refused(tmp_path, text) and "FifoQueue" in refused(tmp_path, text)


def test_elasticmqs_fifo_false_still_declares_a_standard_queue(tmp_path):
    pytest.importorskip("pyhocon")
    db, outcome = apply_text(tmp_path, "queues {\n  orders { fifo = false }\n}\n", "elasticmq.conf")
    assert outcome["Created"] == ["orders"] and "FifoQueue" not in attributes(db, "orders")


@pytest.mark.parametrize(
    "text, named",
    [
        ("q: {VisibilityTimeout: 3, <<: {VisibilityTimeout: 5}}\n", "line 1: YAML merge key << (at q)"),
        ("queues:\n  - name: q\n    attributes:\n      <<: {DelaySeconds: 5}\n", "line 4: YAML merge key << (at queues[0].attributes)"),
        ("<<: {a: {VisibilityTimeout: 7}}\na: {VisibilityTimeout: 9}\n", "line 1: YAML merge key <<"),
    ],
)
def test_a_yaml_merge_key_is_refused_as_anchors_are_naming_line_and_key(tmp_path, text, named):
    assert named in refused(tmp_path, text)


@pytest.mark.parametrize("text, name", [("", "queues.yaml"), ("{}\n", "queues.yaml"), ("{}", "queues.json")])
def test_a_file_holding_nothing_or_an_empty_map_is_refused_alike(tmp_path, text, name):
    assert refused(tmp_path, text, name).endswith("the file holds nothing.")


@pytest.mark.parametrize(
    "text, name, key",
    [
        ('Attributes: {VisibilityTimeout: "30"}\n', "queues.yaml", "Attributes"),
        ('QueueName: orders\nAttributes: {VisibilityTimeout: "30"}\n', "queues.yaml", "QueueName"),
        ('{"QueueName": "orders", "tags": {"t": "x"}}', "queues.json", "QueueName"),
    ],
)
def test_a_create_queue_input_at_the_top_is_refused_saying_to_put_it_in_a_queues_list(tmp_path, text, name, key):
    message = refused(tmp_path, text, name)
    assert f"key {key}: CreateQueue's input goes in a queues: list" in message


@pytest.mark.parametrize(
    "text", ["yes: {}\n", "no: {}\n", "null: {}\n", "~: {}\n", "queues:\n  - name: off\n", "queues:\n  - QueueName: null\n"]
)
def test_a_queue_name_yaml_reads_as_a_flag_or_nothing_gets_a_hint_to_quote_it(tmp_path, text):
    assert "quote the name" in refused(tmp_path, text)


@pytest.mark.parametrize(
    "text, named",
    [
        (
            "queues:\n  - name: a.fifo\n    deadLetterQueue: {name: d, maxReceiveCount: 2}\n  - name: d\n",
            "line 3: queue 'a.fifo': dead-letter",
        ),
        ("a: {}\nb:\n  RedrivePolicy: {deadLetterTargetArn: nope, maxReceiveCount: 1}\n", "line 3: queue 'b': RedrivePolicy: dead-letter"),
        (
            f"a: {{}}\nb:\n  RedrivePolicy: {{deadLetterTargetArn: '{ARN.replace('us-east-1', 'eu-west-1')}a', maxReceiveCount: 1}}\n",
            "line 3: queue 'b': RedrivePolicy: dead-letter queue: deadLetterTargetArn",
        ),
        (
            "d:\n  RedriveAllowPolicy: {redrivePermission: denyAll}\nq:\n  VisibilityTimeout: 5\n"
            "  RedrivePolicy: {deadLetterTargetArn: d, maxReceiveCount: 1}\n",
            "line 5: queue 'q': RedrivePolicy: dead-letter queue 'd': its RedriveAllowPolicy does not allow",
        ),
        ("queues:\n  - name: a\n    attributes: {}\n    tags: [x]\n", "line 4: queue 'a': tags: "),
        (
            "queues:\n  - name: a\n\n    deadLetterQueue: {name: [d], maxReceiveCount: 2}\n",
            "line 4: queue 'a': deadLetterQueue: name: expected",
        ),
    ],
)
def test_a_refusal_made_while_applying_or_of_tags_names_the_line_of_its_key(tmp_path, text, named):
    assert named in refused(tmp_path, text)
