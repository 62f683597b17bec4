"""Runs of the suites: server_suite.py (the server cases over HTTP), client_suite.py (a client against a
scripted server), schema_suite.py (a schema loader handed documents) and manifest.py (every
implementation a manifest lists, each built, started, checked and stopped)."""
