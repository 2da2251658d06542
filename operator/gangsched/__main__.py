"""``python -m gangsched``: the ``gangsched`` command; with no arguments, ``run``."""

from __future__ import annotations

import sys

from gangsched.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["run"]))
