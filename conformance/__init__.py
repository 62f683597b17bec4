"""A language-neutral conformance suite for the Schema-Driven Message Service protocol.

The suite is data first: the cases of cases/ (servers), clients/ (clients)
and schemas/ (schema loaders), in the fixture format of fixture.schema.json,
which a runner in any language can read. This package is one such runner:
language/ reads the fixtures, targets/ reaches what is checked, runs/ runs
the suites, fuzz/ makes calls of its own, reports/ tells what they came to,
and commands/ is `python -m conformance` (`--help` for the commands). It
never imports `reference`, so that it cannot share a bug with it.
"""
