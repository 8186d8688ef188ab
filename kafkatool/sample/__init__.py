"""``kafkatool sample``'s engine: a realistic, deterministic Kafka log dir, simulated append by append.
"""
