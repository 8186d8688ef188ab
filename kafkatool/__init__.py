"""kafkatool: the offline operator toolkit for Apache Kafka log directories.

The library (everything outside ``kafkatool.commands``) reads and writes every file a Kafka broker keeps
in a partition directory exactly as Kafka 3.9 does; ``kafkatool.commands`` is the thin Typer CLI on top.
"""

JSON_SCHEMA_VERSION = 1


def __getattr__(name: str) -> str:
    # ``__version__`` on first use: importlib.metadata scans every installed distribution (~70 ms of CPU at
    # every command start otherwise).
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("kafkatool")
        except PackageNotFoundError:  # running from a source tree without an install
            value = "0.1.0"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'kafkatool' has no attribute {name!r}")
