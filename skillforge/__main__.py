"""`python -m skillforge ARGS`: the `skillforge` command, for a venv whose bin/ is not on PATH."""

import sys

from skillforge.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
