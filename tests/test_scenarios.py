"""The shared SQS scenario suite (tests/scenarios.py), run through every entry point:
the in-process client and a real boto3 client on ``sqsqlite serve``, both on a ManualClock."""

import pytest

import sqsqlite
from tests import scenarios
from tests.server_helpers import boto3_client

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


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_in_process(scenario, library_world):
    scenario(library_world)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_over_http_with_boto3(scenario, http_world):
    scenario(http_world)
