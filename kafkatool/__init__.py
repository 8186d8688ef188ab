"""kafkatool: the offline operator toolkit for Apache Kafka log directories.

The library (everything outside ``kafkatool.commands``) reads and writes every file a Kafka broker keeps
in a partition directory exactly as Kafka 3.9 does; ``kafkatool.commands`` is the thin Typer CLI on top.
"""

# The one place the version is written (pyproject.toml reads it: [tool.setuptools.dynamic]); importlib.metadata
# would scan every installed distribution at every start to find it.
__version__ = "0.1.0"

JSON_SCHEMA_VERSION = 1
