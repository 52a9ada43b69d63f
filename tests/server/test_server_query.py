"""The query protocol (form-encoded requests, XML answers) with raw HTTP requests, as older SDKs
send them: POST or GET, to / or to the queue's own URL."""

import base64
import hashlib
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from sqsqlite.server import BackgroundServer

NS = {"sqs": "http://queue.amazonaws.com/doc/2012-11-05/"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with BackgroundServer(str(tmp_path_factory.mktemp("query") / "q.db")) as s:
        yield s


def call(url, params, method="POST", path=""):
    data = urllib.parse.urlencode(params).encode()
    if method == "GET":
        req = urllib.request.Request(f"{url}{path}?{data.decode()}", method="GET")
    else:
        req = urllib.request.Request(
            f"{url}{path}", data=data, method="POST", headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
        )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), ET.fromstring(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), ET.fromstring(err.read())


def ok(url, params, **kw):
    status, _, root = call(url, params, **kw)
    assert status == 200, ET.tostring(root)
    assert root.tag == f"{{{NS['sqs']}}}{params['Action']}Response"
    assert root.find("sqs:ResponseMetadata/sqs:RequestId", NS).text
    return root


def text(root, path):
    node = root.find(path, NS)
    return None if node is None else node.text


def create(server, name, **attributes):
    params = {"Action": "CreateQueue", "QueueName": name, "Version": "2012-11-05"}
    for i, (k, v) in enumerate(attributes.items(), 1):
        params[f"Attribute.{i}.Name"], params[f"Attribute.{i}.Value"] = k, str(v)
    return text(ok(server.url, params), "sqs:CreateQueueResult/sqs:QueueUrl")


def test_create_queue_takes_numbered_attributes_and_answers_in_the_sqs_namespace(server):
    url = create(server, "q-create", VisibilityTimeout=60, DelaySeconds=3)
    assert url == f"{server.url}/000000000000/q-create"
    root = ok(
        server.url,
        {"Action": "GetQueueAttributes", "QueueUrl": url, "AttributeName.1": "VisibilityTimeout", "AttributeName.2": "DelaySeconds"},
    )
    attrs = {
        a.find("sqs:Name", NS).text: a.find("sqs:Value", NS).text for a in root.findall("sqs:GetQueueAttributesResult/sqs:Attribute", NS)
    }
    assert attrs == {"VisibilityTimeout": "60", "DelaySeconds": "3"}


def test_send_receive_delete_round_trip_with_message_attributes(server):
    url = create(server, "q-msg")
    blob = b"\x00\x01binary\xff"
    root = ok(
        server.url,
        {
            "Action": "SendMessage",
            "QueueUrl": url,
            "MessageBody": "line1\r\nline2 <&> ünï",
            "MessageAttribute.1.Name": "s",
            "MessageAttribute.1.Value.DataType": "String",
            "MessageAttribute.1.Value.StringValue": "text",
            "MessageAttribute.2.Name": "b",
            "MessageAttribute.2.Value.DataType": "Binary",
            "MessageAttribute.2.Value.BinaryValue": base64.b64encode(blob).decode(),
        },
    )
    sent_id = text(root, "sqs:SendMessageResult/sqs:MessageId")
    assert text(root, "sqs:SendMessageResult/sqs:MD5OfMessageBody") == hashlib.md5("line1\r\nline2 <&> ünï".encode()).hexdigest()
    assert text(root, "sqs:SendMessageResult/sqs:MD5OfMessageAttributes")

    root = ok(
        server.url,
        {
            "Action": "ReceiveMessage",
            "QueueUrl": url,
            "AttributeName.1": "All",
            "MessageAttributeName.1": "All",
            "MaxNumberOfMessages": "10",
        },
    )
    [msg] = root.findall("sqs:ReceiveMessageResult/sqs:Message", NS)
    assert text(msg, "sqs:MessageId") == sent_id
    assert text(msg, "sqs:Body") == "line1\r\nline2 <&> ünï"  # the carriage return survives XML
    system = {a.find("sqs:Name", NS).text: a.find("sqs:Value", NS).text for a in msg.findall("sqs:Attribute", NS)}
    assert system["ApproximateReceiveCount"] == "1" and "SentTimestamp" in system
    attrs = {a.find("sqs:Name", NS).text: a.find("sqs:Value", NS) for a in msg.findall("sqs:MessageAttribute", NS)}
    assert text(attrs["s"], "sqs:StringValue") == "text" and text(attrs["s"], "sqs:DataType") == "String"
    assert base64.b64decode(text(attrs["b"], "sqs:BinaryValue")) == blob

    ok(server.url, {"Action": "DeleteMessage", "QueueUrl": url, "ReceiptHandle": text(msg, "sqs:ReceiptHandle")})
    empty = ok(server.url, {"Action": "ReceiveMessage", "QueueUrl": url})
    assert empty.find("sqs:ReceiveMessageResult", NS) is not None
    assert empty.findall("sqs:ReceiveMessageResult/sqs:Message", NS) == []


