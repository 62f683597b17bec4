"""`python -m reference.client`: drive the client for the conformance suite (the command line is `cli.client`)."""

import sys

from . import cli

if __name__ == "__main__":
    sys.exit(cli.client())
