"""The testbed: the suite's schema, served through the handler contract the request steers."""

import json

import pytest

from conformance import tables
from reference.protocol import codec
from reference.services import calculator, testbed
from tests.support.servers import Connection

AUTH = {"@auth_": {"Token": {"token": "any"}}}


@pytest.mark.parametrize("request_, expected", [
    # no steering: the arguments come back as the Ok_ result, bytes marked on the way out
    ([{}, {"fn.echo": {"int!": 1, "bytes!": "AQI=", "pointArr!": [{"x": 1, "y": 2}]}}],
     [{"@base64_": {"Ok_": {"bytes!": True}}},
      {"Ok_": {"int!": 1, "bytes!": "AQI=", "pointArr!": [{"x": 1, "y": 2}]}}]),
    # @result: that result, validated like any other
    ([{"@result": {"ErrorEcho": {"reason": "asked"}}}, {"fn.echo": {}}], [{}, {"ErrorEcho": {"reason": "asked"}}]),
    ([{"@result": {"Ok_": {"int!": "one"}}}, {"fn.echo": {}}],
     [{}, {"ErrorInvalidResponseBody_": {"cases": [{"path": ["Ok_", "int!"], "reason": {
         "TypeUnexpected": {"actual": {"String": {}}, "expected": {"Integer": {}}}}}]}}]),
    # @responseHeaders: those headers, validated against headers.Every
    # fn.greet, whose arguments are no result of it, greets
    ([{"@responseHeaders": {"@int": 5}}, {"fn.greet": {"name": "a"}}], [{"@int": 5}, {"Ok_": {"greeting": "Hello, a!"}}]),
    ([{"@responseHeaders": {"@int": 5}, "@result": {"Ok_": {"greeting": "hi"}}}, {"fn.greet": {"name": "a"}}],
     [{"@int": 5}, {"Ok_": {"greeting": "hi"}}]),
    ([{"@responseHeaders": {"@int": "5"}}, {"fn.echo": {}}], [{}, {"ErrorInvalidResponseHeaders_": {"cases": [
        {"path": ["@int"], "reason": {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Integer": {}}}}}]}}]),
    # protected and open functions
    ([{}, {"fn.secret": {}}], [{}, {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}]),
    ([AUTH, {"fn.secret": {"hint!": "h"}}], [{}, {"Ok_": {"secret!": "h"}}]),  # (its arguments are no result of it)
    ([AUTH, {"fn.secret": {}}], [{}, {"Ok_": {}}]),
])
def test_the_request_steers_the_handler(testbed_url, request_, expected):
    assert Connection(testbed_url).call(request_) == expected


def test_raise_gets_error_unknown(testbed_url):
    headers, body = Connection(testbed_url).call([{"@id_": 1, "@raise": True}, {"fn.echo": {}}])
    assert headers == {"@id_": 1} and list(body) == ["ErrorUnknown_"]


def test_the_testbed_serves_the_schema_the_suite_owns():
    """The reference reads conformance/testbed.json, which is what the suite's tables make."""
    served = testbed.service().schema.api()
    assert all(entry in served for entry in tables.schema()) and len(served) == len(tables.schema()) + 2
    assert json.loads(tables.dumps(tables.schema())) == tables.schema()


def test_the_testbed_and_the_calculator_meet_both_signs_of_a_checksum():
    """A checksum is the CRC-32 as a signed 32-bit integer: the testbed's names make it negative and the
    calculator's positive, so a server that sends the CRC unsigned fails the suite's binary cases."""
    assert codec.encoding(testbed.service().schema).checksum < 0 < codec.encoding(calculator.service().schema).checksum
