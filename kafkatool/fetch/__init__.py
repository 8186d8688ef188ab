"""``kafkatool fetch-sim``'s engine: what a 3.9 broker sends a consumer of an older message format.
"""
