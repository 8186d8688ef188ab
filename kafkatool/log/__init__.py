"""Layer 2: a partition dir's files and the broker's rules over them: layout and names, the log-dir
``.lock``, ``.index``/``.timeindex``, ``.txnindex``, producer snapshots, checkpoints,
``LogSegment.recover`` (``recovery``) and ``LogLoader.load`` (``loader``).
"""
