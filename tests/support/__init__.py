"""What the tests share beside their fixtures (conftest.py): servers and what talks to them, the suite's
command line run in process, services with planted bugs, answers with one thing wrong, and the
independent implementation, installed in a throwaway environment of its own."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent  # the repository
