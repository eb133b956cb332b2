#!/usr/bin/env python3
"""A real Groove Audio server on loopback, for tests, benchmarks and the demo: the entry point of the
package scripts/rig/ (its __init__.py says what it starts and how it is commanded; `rig.py -h`
prints the same)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rig.cli import main  # noqa: E402  (the package beside this file)

if __name__ == "__main__":
    sys.exit(main())
