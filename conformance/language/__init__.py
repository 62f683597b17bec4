"""The suite's own language, which a runner in any language reads: suite.py (the fixture files read into
cases, and selected), matchers.py (how an expected value is compared with an answer), decoding.py (an
answer read into that notation) and schema.py (a server's schema, as the suite reads it itself). The
fixtures themselves are the data beside this folder: cases/, clients/, schemas/."""