def test_a_list_numbered_under_its_member_name_is_a_list_too(server):
    # botocore's current model lost the query API's singular names (MessageSystemAttributeName.N),
    # so a query client built from it numbers the member itself.
    url = create(server, "q-plural")
    ok(server.url, {"Action": "SendMessage", "QueueUrl": url, "MessageBody": "x", "MessageGroupId": "tenant-1"})
    root = ok(
        server.url,
        {
            "Action": "ReceiveMessage",
            "QueueUrl": url,
            "MessageSystemAttributeNames.1": "MessageGroupId",
            "MessageSystemAttributeNames.2": "SenderId",
        },
    )
    [msg] = root.findall("sqs:ReceiveMessageResult/sqs:Message", NS)
    assert {a.find("sqs:Name", NS).text for a in msg.findall("sqs:Attribute", NS)} == {"MessageGroupId", "SenderId"}
    root = ok(server.url, {"Action": "GetQueueAttributes", "QueueUrl": url, "AttributeNames.1": "DelaySeconds"})
    assert [a.find("sqs:Name", NS).text for a in root.findall("sqs:GetQueueAttributesResult/sqs:Attribute", NS)] == ["DelaySeconds"]


def _as_current_botocore_sends(operation, params):
    """The form fields a query client built from botocore's current model sends: member names,
    numbered, maps as N.key / N.value (the query API's own names are gone from that model)."""
    import copy

    import botocore.model
    import botocore.serialize
    import botocore.session

    model = copy.deepcopy(botocore.session.get_session().get_component("data_loader").load_service_model("sqs", "service-2"))
    model["metadata"]["protocol"], model["metadata"]["protocols"] = "query", ["query"]
    service = botocore.model.ServiceModel(model, "sqs")
    return botocore.serialize.create_serializer("query").serialize_to_request(params, service.operation_model(operation))["body"]


def test_maps_numbered_under_their_member_names_with_lower_case_key_and_value_are_maps_too(server):
    fields = _as_current_botocore_sends("CreateQueue", {"QueueName": "q-maps", "Attributes": {"DelaySeconds": "2"}, "tags": {"team": "a"}})
    assert "Attributes.1.key" in fields and "tags.1.key" in fields
    url = text(ok(server.url, fields), "sqs:CreateQueueResult/sqs:QueueUrl")
    ok(server.url, _as_current_botocore_sends("SetQueueAttributes", {"QueueUrl": url, "Attributes": {"DelaySeconds": "0"}}))
    ok(server.url, _as_current_botocore_sends("TagQueue", {"QueueUrl": url, "Tags": {"env": "test"}}))
    attribute = {"DataType": "String", "StringValue": "x"}
    ok(
        server.url,
        _as_current_botocore_sends("SendMessage", {"QueueUrl": url, "MessageBody": "one", "MessageAttributes": {"a": attribute}}),
    )
    ok(
        server.url,
        _as_current_botocore_sends(
            "SendMessageBatch", {"QueueUrl": url, "Entries": [{"Id": "1", "MessageBody": "two", "MessageAttributes": {"a": attribute}}]}
        ),
    )
    root = ok(server.url, {"Action": "GetQueueAttributes", "QueueUrl": url, "AttributeName.1": "DelaySeconds"})
    assert text(root, "sqs:GetQueueAttributesResult/sqs:Attribute/sqs:Value") == "0"
    root = ok(server.url, {"Action": "ListQueueTags", "QueueUrl": url})
    assert {t.find("sqs:Key", NS).text for t in root.findall("sqs:ListQueueTagsResult/sqs:Tag", NS)} == {"team", "env"}
    root = ok(server.url, {"Action": "ReceiveMessage", "QueueUrl": url, "MessageAttributeName.1": "All", "MaxNumberOfMessages": "10"})
    messages = root.findall("sqs:ReceiveMessageResult/sqs:Message", NS)
    assert sorted(text(m, "sqs:Body") for m in messages) == ["one", "two"]
    assert all(text(m, "sqs:MessageAttribute/sqs:Value/sqs:StringValue") == "x" for m in messages)


