"""The pytest plugin sqsqlite installs (sqsqlite/testing.py, docs/howto/testing.md): another project's
tests, run by pytest here, get its fixtures by name alone."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "testing.md"

pytestmark = pytest.mark.slow  # servers in threads, boto3 clients


def _example() -> str:
    [code] = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), flags=re.M | re.S)
    return code


def test_the_pages_example_passes_as_a_test_module_with_nothing_but_the_installed_plugin(pytester):
    pytester.makepyfile(test_orders=_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_each_test_gets_a_file_of_its_own_and_boto3_finds_the_endpoint_only_during_it(pytester, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL_SQS", raising=False)
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")  # unset for the test: it would send boto3 to AWS
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")  # the test's own settings are kept
    pytester.makepyfile(
        test_isolation="""
        import os

        import boto3


        def test_one(sqsqlite_endpoint, sqsqlite_server):
            assert os.environ["AWS_ENDPOINT_URL_SQS"] == sqsqlite_endpoint == sqsqlite_server.url
            assert os.environ["AWS_DEFAULT_REGION"] == "eu-west-1"
            assert "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS" not in os.environ
            sqs = boto3.client("sqs")
            sqs.create_queue(QueueName="left-behind")
            assert sqsqlite_server.db.queue("left-behind").name == "left-behind"


        def test_two(sqsqlite_endpoint):
            assert boto3.client("sqs").list_queues().get("QueueUrls", []) == []


        def test_after():
            assert "AWS_ENDPOINT_URL_SQS" not in os.environ
            assert os.environ["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] == "true"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_an_asyncio_services_aiobotocore_client_finds_the_endpoint_as_boto3_does(pytester):
    pytest.importorskip("aiobotocore")
    pytester.makepyfile(
        test_async_service="""
        import asyncio

        import aiobotocore.session


        def test_the_service_sends_and_receives_through_the_endpoint(sqsqlite_endpoint, sqsqlite_server):
            async def service():
                async with aiobotocore.session.get_session().create_client("sqs") as sqs:
                    url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
                    await sqs.send_message(QueueUrl=url, MessageBody="hi")
                    return (await sqs.receive_message(QueueUrl=url))["Messages"][0]["Body"]

            assert asyncio.run(service()) == "hi"
            assert sqsqlite_server.db.queue("orders").name == "orders"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_manual_clock_drives_every_fixture_of_a_test_that_asks_for_it(pytester):
    pytester.makepyfile(
        test_clock="""
        def test_delay_ends_when_the_clock_is_moved(sqsqlite_db, sqsqlite_clock):
            q = sqsqlite_db.create_queue("later", delay_seconds=60)
            q.send_message("soon")
            assert q.receive_message() == []
            sqsqlite_clock.advance(60)
            assert [m.body for m in q.receive_message()] == ["soon"]


        def test_without_the_clock_fixture_the_system_clock_runs(sqsqlite_db):
            import time

            assert abs(sqsqlite_db.now() - time.time() * 1000) < 60_000
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_boto3s_default_session_of_the_test_is_its_own_and_the_one_before_comes_back_after(pytester, monkeypatch):
    # A developer's keys in a profile, none in the environment: the fixture's placeholder keys
    # sign inside the test only, and boto3's process-wide session does not keep them.
    creds = pytester.path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIAPROFILEKEY\naws_secret_access_key = s\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    pytester.makepyfile(
        test_session="""
        import boto3


        def key():
            return boto3.client("sqs", region_name="us-east-1")._request_signer._credentials.access_key


        def test_before():
            assert key() == "AKIAPROFILEKEY"


        def test_during(sqsqlite_endpoint):
            assert key() == "testing"
            boto3.client("sqs").list_queues()


        def test_after():
            assert key() == "AKIAPROFILEKEY"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
