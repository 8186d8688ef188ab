"""``kafkatool reindex-time``'s engine: rebuild, judge and replace ``.index``/``.timeindex`` files.
"""

from kafkatool.reindex.engine import verify_segment

__all__ = ["verify_segment"]
