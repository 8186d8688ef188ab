"""``kafkatool downconvert``/``upconvert``'s engine: partitions and log dirs rewritten between message
formats, segment by segment, in bounded memory.
"""
