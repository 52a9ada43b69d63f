"""One server, one file, many accounts and regions: each request reaches its account's queues in
its region (its signature's region; its account a 12-digit access key id, else the server's
default), in every queue URL style LocalStack gives."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest
from botocore.exceptions import ClientError

from sqsqlite.server.endpoint import BackgroundServer
from sqsqlite.server.served import Scope, ServedDatabase

from .server_helpers import boto3_client, query_protocol_client

OTHER = "111111111111"  # an account named by its access key id
SECRET = {"aws_secret_access_key": "test"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with BackgroundServer(str(tmp_path_factory.mktemp("scopes") / "s.db")) as s:
        yield s


@pytest.fixture(scope="module", params=["standard", "domain", "path"])
def styled(request, tmp_path_factory):
    with BackgroundServer(str(tmp_path_factory.mktemp(request.param) / "s.db"), url_style=request.param) as s:
        yield request.param, s


def client(url, region="us-east-1", account=None):
    return boto3_client(url, region_name=region, aws_access_key_id=account or "test", **SECRET)


def test_two_regions_and_two_accounts_through_one_server_keep_their_queues_apart(server):
    port = server.url.rsplit(":", 1)[1]
    east, central, other = client(server.url), client(server.url, "eu-central-1"), client(server.url, account=OTHER)
    urls = {name: c.create_queue(QueueName="orders")["QueueUrl"] for name, c in (("east", east), ("central", central), ("other", other))}
    # The plain style ("off", as today) gives no region in the URL: the two regions' queues share one.
    assert urls == {
        "east": f"http://127.0.0.1:{port}/000000000000/orders",
        "central": f"http://127.0.0.1:{port}/000000000000/orders",
        "other": f"http://127.0.0.1:{port}/{OTHER}/orders",
    }
    for name, c in (("east", east), ("central", central), ("other", other)):
        c.send_message(QueueUrl=urls[name], MessageBody=name)
    for name, c in (("east", east), ("central", central), ("other", other)):
        assert c.list_queues()["QueueUrls"] == [urls[name]]
        assert c.get_queue_url(QueueName="orders")["QueueUrl"] == urls[name]
        [msg] = c.receive_message(QueueUrl=urls[name], AttributeNames=["SenderId"])["Messages"]
        assert msg["Body"] == name
    arns = {
        name: c.get_queue_attributes(QueueUrl=urls[name], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for name, c in (("east", east), ("central", central), ("other", other))
    }
    assert arns == {
        "east": "arn:aws:sqs:us-east-1:000000000000:orders",
        "central": "arn:aws:sqs:eu-central-1:000000000000:orders",
        "other": f"arn:aws:sqs:us-east-1:{OTHER}:orders",
    }
    with pytest.raises(ClientError) as err:
        client(server.url, "ap-south-1").get_queue_url(QueueName="orders")
    assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_a_message_names_the_account_that_sent_it_as_its_sender(server):
    other = client(server.url, account=OTHER)
    url = other.create_queue(QueueName="sender")["QueueUrl"]
    other.send_message(QueueUrl=url, MessageBody="m")
    [msg] = other.receive_message(QueueUrl=url, MessageSystemAttributeNames=["SenderId"])["Messages"]
    assert msg["Attributes"]["SenderId"] == OTHER


def test_an_access_key_id_of_no_account_s_form_reaches_the_servers_default_account(tmp_path):
    with BackgroundServer(str(tmp_path / "d.db"), account_id="222222222222", region="eu-west-1") as s:
        url = boto3_client(s.url, region_name="eu-west-1", aws_access_key_id="AKIDEXAMPLE").create_queue(QueueName="q")["QueueUrl"]
        assert url.endswith("/222222222222/q")
        assert s.db.scoped(region="eu-west-1", account_id="222222222222").queue_names() == ["q"]


def _expected_url(style, host, region, name, account="000000000000"):
    if style == "standard":
        return f"http://sqs.{region}.{host}/{account}/{name}"
    if style == "domain":
        return f"http://{'' if region == 'us-east-1' else region + '.'}queue.{host}/{account}/{name}"
    return f"http://{host}/queue/{region}/{account}/{name}"


def test_each_url_style_gives_and_reads_urls_naming_the_queues_region(styled):
    # LocalStack's validated test_get_queue_url_multi_region and test_list_queues_multi_region_*.
    style, server = styled
    host = server.url.split("://", 1)[1]
    east, central = client(server.url), client(server.url, "eu-central-1")
    url1 = east.create_queue(QueueName="styled")["QueueUrl"]
    url2 = central.create_queue(QueueName="styled")["QueueUrl"]
    assert url1 == _expected_url(style, host, "us-east-1", "styled")
    assert url2 == _expected_url(style, host, "eu-central-1", "styled")
    assert east.get_queue_url(QueueName="styled")["QueueUrl"] == url1
    assert central.get_queue_url(QueueName="styled")["QueueUrl"] == url2
    assert url1 in east.list_queues()["QueueUrls"] and url2 not in east.list_queues()["QueueUrls"]
    assert url2 in central.list_queues()["QueueUrls"] and url1 not in central.list_queues()["QueueUrls"]
    # The URL names its queue's region, whichever region the request was signed for (as LocalStack reads it).
    east.send_message(QueueUrl=url2, MessageBody="to central by its URL")
    [msg] = central.receive_message(QueueUrl=url2)["Messages"]
    assert msg["Body"] == "to central by its URL"
    # A request to a host of the style's own form (a name under .localhost, which names this
    # machine) is that host's region's, and answered in the same form.
    if style != "path":
        local = "localhost:" + host.rsplit(":", 1)[1]
        prefixed = _expected_url(style, local, "eu-central-1", "x").split("/000000000000/")[0]
        request = urllib.request.Request(
            f"{server.url}/",
            data=json.dumps({"QueueName": "styled"}).encode(),
            headers={
                "Host": prefixed.split("://", 1)[1],
                "X-Amz-Target": "AmazonSQS.GetQueueUrl",
                "Content-Type": "application/x-amz-json-1.0",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            # The region from the host: the request is not signed.
            assert json.loads(answer.read())["QueueUrl"] == _expected_url(style, local, "eu-central-1", "styled")


def test_the_query_protocol_keeps_regions_apart_too(server):
    west = query_protocol_client(server.url, region_name="eu-west-2", aws_access_key_id="test", **SECRET)
    url = west.create_queue(QueueName="query-west")["QueueUrl"]
    assert west.list_queues(QueueNamePrefix="query-")["QueueUrls"] == [url]
    assert "QueueUrls" not in query_protocol_client(server.url).list_queues(QueueNamePrefix="query-")
    assert west.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"] == (
        "arn:aws:sqs:eu-west-2:000000000000:query-west"
    )


def test_a_path_style_address_names_the_queues_region_and_account(server):
    other = client(server.url, "eu-west-3", account=OTHER)
    other.create_queue(QueueName="pathed")
    form = "Action=SendMessage&MessageBody=by+path"
    request = urllib.request.Request(
        f"{server.url}/queue/eu-west-3/{OTHER}/pathed", data=form.encode(), headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
    url = other.get_queue_url(QueueName="pathed")["QueueUrl"]
    assert [m["Body"] for m in other.receive_message(QueueUrl=url)["Messages"]] == ["by path"]


def test_dead_letter_queues_and_move_tasks_stay_within_their_account_and_region(server):
    east, west = client(server.url), client(server.url, "eu-west-1")
    west_dlq = west.create_queue(QueueName="dl-target")["QueueUrl"]
    west_dlq_arn = west.get_queue_attributes(QueueUrl=west_dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": west_dlq_arn, "maxReceiveCount": 1}, separators=(",", ":"))
    # A dead-letter queue in another region: SQS finds no such target there.
    with pytest.raises(ClientError) as err:
        east.create_queue(QueueName="dl-source", Attributes={"RedrivePolicy": policy})
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert err.value.response["Error"]["Message"] == (
        f"Value {policy} for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist."
    )
    source = west.create_queue(QueueName="dl-source", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    assert west.list_dead_letter_source_queues(QueueUrl=west_dlq)["queueUrls"] == [source]
    west.send_message(QueueUrl=source, MessageBody="poison")
    west.receive_message(QueueUrl=source, VisibilityTimeout=0)
    assert "Messages" not in west.receive_message(QueueUrl=source)  # moved to the dead-letter queue
    [dead] = west.receive_message(QueueUrl=west_dlq, VisibilityTimeout=0, MessageSystemAttributeNames=["All"])["Messages"]
    assert dead["Attributes"]["DeadLetterQueueSourceArn"] == "arn:aws:sqs:eu-west-1:000000000000:dl-source"
    with pytest.raises(ClientError) as err:
        east.start_message_move_task(SourceArn=west_dlq_arn)  # another region's queue: none here
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    west.start_message_move_task(SourceArn=west_dlq_arn)
    for _ in range(200):
        tasks = west.list_message_move_tasks(SourceArn=west_dlq_arn)["Results"]
        if tasks and tasks[0]["Status"] == "COMPLETED":
            break
        server.db.clock.sleep(0.01)
    assert tasks[0]["Status"] == "COMPLETED"
    assert [m["Body"] for m in west.receive_message(QueueUrl=source)["Messages"]] == ["poison"]


def test_a_long_poll_waits_on_its_own_regions_queue_and_a_send_there_wakes_it(server):
    import threading
    import time

    east, west = client(server.url), client(server.url, "eu-west-1")
    east_url = east.create_queue(QueueName="polled")["QueueUrl"]
    west_url = west.create_queue(QueueName="polled")["QueueUrl"]
    got = []
    poll = threading.Thread(target=lambda: got.append(west.receive_message(QueueUrl=west_url, WaitTimeSeconds=20)))
    poll.start()
    key = server.db.scoped(region="eu-west-1").queue_key("polled")
    deadline = time.monotonic() + 10
    while server.db.wakeups.parked(key) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.db.wakeups.parked(key) == 1 and server.db.wakeups.parked("polled") == 0
    east.send_message(QueueUrl=east_url, MessageBody="east")  # another region's queue of that name
    west.send_message(QueueUrl=west_url, MessageBody="west")
    poll.join(10)
    assert [m["Body"] for m in got[0]["Messages"]] == ["west"]
    assert [m["Body"] for m in east.receive_message(QueueUrl=east_url)["Messages"]] == ["east"]


@pytest.mark.parametrize(
    "url, account, region",
    [
        ("http://localhost:9324/000000000000/q", "000000000000", None),
        ("https://sqs.eu-west-1.amazonaws.com/123456789012/q", "123456789012", "eu-west-1"),
        ("http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/q", "000000000000", "us-east-1"),
        ("http://eu-central-1.queue.localhost.localstack.cloud:4566/000000000000/q", "000000000000", "eu-central-1"),
        ("http://queue.localhost.localstack.cloud:4566/000000000000/q", "000000000000", "us-east-1"),
        ("http://localhost:4566/queue/ap-south-1/111111111111/q", "111111111111", "ap-south-1"),
        ("https://sqs.amazonaws.com/123/q", None, None),  # no region's name, no 12-digit account
        ("q", None, None),
    ],
)
def test_a_queue_url_names_the_account_and_region_localstack_reads_in_it(url, account, region):
    from sqsqlite.server import urls

    assert urls.scope_of_url(url) == (account, region)


def test_polls_woken_together_on_another_regions_fifo_queue_never_hold_one_group_in_two_receives(server):
    # Polls woken in one turn share one claim on a standard queue only; a FIFO queue's key in
    # another region names the region after the queue's name, and must still read as FIFO.
    c = client(server.url, "eu-west-1")
    url = c.create_queue(QueueName="split.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    key = server.db.scoped(region="eu-west-1").queue_key("split.fifo")
    got: list[list[str]] = []

    def poll() -> None:
        answer = client(server.url, "eu-west-1").receive_message(QueueUrl=url, WaitTimeSeconds=5, VisibilityTimeout=30)
        got.append([m["Body"] for m in answer.get("Messages", [])])

    polls = [threading.Thread(target=poll) for _ in range(2)]
    for t in polls:
        t.start()
    deadline = time.monotonic() + 10
    while server.db.wakeups.parked(key) != 2:
        assert time.monotonic() < deadline, "the polls never parked"
        time.sleep(0.01)
    entries = [{"Id": str(i), "MessageBody": f"g-{i}", "MessageGroupId": "g"} for i in (1, 2)]
    c.send_message_batch(QueueUrl=url, Entries=entries)
    for t in polls:
        t.join(15)
    assert sorted(got) == [[], ["g-1"]]  # one receive holds the group; the other ends empty


def test_a_queue_url_that_can_not_be_read_is_answered_as_no_such_queue_not_a_server_error(server):
    for url in ("http://[::1/000000000000/nowhere", "http://[zz]/000000000000/nowhere"):
        with pytest.raises(ClientError) as err:
            client(server.url).send_message(QueueUrl=url, MessageBody="m")
        assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_a_message_sent_to_another_accounts_queue_names_its_signer_as_its_sender(server):
    url = client(server.url).create_queue(QueueName="cross-sender")["QueueUrl"]  # 000000000000's
    client(server.url, account=OTHER).send_message(QueueUrl=url, MessageBody="from 111111111111")
    client(server.url).send_message(QueueUrl=url, MessageBody="from 000000000000")
    answer = client(server.url).receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["SenderId"])
    assert sorted((m["Body"], m["Attributes"]["SenderId"]) for m in answer["Messages"]) == [
        ("from 000000000000", "000000000000"),
        ("from 111111111111", OTHER),
    ]


def test_a_url_given_to_a_request_sent_to_another_regions_host_reaches_the_queue_it_names(server):
    # Sent to sqs.eu-west-1.localhost but signed for us-east-1: the queue is us-east-1's, and its
    # URL (the plain style) leaves the host's region prefix out, or it would name eu-west-1.
    port = server.url.rsplit(":", 1)[1]
    c = client(server.url)
    c.meta.events.register("before-send.sqs.*", lambda request, **_: request.headers.__setitem__("Host", f"sqs.eu-west-1.localhost:{port}"))
    url = c.create_queue(QueueName="prefixed-host")["QueueUrl"]
    assert url == f"http://localhost:{port}/000000000000/prefixed-host"
    assert c.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"].startswith("arn:aws:sqs:us-east-1:")


def test_a_requests_view_of_the_served_database_names_its_scope_and_leaves_the_database_its_own(tmp_path):
    db = ServedDatabase(str(tmp_path / "view.db"))
    db.endpoint = "http://127.0.0.1:9324"
    db.create_queue("mine")
    view = db.for_request(Scope("http://sqs.eu-west-1.localhost:9324", OTHER, "eu-west-1", sender_id=OTHER))
    theirs = view.create_queue("theirs")
    assert theirs.url == f"http://sqs.eu-west-1.localhost:9324/{OTHER}/theirs"
    assert view.list_queues()[0] == [theirs.url]
    # The database itself is untouched by the view: its endpoint, account, region and queues.
    assert db.list_queues()[0] == ["http://127.0.0.1:9324/000000000000/mine"]
    theirs.send_message("from the view")
    assert view.queue("theirs").receive_message()[0].sender_id == OTHER
    db.queue("mine").send_message("mine")
    assert db.queue("mine").receive_message()[0].sender_id == "000000000000"
    view.close()  # a view closes nothing: the database goes on
    assert db.queue("mine").send_message("still open").message_id
    db.close()


def test_the_queues_kept_by_url_stay_bounded_however_many_scopes_requests_name(tmp_path, monkeypatch):
    # Each Host (a port varied) is a scope of its own; their action layers share one bounded
    # cache of queues by URL, so a client naming many scopes and URLs grows no memory past it.
    from sqsqlite import defaults as D
    from sqsqlite.server.dispatch import Dispatcher

    monkeypatch.setattr(D, "QUEUE_URLS_KEPT", 50)
    db = ServedDatabase(str(tmp_path / "bounded.db"))
    dispatcher = Dispatcher(db, verifier=None, console=None, max_request_bytes=1 << 20, default_host="localhost:9324")
    layers = set()
    for port in range(20):
        actions = dispatcher.actions_for(Scope(f"http://localhost:{port}", None, None, None))
        layers.add(actions)
        for n in range(30):
            try:
                actions.GetQueueAttributes({"QueueUrl": f"http://localhost:{port}/000000000000/q{n}"})
            except Exception:  # no such queue: the URL's queue is kept all the same
                pass
    queues = {id(a._queues) for a in layers}  # noqa: SLF001 (the bound is what's tested)
    assert len(queues) == 1 and 0 < len(next(iter(layers))._queues) <= 50
    db.close()
