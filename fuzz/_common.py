"""Shared set-up for the atheris fuzz targets: the repo on sys.path, instrumentation of kafkatool."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Decompression and allocation bound for every target: inputs are at most a few KiB, so any allocation
# beyond this would be sized by an untrusted field, which is the bug class we hunt.
LIMIT = 1 << 20
