"""A language-neutral conformance suite for the Schema-Driven Message Service protocol.

JSON fixtures under `cases/` (servers) and `clients/` (clients), the matching
language in `match.py`, the runners in `runner.py` and `clients.py`;
`python -m conformance --help` for the command line. This package
never imports `reference`, so that it cannot share a bug with it."""
