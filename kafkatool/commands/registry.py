"""The commands of ``kafkatool``: name, module and one-line help, known without importing any of them.

``kafkatool --help`` lists them from here and ``kafkatool dump ...`` imports only ``kafkatool.commands.dump``:
importing every command module (and, through them, numpy, the codecs and rich's progress bars) costs more than
the whole start-up budget. Each module registers its command with the short help given here
(``tests/commands/test_help.py`` checks that the two agree).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    name: str  # as typed: reindex-time
    module: str  # kafkatool.commands.<module>
    short_help: str


# In the order ``kafkatool --help`` lists them.
COMMANDS: tuple[Entry, ...] = (
    Entry("info", "info", "A fast summary of log dirs from file headers: topics, offsets, formats."),
    Entry("dump", "dump", "Dump segments, indexes, snapshots and checkpoints; report corruption."),
    Entry("offsets-for-times", "offsets_for_times",
          "The offset ListOffsets returns for a time, earliest or latest, from the files."),
    Entry("metadata", "metadata", "Rebuild the KRaft metadata image offline: brokers, topics, configs, ACLs..."),
    Entry("reindex-time", "reindex_time", "Check or rebuild .timeindex and .index files offline, as recovery would."),
    Entry("downconvert", "downconvert", "Rewrite a segment, partition or log dir as message format v1 or v0."),
    Entry("upconvert", "upconvert", "Rewrite the v0/v1 data of a segment, partition or log dir as v2."),
    Entry("fetch-sim", "fetch_sim", "What a broker sends a consumer of an older message format (Fetch v0-3)."),
    Entry("canary", "canary", "Plan a message-format upgrade and rehearse it on a few partitions."),
    Entry("spark-scan", "spark_scan", "Scan log dirs with Spark: stats, record export, index check, key sharing."),
    Entry("sample", "sample", "Write a realistic Kafka log dir, deterministic for a seed."),
    Entry("completion", "completion", "Print the shell completion script for bash, zsh or fish."),
    Entry("man", "completion", "Print a man page, or write them all into a directory."),
)

BY_NAME: dict[str, Entry] = {e.name: e for e in COMMANDS}


def short_help(name: str) -> str:
    return BY_NAME[name].short_help