def test_a_get_request_to_the_queue_url_path_needs_no_queue_url(server):
    create(server, "q-path")
    ok(server.url, {"Action": "SendMessage", "MessageBody": "by path"}, method="GET", path="/000000000000/q-path")
    root = ok(server.url, {"Action": "ReceiveMessage"}, method="POST", path="/000000000000/q-path")
    assert text(root, "sqs:ReceiveMessageResult/sqs:Message/sqs:Body") == "by path"


def test_a_queue_url_path_or_member_names_the_queues_account_and_region_as_localstack_reads_them(server):
    # One server holds many accounts and regions: a URL's own account id (and region, where it
    # gives one) name whose queue it is; the default account's queue is not another account's.
    create(server, "q-acct")
    status, _, root = call(server.url, {"Action": "SendMessage", "MessageBody": "x"}, path="/123456789012/q-acct")
    assert status == 400 and text(root, "sqs:Error/sqs:Code") == "AWS.SimpleQueueService.NonExistentQueue"
    ok(server.url, {"Action": "SendMessage", "MessageBody": "by path"}, method="POST", path="/queue/us-east-1/000000000000/q-acct")
    ok(
        server.url,
        {"Action": "SendMessage", "QueueUrl": "https://sqs.us-east-1.amazonaws.com/000000000000/q-acct", "MessageBody": "by url"},
    )
    status, _, _ = call(
        server.url, {"Action": "SendMessage", "QueueUrl": "https://sqs.eu-west-1.amazonaws.com/000000000000/q-acct", "MessageBody": "x"}
    )
    assert status == 400
    root = ok(server.url, {"Action": "ReceiveMessage", "MaxNumberOfMessages": "10"}, method="POST", path="/000000000000/q-acct")
    assert sorted(text(m, "sqs:Body") for m in root.findall("sqs:ReceiveMessageResult/sqs:Message", NS)) == ["by path", "by url"]


def test_batch_entries_are_numbered_and_results_listed_per_entry(server):
    url = create(server, "q-batch")
    root = ok(
        server.url,
        {
            "Action": "SendMessageBatch",
            "QueueUrl": url,
            "SendMessageBatchRequestEntry.1.Id": "a",
            "SendMessageBatchRequestEntry.1.MessageBody": "one",
            "SendMessageBatchRequestEntry.2.Id": "b",
            "SendMessageBatchRequestEntry.2.MessageBody": "two",
            "SendMessageBatchRequestEntry.2.DelaySeconds": "0",
            "SendMessageBatchRequestEntry.2.MessageAttribute.1.Name": "k",
            "SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType": "Number",
            "SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue": "7",
            "SendMessageBatchRequestEntry.3.Id": "c",
            "SendMessageBatchRequestEntry.3.MessageBody": "bad \x01",
        },
    )
    ok_ids = [text(e, "sqs:Id") for e in root.findall("sqs:SendMessageBatchResult/sqs:SendMessageBatchResultEntry", NS)]
    assert ok_ids == ["a", "b"]
    [failed] = root.findall("sqs:SendMessageBatchResult/sqs:BatchResultErrorEntry", NS)
    assert (text(failed, "sqs:Id"), text(failed, "sqs:Code"), text(failed, "sqs:SenderFault")) == ("c", "InvalidMessageContents", "true")

    root = ok(server.url, {"Action": "ReceiveMessage", "QueueUrl": url, "MaxNumberOfMessages": "10"})
    handles = [text(m, "sqs:ReceiptHandle") for m in root.findall("sqs:ReceiveMessageResult/sqs:Message", NS)]
    root = ok(
        server.url,
        {
            "Action": "ChangeMessageVisibilityBatch",
            "QueueUrl": url,
            "ChangeMessageVisibilityBatchRequestEntry.1.Id": "x",
            "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle": handles[0],
            "ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout": "100",
        },
    )
    assert [
        text(e, "sqs:Id") for e in root.findall("sqs:ChangeMessageVisibilityBatchResult/sqs:ChangeMessageVisibilityBatchResultEntry", NS)
    ] == ["x"]
    params = {"Action": "DeleteMessageBatch", "QueueUrl": url}
    for i, h in enumerate(handles, 1):
        params[f"DeleteMessageBatchRequestEntry.{i}.Id"] = f"d{i}"
        params[f"DeleteMessageBatchRequestEntry.{i}.ReceiptHandle"] = h
    root = ok(server.url, params)
    assert len(root.findall("sqs:DeleteMessageBatchResult/sqs:DeleteMessageBatchResultEntry", NS)) == 2


