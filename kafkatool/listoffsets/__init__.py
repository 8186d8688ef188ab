"""``kafkatool offsets-for-times``: ListOffsets as a Kafka 3.9 leader answers it, from the files."""
