"""`python -m reference.client`: one call from the shell (the command line is `calls.main`)."""

import sys

from . import calls

if __name__ == "__main__":
    sys.exit(calls.main())
