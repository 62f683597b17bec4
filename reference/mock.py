"""`python -m reference.mock`: serve a mock of a live server's schema (the command line is `cli.mock`)."""

import sys

from . import cli

if __name__ == "__main__":
    sys.exit(cli.mock())
