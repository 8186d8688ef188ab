"""``kafkatool reindex-time``'s engine: rebuild, judge and replace ``.index``/``.timeindex`` files.
"""
