"""``python -m xlat``: the command-line interface (same as the ``xlat`` command)."""

import sys

from xlat.cli import main

if __name__ == "__main__":
    sys.exit(main())
