"""A language-neutral conformance suite for the Schema-Driven Message Service protocol.

JSON fixtures under `cases/`, the matching language in `match.py`, the runner in
`runner.py`; `python -m conformance --help` for the command line. This package
never imports `reference`, so that it cannot share a bug with it."""