def test_list_queues_tags_and_dead_letter_sources_use_sqs_element_names(server):
    dlq = create(server, "q-list-dlq")
    arn = "arn:aws:sqs:us-east-1:000000000000:q-list-dlq"
    src = create(server, "q-list-src", RedrivePolicy=f'{{"deadLetterTargetArn":"{arn}","maxReceiveCount":3}}')
    root = ok(server.url, {"Action": "ListQueues", "QueueNamePrefix": "q-list-"})
    assert sorted(e.text for e in root.findall("sqs:ListQueuesResult/sqs:QueueUrl", NS)) == sorted([dlq, src])
    root = ok(server.url, {"Action": "ListDeadLetterSourceQueues", "QueueUrl": dlq})
    assert [e.text for e in root.findall("sqs:ListDeadLetterSourceQueuesResult/sqs:QueueUrl", NS)] == [src]
    ok(
        server.url,
        {"Action": "TagQueue", "QueueUrl": src, "Tag.1.Key": "team", "Tag.1.Value": "a", "Tag.2.Key": "env", "Tag.2.Value": "dev"},
    )
    ok(server.url, {"Action": "UntagQueue", "QueueUrl": src, "TagKey.1": "env"})
    root = ok(server.url, {"Action": "ListQueueTags", "QueueUrl": src})
    tags = {t.find("sqs:Key", NS).text: t.find("sqs:Value", NS).text for t in root.findall("sqs:ListQueueTagsResult/sqs:Tag", NS)}
    assert tags == {"team": "a"}
    root = ok(server.url, {"Action": "GetQueueUrl", "QueueName": "q-list-src"})
    assert text(root, "sqs:GetQueueUrlResult/sqs:QueueUrl") == src


def test_errors_come_back_as_sqs_error_responses_with_the_query_code(server):
    status, headers, root = call(server.url, {"Action": "GetQueueUrl", "QueueName": "missing"})
    assert status == 400 and root.tag == f"{{{NS['sqs']}}}ErrorResponse"
    assert text(root, "sqs:Error/sqs:Type") == "Sender"
    assert text(root, "sqs:Error/sqs:Code") == "AWS.SimpleQueueService.NonExistentQueue"
    assert text(root, "sqs:Error/sqs:Message") == "The specified queue does not exist for this wsdl version."
    assert root.find("sqs:Error/sqs:Detail", NS) is not None and text(root, "sqs:RequestId")
    assert headers["x-amzn-query-error"] == "AWS.SimpleQueueService.NonExistentQueue;Sender"

    url = create(server, "q-errors")
    ok(server.url, {"Action": "PurgeQueue", "QueueUrl": url})
    status, _, root = call(server.url, {"Action": "PurgeQueue", "QueueUrl": url})
    assert (status, text(root, "sqs:Error/sqs:Code")) == (403, "AWS.SimpleQueueService.PurgeQueueInProgress")
    status, _, root = call(server.url, {"Action": "DeleteMessage", "QueueUrl": url, "ReceiptHandle": "nope"})
    assert (status, text(root, "sqs:Error/sqs:Code")) == (404, "ReceiptHandleIsInvalid")
    status, _, root = call(
        server.url, {"Action": "SetQueueAttributes", "QueueUrl": url, "Attribute.1.Name": "DelaySeconds", "Attribute.1.Value": "901"}
    )
    assert (status, text(root, "sqs:Error/sqs:Code")) == (400, "InvalidAttributeValue")
    status, _, root = call(server.url, {"Action": "ChangeMessageVisibility", "QueueUrl": url, "ReceiptHandle": "x"})
    assert text(root, "sqs:Error/sqs:Code") == "MissingParameter"


