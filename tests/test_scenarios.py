"""The shared SQS scenario suite (tests/scenarios.py), run through every entry point: the
in-process client, and ``sqsqlite serve`` with a real boto3 client (JSON 1.0) and a real
botocore client on SQS's older query protocol; all on a ManualClock."""

import pytest

import sqsqlite
from tests import scenarios
from tests.server_helpers import boto3_client, query_protocol_client

from sqsqlite.server import BackgroundServer


@pytest.fixture
def library_world(tmp_path):
    clock = sqsqlite.ManualClock()
    client = sqsqlite.client(str(tmp_path / "lib.db"), clock=clock)
    yield scenarios.World(client, clock)
    client.close()


@pytest.fixture
def http_world(tmp_path):
    clock = sqsqlite.ManualClock()
    with BackgroundServer(str(tmp_path / "http.db"), clock=clock) as server:
        yield scenarios.World(boto3_client(server.url), clock)


@pytest.fixture
def query_world(tmp_path):
    clock = sqsqlite.ManualClock()
    with BackgroundServer(str(tmp_path / "query.db"), clock=clock) as server:
        yield scenarios.World(query_protocol_client(server.url), clock)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_in_process(scenario, library_world):
    scenario(library_world)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_over_http_with_boto3(scenario, http_world):
    scenario(http_world)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_over_http_with_the_query_protocol(scenario, query_world):
    scenario(query_world)
