"""`python -m reference.schema`: check schema files, or drive the loader for the suite (the command line is `cli.schema`)."""

import sys

from . import cli

if __name__ == "__main__":
    sys.exit(cli.schema())
