"""The shared SQS scenario suite (tests/contract/scenarios.py), run through every entry point: the
in-process client, ``sqsqlite serve`` with a real boto3 client (JSON 1.0) and a real botocore
client on SQS's older query protocol, and the ``sqsqlite`` commands (tests/contract/cli_client.py); all on
a ManualClock."""

import pytest

import sqsqlite
from sqsqlite.server import BackgroundServer
from tests.contract import scenarios
from tests.contract.cli_client import CliClient
from tests.server.server_helpers import boto3_client, query_protocol_client


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


@pytest.fixture
def cli_world(tmp_path):
    clock = sqsqlite.ManualClock()
    yield scenarios.World(CliClient(str(tmp_path / "cli.db"), clock=clock), clock)


# Scenarios the CLI cannot express, each with the reason; the rest run through it unchanged.
CLI_CANNOT: dict = {}


def _cli_params():
    for s in scenarios.ALL:
        marks = [pytest.mark.skip(reason=CLI_CANNOT[s])] if s in CLI_CANNOT else []
        yield pytest.param(s, id=s.__name__.removeprefix("scenario_"), marks=marks)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_in_process(scenario, library_world):
    scenario(library_world)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_over_http_with_boto3(scenario, http_world):
    scenario(http_world)


@pytest.mark.parametrize("scenario", scenarios.ALL, ids=[s.__name__.removeprefix("scenario_") for s in scenarios.ALL])
def test_scenario_over_http_with_the_query_protocol(scenario, query_world):
    scenario(query_world)


@pytest.mark.parametrize("scenario", list(_cli_params()))
def test_scenario_through_the_cli(scenario, cli_world):
    scenario(cli_world)
