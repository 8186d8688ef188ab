"""``kafkatool dump``: what is on disk, batch by batch, record by record, entry by entry.

Options are parsed here; the work is ``kafkatool.dump.run.dump`` (a ``DumpRequest``), its events rendered by
``kafkatool.commands.render.dump`` (``text``, ``dump-log``, ``json``, or the rich ``table``).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import DUMP as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    FROM_TIME_HELP,
    TO_TIME_HELP,
    LiveOpt,
    MemoryOpt,
    PartitionOpt,
    QuietOpt,
    TopicOpt,
    TracebackOpt,
    memory_option,
    require,
    size_opt,
    time_opt,
)
from kafkatool.dump.events import DEFAULT_RESYNC_LIMIT
from kafkatool.dump.run import DumpRequest, dump

HELP = """Dump segments, indexes, snapshots and checkpoints; report corruption, torn tails and index mismatches.

Exit codes: 0 clean, 1 findings (errors or warnings), 2 usage or unreadable input (a file named on the command
line that is not one of Kafka's), 3 a live broker holds the log dir's .lock (--live reads it anyway, with a
warning), 130 interrupted. Nothing is ever written. The largest decompressed batch accepted follows --memory (a
larger one is a decompress-limit finding, never an out-of-memory).
"""


class DumpFormat(str, enum.Enum):
    text = "text"
    dump_log = "dump-log"
    json = "json"
    table = "table"


class Encoding(str, enum.Enum):
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


class StdinKind(str, enum.Enum):
    # what ``dump -`` reads: dump.events.FileKind values an operator types
    LOG = "log"
    INDEX = "index"
    TIMEINDEX = "timeindex"
    TXNINDEX = "txnindex"
    SNAPSHOT = "snapshot"
    CHECKPOINT = "checkpoint"  # a log dir's offset checkpoints
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class ControlType(str, enum.Enum):
    # dump_filter.CONTROL_TYPES: ControlRecordType names
    abort = "abort"
    commit = "commit"
    leader_change = "leader-change"
    snapshot_header = "snapshot-header"
    snapshot_footer = "snapshot-footer"
    kraft_version = "kraft-version"
    kraft_voters = "kraft-voters"


_FILTERS = "Decoders and filters"


def dump_cmd(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATH", help="Segment or index files, partition dirs, or broker log dirs (every file of every "
        "partition); - reads one file from stdin (its kind sniffed, or --kind); a quoted glob ('*.log') is expanded "
        "here.", show_default=False)],
    deep: Annotated[bool, typer.Option("--deep", "-d", help="Decode and print every record (Kafka's "
                                       "--deep-iteration).")] = False,
    print_data: Annotated[bool, typer.Option("--print-data", help="Print keys, values and header values "
                                             "(implies --deep; Kafka's --print-data-log).")] = False,
    encoding: Annotated[Encoding, typer.Option("--encoding", "-e", help="How keys and values are printed: utf8 "
                                               "(Kafka's StringDecoder; undecodable bytes become U+FFFD in JSON), "
                                               "hex or base64 (exact). With a decoder option: header values, and "
                                               "JSON's raw key/value.", case_sensitive=False)] = Encoding.utf8,
    fmt: Annotated[DumpFormat | None, typer.Option("--format", "-f", help="text (default when piped), dump-log "
                                                   "(kafka-dump-log.sh 3.9's exact lines), json (JSON lines, schema "
                                                   "1), table (default on a terminal).",
                                                   case_sensitive=False)] = None,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    kind: Annotated[StdinKind | None, typer.Option(
        "--kind", metavar="KIND", help="What the file read from stdin (PATH -) is: log, index, timeindex, "
        "txnindex, snapshot, checkpoint or leader-epoch-checkpoint; default: sniffed from its bytes.",
        case_sensitive=False, show_default=False)] = None,
    from_offset: Annotated[int | None, typer.Option("--from-offset", metavar="OFFSET", help="Only records at or "
                                                    "after this offset (starts from the .index when it can).")] = None,
    to_offset: Annotated[int | None, typer.Option("--to-offset", metavar="OFFSET", help="Only records up to this "
                                                  "offset, inclusive; the walk stops past it.")] = None,
    from_time: Annotated[int | None, time_opt("--from-time", help=FROM_TIME_HELP + " Shallow: batches whose max "
                                              "timestamp is.")] = None,
    to_time: Annotated[int | None, time_opt("--to-time", help=TO_TIME_HELP + " Shallow: batches whose first "
                                            "timestamp is.")] = None,
    max_bytes: Annotated[int | None, size_opt("--max-bytes", help="Only the first N bytes of each .log "
                                              "(e.g. 64MiB; Kafka's --max-bytes).")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Decode every record of every batch (CRCs of batches are "
                                         "always checked; legacy inner messages have their own CRC).")] = False,
    verify_index: Annotated[bool, typer.Option("--verify-index", help="Check .index and .timeindex entries "
                                               "against the .log as kafka-dump-log.sh does.")] = False,
    verify_index_only: Annotated[bool, typer.Option("--verify-index-only", help="Check index entries without "
                                                    "printing them (Kafka's --verify-index-only).")] = False,
    index_sanity_check: Annotated[bool, typer.Option("--index-sanity-check", help="Only run Kafka's index "
                                                     "sanityCheck() on .index/.timeindex files.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Every unparsed byte is an error (zero padding too), and "
                                         "a file stops at its first invalid batch instead of resuming after "
                                         "it.")] = False,
    skip_record_metadata: Annotated[bool, typer.Option("--skip-record-metadata", help="Record lines without "
                                                       "offset/timestamp/size metadata (dump-log).")] = False,
    summary_only: Annotated[bool, typer.Option("--summary-only", help="Walk and validate everything (records too "
                                               "with --deep), print only the closing summary.")] = False,
    dump_log_version: Annotated[str, typer.Option(
        "--dump-log-version", help="Which kafka-dump-log.sh -f dump-log matches: 3.9, or 4 (4.x decodes "
        "LeaderChange control records and has no stray '}' on legacy record lines).", metavar="3.9|4")] = "3.9",
    count: Annotated[bool, typer.Option("--count", help="Print only the number of (matching) records: per records "
                                       "file '<n> <path>', then '<n> total'.")] = False,
    decoder: Annotated[str | None, typer.Option(
        "--decoder", help="Decode whole records: offsets (__consumer_offsets, Kafka's --offsets-decoder), "
        "transactions (__transaction_state, --transaction-log-decoder), cluster-metadata (KRaft's "
        "__cluster_metadata, --cluster-metadata-decoder), remote-log-metadata (__remote_log_metadata), "
        "share-group-state (4.x __share_group_state) - these three are the default in their topic's partition "
        "dirs -, a bytes decoder for both sides, or a plugin. Implies --print-data.", rich_help_panel=_FILTERS,
        show_default=False)] = None,
    key_decoder: Annotated[str | None, typer.Option(
        "--key-decoder", help="Decode keys with utf8 (Kafka's StringDecoder), hex, base64, json or a plugin; "
        "implies --print-data.", rich_help_panel=_FILTERS, show_default=False)] = None,
    value_decoder: Annotated[str | None, typer.Option(
        "--value-decoder", help="Decode values likewise (the other side stays utf8, as in Kafka).",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    producer_id: Annotated[int | None, typer.Option(
        "--producer-id", help="Only batches of this producer id (-1: non-idempotent and v0/v1).",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    producer_epoch: Annotated[int | None, typer.Option(
        "--producer-epoch", help="Only batches of this producer epoch.", rich_help_panel=_FILTERS,
        show_default=False)] = None,
    transactional: Annotated[bool | None, typer.Option(
        "--transactional/--no-transactional", help="Only transactional batches / only the others.",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    control_type: Annotated[list[ControlType] | None, typer.Option(
        "--control-type", help="Only control records of this type: abort, commit, leader-change, snapshot-header, "
        "snapshot-footer, kraft-version, kraft-voters (repeatable: any of them).", metavar="TYPE",
        case_sensitive=False, rich_help_panel=_FILTERS, show_default=False)] = None,
    key: Annotated[str | None, typer.Option(
        "--key", help="Only records whose key is exactly these UTF-8 bytes.", rich_help_panel=_FILTERS,
        show_default=False)] = None,
    key_regex: Annotated[str | None, typer.Option(
        "--key-regex", help="Only records whose key, as the key decoder prints it, contains a match (Python re).",
        rich_help_panel=_FILTERS, show_default=False)] = None,
    resync_limit: Annotated[int, size_opt("--resync-limit", help="After corruption, how far to scan for the "
                                          "next valid batch (a distance: the scan holds one mapped-page "
                                          "window of --memory at a time).", default="64MiB")]
    = DEFAULT_RESYNC_LIMIT,
    live: LiveOpt = False,
    memory: MemoryOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    require(decoder is None or (key_decoder is None and value_decoder is None),
            "--decoder decodes whole records; it cannot be combined with --key-decoder/--value-decoder")
    require(dump_log_version in ("3.9", "4"), f"--dump-log-version {dump_log_version!r}: 3.9 or 4")
    form = fmt or (DumpFormat.table if sys.stdout.isatty() else DumpFormat.text)
    request = DumpRequest(
        paths, deep=deep, print_data=print_data, verify=verify, verify_index=verify_index,
        verify_index_only=verify_index_only, index_sanity_check=index_sanity_check, strict=strict,
        from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time, max_bytes=max_bytes,
        resync_limit=resync_limit, decoder=decoder, key_decoder=key_decoder, value_decoder=value_decoder,
        producer_id=producer_id, producer_epoch=producer_epoch, transactional=transactional,
        control_type=[c.value for c in control_type] if control_type else None, key=key, key_regex=key_regex,
        summary_only=summary_only, count=count, kafka_compat=form == DumpFormat.dump_log, live=live,
        topic=tuple(topic or ()), partition=tuple(partition or ()), kind=kind.value if kind else None,
        memory=memory_option(memory))
    from kafkatool.commands.render.dump import DumpRenderer

    renderer = DumpRenderer(sys.stdout, form.value, request, encoding=encoding.value,
                            skip_record_metadata=skip_record_metadata, quiet=quiet, dump_log_version=dump_log_version)
    with renderer:
        outcome = dump(request, renderer)
        renderer.finish(outcome)
    return outcome.exit_code


def register(app: typer.Typer) -> None:
    add_command(app, "dump", dump_cmd, help=HELP, epilog=EXAMPLES, aliases={"-p": "--print-data"})
