"""The commands of `python -m conformance`, one module each: run.py (the server cases), driven.py (a client
or a schema loader through its driver), fuzz.py, matrix.py, and suite.py (list, check, coverage,
generate); what they share is options.py's, config.py's ([tool.conformance]), files.py's (files a user
hands the suite), cache.py's (what the last run failed) and lint.py's (the suite's checks on itself)."""
