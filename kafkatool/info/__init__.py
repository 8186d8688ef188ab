"""``kafkatool info``: a fast summary of log dirs from file headers (``run.info``)."""
