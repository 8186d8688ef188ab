"""``kafkatool dump``'s engine: files in dump order, the batch walk with its findings, the other files of
a partition dir, and the renderers (Kafka's DumpLogSegments text, kafkatool's text and JSON lines).
"""
