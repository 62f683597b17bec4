"""`python -m reference.server`: serve the calculator or the testbed over HTTP (the command line is `cli.server`)."""

import sys

from . import cli

if __name__ == "__main__":
    sys.exit(cli.server())