def test_a_queues_url_asked_no_action_or_an_action_that_names_no_queue_is_refused_as_amazon_sqs_refuses_it(server):
    path = urllib.parse.urlparse(create(server, "q-at-its-url")).path
    status, _, root = call(server.url, {}, method="GET", path=path)
    assert (status, root.tag) == (404, "UnknownOperationException")
    for action, params in (("CreateQueue", {"QueueName": "q-made-at-a-url"}), ("ListQueues", {}), ("FooBar", {})):
        status, _, root = call(server.url, {"Action": action, **params}, method="GET", path=path)
        assert (status, text(root, "sqs:Error/sqs:Code")) == (400, "InvalidAction")
        assert text(root, "sqs:Error/sqs:Message") == f"The action {action} is not valid for this endpoint."
    assert server.db.list_queues("q-made")[0] == []
    # GetQueueUrl is answered there, as Amazon SQS answers it.
    root = ok(server.url, {"Action": "GetQueueUrl", "QueueName": "q-at-its-url"}, method="GET", path=path)
    assert text(root, "sqs:GetQueueUrlResult/sqs:QueueUrl").endswith(path)


def test_requests_without_a_valid_action_or_address_are_refused(server):
    status, _, root = call(server.url, {"QueueName": "x"})
    assert (status, text(root, "sqs:Error/sqs:Code")) == (400, "MissingAction")
    for path in ("/000000000000", "/a/b/c"):  # no queue's URL: no Action is still MissingAction
        status, _, root = call(server.url, {"QueueName": "x"}, path=path)
        assert (status, text(root, "sqs:Error/sqs:Code")) == (400, "MissingAction")
    status, _, root = call(server.url, {"Action": "Explode"})
    assert (status, text(root, "sqs:Error/sqs:Code")) == (400, "InvalidAction")
    assert text(root, "sqs:Error/sqs:Message") == "The action Explode is not valid for this endpoint."
    status, _, root = call(server.url, {"Action": "ListQueues"}, path="/a/b/c")
    assert (status, text(root, "sqs:Error/sqs:Code")) == (404, "InvalidAddress")
    status, _, root = call(server.url, {"Action": "ReceiveMessage"}, path="/111111111111/q-never-made")
    assert text(root, "sqs:Error/sqs:Code") == "AWS.SimpleQueueService.NonExistentQueue"
    status, _, root = call(server.url, {"Action": "ListQueues", "Attribute.x.Name": "a"})
    assert (status, text(root, "sqs:Error/sqs:Code")) == (400, "InvalidParameterValue")
    status, _, root = call(server.url, {"Action": "AddPermission", "QueueUrl": "q-create", "Label": "l"})
    assert text(root, "sqs:Error/sqs:Code") == "MissingParameter"


def test_a_percent_escape_that_is_not_utf8_is_refused_and_nothing_is_stored(server):
    url = create(server, "q-utf8")
    for method in ("POST", "GET"):
        raw = f"Action=SendMessage&QueueUrl={urllib.parse.quote(url)}&MessageBody=%FF%FE"
        if method == "GET":
            req = urllib.request.Request(f"{server.url}?{raw}", method="GET")
        else:
            req = urllib.request.Request(
                server.url, data=raw.encode(), method="POST", headers={"Content-Type": "application/x-www-form-urlencoded"}
            )
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("a body of invalid UTF-8 was accepted")
        except urllib.error.HTTPError as err:
            root = ET.fromstring(err.read())
            assert (err.code, text(root, "sqs:Error/sqs:Code")) == (400, "InvalidParameterValue")
            assert "UTF-8" in text(root, "sqs:Error/sqs:Message")
    root = ok(server.url, {"Action": "GetQueueAttributes", "QueueUrl": url, "AttributeName.1": "ApproximateNumberOfMessages"})
    assert text(root, "sqs:GetQueueAttributesResult/sqs:Attribute/sqs:Value") == "0"
