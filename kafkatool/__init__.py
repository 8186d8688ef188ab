"""kafkatool: the offline operator toolkit for Apache Kafka log directories.

The library (everything outside ``kafkatool.commands``) reads and writes every file a Kafka broker keeps
in a partition directory exactly as Kafka 3.9 does; ``kafkatool.commands`` is the thin Typer CLI on top.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kafkatool")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.1.0"

JSON_SCHEMA_VERSION = 1
