"""Layer 0: what every layer above uses and that knows nothing of Kafka's formats: sizes and times, the
memory budget, crash-safe writes, crash points for kill tests, JSON lines, a PNG chart writer.
"""
