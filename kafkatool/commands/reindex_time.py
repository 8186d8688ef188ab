"""``kafkatool reindex-time``: check or rebuild .timeindex/.index files offline, by Kafka 3.9's recover rules.

Options are parsed here; the work is ``kafkatool.reindex.run.reindex_time`` (imported when the command runs,
with numpy), rendered by ``kafkatool.commands.render.reindex``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafkatool.commands.examples import REINDEX_TIME as EXAMPLES
from kafkatool.commands.help import add_command
from kafkatool.commands.options import (
    JobsOpt,
    LiveOpt,
    MemoryOpt,
    Output,
    OutputFormat,
    QuietOpt,
    TextJsonFormatOpt,
    TracebackOpt,
    memory_option,
    require,
    size_opt,
)
from kafkatool.constants import DEFAULT_INDEX_INTERVAL_BYTES

HELP = """Check or rebuild segment time indexes (and offset indexes) offline, by Kafka 3.9's LogSegment.recover rules.

PATH is a .log segment, a partition dir or a whole log dir. The default (--check) rebuilds every index in
memory from batch headers, compares it with the file on disk and classifies each difference: missing,
untrimmed (zero-padded), corrupt, stale (points past the end of a truncated log), past an invalid batch of
the log (unverifiable), or valid but different (a follower's or the cleaner's multi-batch appends, a <= 3.6
leader's record-level time offsets, other index points). Exit 1 if an index would make the broker
misbehave, 0 otherwise.

--output DIR writes the rebuilt files into DIR/<partition dir>/ (DIR/<log dir>/<partition dir>/ when two
log dirs hold the same partition name); --in-place replaces the files that differ, atomically, keeping
<name>.bak (.log files are never written). --recovery-report says what the broker's own startup recovery
would do, read-only.

Exit 3 (nothing written): a live broker holds the .lock of a log dir that --in-place or --output would write
into, or of one PATH is in (reading it: --live reads anyway, with a warning that active segments may be
mid-write). A stopped broker's log dir is locked while --in-place or --output writes into it.

Findings go to stderr, one line per file, as every command reports them; stdout gets the files written or
replaced (and with --verbose the files that are fine), or with --format json every segment and index as
JSON lines.
"""


def register(app: typer.Typer) -> None:
    add_command(app, "reindex-time", reindex_time, help=HELP, epilog=EXAMPLES)


def reindex_time(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH", help="A .log segment, a partition dir or a log dir.",
                                                show_default=False)],
    check: Annotated[bool, typer.Option("--check", help="Compare with the files on disk and classify (default).")]
    = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR", help="Write the rebuilt index "
                                                "files into DIR/<partition dir>/ (a mirror tree; DIR/<log "
                                                "dir>/<partition dir>/ when two log dirs hold the same partition "
                                                "name).")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", help="Replace index files that differ, atomically "
                                           "(temp file, fsync, rename, fsync dir).")] = False,
    no_backup: Annotated[bool, typer.Option("--no-backup", help="With --in-place: do not keep <name>.bak.")]
    = False,
    keep_valid: Annotated[bool, typer.Option("--keep-valid", help="With --in-place: leave files that differ from "
                                             "the rebuild but are valid lookups as they are.")] = False,
    recovery_report: Annotated[bool, typer.Option("--recovery-report", help="Report what the broker's startup "
                                                  "recovery would do to these partitions (read-only; CRCs and "
                                                  "transaction markers checked).")] = False,
    no_offset_index: Annotated[bool, typer.Option("--no-offset-index", help="Only the .timeindex: leave .index "
                                                  "files alone.")] = False,
    index_interval_bytes: Annotated[int, size_opt("--index-interval-bytes", help="The topic's "
                                                  "index.interval.bytes.")] = DEFAULT_INDEX_INTERVAL_BYTES,
    verify: Annotated[bool, typer.Option("--verify", help="Check every batch's CRC and every transaction marker, "
                                         "as the broker's recovery does (reads every byte).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list the files that are fine.")] = False,
    live: LiveOpt = False,
    jobs: JobsOpt = 1,
    memory: MemoryOpt = None,
    fmt: TextJsonFormatOpt = None,
    quiet: QuietOpt = False,
    traceback: TracebackOpt = False,
) -> int:
    out = Output(quiet=quiet)
    form = OutputFormat(fmt.value) if fmt is not None else OutputFormat.text
    require(sum([check, output is not None, in_place, recovery_report]) <= 1,
            "--check, --output, --in-place and --recovery-report are alternatives: give one")
    require(not (no_backup or keep_valid) or in_place, "--no-backup and --keep-valid go with --in-place")
    from kafkatool.reindex.run import ReindexRequest, RunMode, reindex_time

    mode: RunMode = "in-place" if in_place else "output" if output is not None else \
        "recovery-report" if recovery_report else "check"
    request = ReindexRequest(paths, mode, output, backup=not no_backup, keep_valid=keep_valid,
                             offset_index=not no_offset_index, index_interval_bytes=index_interval_bytes,
                             verify=verify, jobs=jobs, live=live, memory=memory_option(memory))
    from kafkatool.commands.render.reindex import ReindexRenderer

    renderer = ReindexRenderer(out, form, verbose, "recovery-report" if recovery_report else "reindex-time")
    with renderer:
        outcome = reindex_time(request, renderer)
    renderer.summary(outcome)
    return outcome.exit_code
