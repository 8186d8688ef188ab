"""Human reports of ``kafkatool canary`` (rich tables on stdout; JSON lines are built by the library)."""

from __future__ import annotations

import io
import os
import sys
from typing import IO, Any

from rich import box
from rich.console import Console
from rich.table import Table

from kafkatool.canary.api import CanaryListener
from kafkatool.canary.apply import SwapResult
from kafkatool.canary.inventory import PartitionInventory, summarize
from kafkatool.canary.manifest import Manifest
from kafkatool.canary.plan import Plan, Step
from kafkatool.canary.rehearse.reads import ReadCheck
from kafkatool.canary.rehearse.result import ProduceCheck, RehearseResult
from kafkatool.canary.verify import VerifyResult
from kafkatool.commands import terminal
from kafkatool.commands.options import Output
from kafkatool.util.printable import shown
from kafkatool.util.units import format_size


def console(out: IO[str] | None = None) -> Console:
    f = out or sys.stdout
    tty = hasattr(f, "isatty") and f.isatty()
    # Piped: wide enough that no table squeezes a number; long text lines are soft-wrapped (not cut).
    width = None if tty else max(240, int(os.environ.get("COLUMNS", "0") or 0))
    return terminal.console(file=f, width=width, highlight=False, soft_wrap=True, no_color=not tty or None,
                   markup=False)  # paths and names print as they are, brackets included


def _table(*cols: str, title: str | None = None) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False, show_edge=False)
    for c in cols:
        t.add_column(c, justify="right" if c.isupper() and c in _NUMERIC else "left", no_wrap=c in _NOWRAP)
    return t


_NUMERIC = {"SIZE", "BATCHES", "RECORDS", "BYTES", "NO-TS", "ZSTD", "TXN", "IDEMP", "LARGEST", "SHARE", "SEGS",
            "IN", "OUT", "DELTA", "ITEMS", "CHANGES", "TO CONVERT", "CONVERTED", "PADDING", "LEGACY", "BUILT",
            "COPIED", "COMMITTED", "ORIGINAL", "CANARY", "LOG END", "FETCHES", "OFFSET", "BYTES/FETCH", "MS/FETCH",
            "MAX MS", "HEAP/FETCH", "MAX HEAP"}
_NOWRAP = {"PARTITION", "FORMATS", "CODECS", "CLIENT", "FETCH"}


def _n(x: int) -> str:
    return "-" if not x else str(x)


# ---------------------------------------------------------------------------------------------- plan


def render_plan(plan: Plan, c: Console) -> None:
    inv = plan.inventory
    s = summarize(inv.partitions)
    kind = {True: "KRaft", False: "ZooKeeper", None: "cluster mode unknown"}[inv.kraft]
    c.print(f"canary plan: {shown(inv.path)} ({kind}), target message format v{plan.options.target_format}")
    c.print(f"{s['partitions']} partitions of {s['topics']} topics: {format_size(s['bytes'])} in {s['batches']} "
            f"batches, {s['records']} records")
    t = _table("PARTITION", "SIZE", "BATCHES", "RECORDS", "FORMATS", "CODECS", "LEGACY", "NO-TS", "ZSTD", "TXN",
               "IDEMP", "MARKERS", "LARGEST", "COMPACTED")
    for p in inv.partitions:
        t.add_row(shown(p.name), format_size(p.bytes), str(p.batches), str(p.records),
                  "/".join(f"v{m}" for m in p.magics), ",".join(p.codecs),
                  format_size(p.legacy.bytes) if p.legacy.bytes else "-",
                  _n(p.records_without_timestamp), _n(p.zstd.batches), _n(p.transactional.batches),
                  _n(p.idempotent.batches), _markers(p), format_size(p.largest_batch), _compacted(p))
    c.print(t)
    c.print("(LEGACY: v0/v1 bytes; NO-TS: records without a timestamp; MARKERS: c COMMIT, a ABORT)")
    t = _table("FORMAT", "BATCHES", "RECORDS", "BYTES", "SHARE", title="By message format and codec")
    for k, d in s["formats"].items():
        t.add_row(k, str(d["batches"]), str(d["records"]), format_size(d["bytes"]),
                  f"{100.0 * d['bytes'] / s['bytes']:.1f}%" if s["bytes"] else "-")
    c.print(t)
    tts = ", ".join(f"{k} {v['batches']} batches/{v['records']} records" for k, v in s["timestamp_types"].items())
    c.print(f"timestamp types: {tts}")
    c.print(f"without timestamps: {s['records_without_timestamp']} records ({s['v0']['records']} in "
            f"{s['v0']['batches']} v0 batches, {format_size(s['v0']['bytes'])})")
    z = s["zstd"]
    zp = [p.name for p in inv.partitions if p.zstd.batches]
    c.print(f"zstd: {z['batches']} batches, {z['records']} records, {format_size(z['bytes'])}"
            + (f" in {', '.join(zp)} (unreadable below Fetch v10)" if zp else ""))
    c.print(f"transactional: {s['transactional']['batches']} batches/{s['transactional']['records']} records; "
            f"idempotent: {s['idempotent']['batches']} batches/{s['idempotent']['records']} records; control "
            f"batches: " + (", ".join(f"{k} {v}" for k, v in s["control_batches"].items()) or "none"))
    lb = s["largest_batch"]
    if lb:
        c.print(f"largest batch: {lb['bytes']} bytes ({shown(lb['partition'])} offset {lb['offset']}, v{lb['magic']}), "
                f"max.message.bytes {lb['max_message_bytes']}: {s['oversized_batches']} batch(es) over it; "
                f"{s['legacy_messages_over_limit_as_v2']} legacy message(s) over it once rewritten as v2")
    comp = [p for p in inv.partitions if p.compacted]
    c.print("compacted: " + ("; ".join(f"{shown(p.name)} ({', '.join(p.compaction_evidence)})" for p in comp)
                             or "none"))
    c.print("compacted with legacy data (survives into Kafka 4): "
            + (", ".join(s["compacted_with_legacy"]) or "none"))
    for sk in inv.skipped:
        c.print(f"skipped: {sk}")
    if plan.clients:
        t = _table("CLIENT", "FETCH", "READS", "ZSTD", "KAFKA 4", "TO CONVERT", "PER FETCH", "PADDING", "FAILING",
                   title="Consumers (one fetch per partition at its active segment, max.partition.fetch.bytes "
                   f"{format_size(plan.options.partition_max_bytes)})")
        for r in plan.clients:
            cap = r.capability
            tot = r.totals()
            per = (f"{format_size(tot['source_bytes_converted'])} -> {format_size(tot['converted_bytes'])}"
                   if r.fetches else "zero-copy")
            t.add_row(cap.spec.display, cap.fetch_label, f"v{cap.max_magic}", "yes" if cap.reads_zstd else "NO",
                      "breaks" if r.breaks_on_kafka4 else "ok", format_size(r.bytes_to_convert) if r.bytes_to_convert
                      else "-", per, format_size(tot["padding_bytes"]) if tot["padding_bytes"] else "-",
                      _n(tot["failing_partitions"]))
        c.print(t)
    c.print("Plan")
    for ph in plan.phases:
        status = {True: "do", False: "skip", None: "?"}[ph.applies]
        c.print(f"  {ph.number}. [{status}] {ph.title}", markup=False)
        c.print(f"     why: {ph.rationale}", markup=False)
        for cf in ph.configs:
            c.print(f"     config: {cf}", markup=False)
        for step in ph.steps:
            c.print(f"     run: {command_line(step)}", markup=False)
    if plan.kafka4:
        t = _table("PARTITION", "LEGACY", "RECORDS", "SEGS", "COMPACTED", "FATE",
                   title="What Kafka 4 would leave unconverted")
        for k in plan.kafka4:
            t.add_row(shown(k.partition), format_size(k.legacy_bytes), str(k.legacy_records),
                      str(len(k.legacy_segments)), "yes" if k.compacted else "no", k.fate)
        c.print(t)
    if plan.risks:
        c.print("Risks")
        for r2 in plan.risks:
            c.print(f"  {r2.severity.upper():6} {r2.subject}: {r2.text}", markup=False)


def _markers(p: PartitionInventory) -> str:
    """``104c/29a``: COMMIT and ABORT markers (other control types by name)."""
    if not p.control:
        return "-"
    short = {"COMMIT": "c", "ABORT": "a"}
    return "/".join(f"{v}{short.get(k, ' ' + k.lower())}" for k, v in sorted(p.control.items(), key=lambda kv:
                                                                              (kv[0] != "COMMIT", kv[0])))


def _compacted(p: PartitionInventory) -> str:
    return "yes" if p.compacted else "no"


# ---------------------------------------------------------------------------------------------- run


def render_run(m: Manifest, workdir: str, c: Console) -> None:
    t = _table("PARTITION", "SEGS", "IN", "OUT", "DELTA", "BATCHES", "BUILT", "COPIED", "RECORDS",
               title=f"canary run: {len(m.partitions)} partition(s) of {shown(m.log_dir)} -> {shown(workdir)}")
    for p in m.partitions:
        cv = p.convert
        bi, bo = int(cv.get("bytes_in", 0)), int(cv.get("bytes_out", 0))
        t.add_row(shown(p.name), str(len(p.segments)), format_size(bi), format_size(bo),
                  f"{100.0 * (bo - bi) / bi:+.1f}%" if bi else "-",
                  f"{cv.get('batches_in', 0)} -> {cv.get('batches_out', 0)}", str(cv.get("batches_built", 0)),
                  str(cv.get("batches_copied", 0)), str(cv.get("records_out", 0)))
    c.print(t)
    for p in m.partitions:
        for wmsg in p.convert.get("warnings", []):
            c.print(f"  {shown(p.name)}: {wmsg}", markup=False)


# ---------------------------------------------------------------------------------------------- verify


def render_verify(r: VerifyResult, c: Console) -> None:
    t = _table("PARTITION", "RESULT", "ITEMS", "ORIGINAL", "CANARY", "DELTA", "BATCHES", "COMPRESSION",
               title=f"canary verify: {shown(r.workdir)}")
    for v in r.partitions:
        d = v.as_dict()
        b = d["bytes"]
        comp = []
        for codec, o in d["codecs"]["original"].items():
            n = d["codecs"]["canary"].get(codec)
            if codec != "none" and n and o["payload_per_byte"] and n["payload_per_byte"]:
                comp.append(f"{codec} {o['payload_per_byte']:.2f}->{n['payload_per_byte']:.2f}")
        t.add_row(shown(v.name), "ok" if v.ok else f"FAIL ({v.difference_count})", str(d["items_compared"]),
                  format_size(b["original"]), format_size(b["canary"]),
                  "-" if b["delta_pct"] is None else f"{b['delta_pct']:+.1f}%",
                  f"{d['batches']['original']} -> {d['batches']['canary']}", ", ".join(comp) or "-")
    c.print(t)
    c.print("(COMPRESSION: key+value bytes per stored byte, original -> canary)")
    for v in r.partitions:  # the differences and warnings are findings: verify_findings, on stderr
        for k, n in v.expected.items():
            c.print(f"  {shown(v.name)}: expected: {k}: {n}", markup=False)
    if r.log_dir_state:
        t = _table("PARTITION", "IN THE LOG DIR", "DETAIL", title=f"log dir {shown(r.log_dir)}")
        for s in r.log_dir_state:
            t.add_row(shown(s.name), s.state, "; ".join(s.detail))
        c.print(t)
    for name, acts in r.loader.items():
        c.print(f"  {shown(name)}: a broker starting now would: " + "; ".join(acts), markup=False)
    if r.journal:
        c.print(f"last swap: {r.journal.get('op')} {r.journal.get('state')} at {r.journal.get('at')}")


def verify_findings(r: VerifyResult) -> list[str]:
    """What verify found wrong, one line each (stderr, like every command's findings)."""
    out = []
    for v in r.partitions:
        out += [f"canary verify: {shown(v.name)}: warning: {w}" for w in v.warnings]
        out += [f"canary verify: {shown(v.name)}: DIFFERENCE: {diff}" for diff in v.differences]
        if v.difference_count > len(v.differences):
            out.append(f"canary verify: {shown(v.name)}: ... and {v.difference_count - len(v.differences)} more "
                       "difference(s)")
    return out


# ---------------------------------------------------------------------------------------------- apply / rollback


def render_swap(r: SwapResult, c: Console) -> None:
    t = _table("PARTITION", "BEFORE", "AFTER", "CHANGES", title=f"canary {r.op}: {shown(r.log_dir)}")
    for o in r.outcomes:
        t.add_row(shown(o.partition), o.before, o.after, str(o.actions))
    c.print(t)
    for o in r.outcomes:
        for n in o.notes:
            c.print(f"  {shown(o.partition)}: {n}", markup=False)


# ---------------------------------------------------------------------------------------------- listener


class CanaryRenderer(CanaryListener):
    """Progress notes (stderr, not with --quiet) and warnings (stderr, always) of a canary subcommand."""

    def __init__(self, output: Output, label: str) -> None:
        self.output, self.label = output, label
        # On a terminal the steps show as one transient line with a spinner and the time taken; in a pipe each
        # step is a note.
        self.bar = terminal.ProgressBar(label, None, enabled=not output.quiet)

    def __enter__(self) -> CanaryRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def warning(self, text: str) -> None:
        self.output.warning(text)

    def note(self, text: str) -> None:
        if self.bar.enabled:
            self.bar.start()
            self.bar.update(description=f"{self.label}: {text}")
        else:
            self.output.note(text)


def command_line(step: Step) -> str:
    """A step of the plan as the command line to type: the option that sets each request field."""
    from kafkatool.commands.app import option_for

    parts = ["kafkatool", *step.command, *step.args]
    for name, value in step.options:
        parts += [option_for(list(step.command), name), value]
    return " ".join(parts) + (f"   # {step.comment}" if step.comment else "")


# ---------------------------------------------------------------------------------------------- rehearse


def render_rehearse_text(r: RehearseResult) -> str:
    """The human report (stdout, and W/rehearse.txt): no colour, wide enough for every table."""
    buf = io.StringIO()
    c = Console(file=buf, width=max(200, int(os.environ.get("COLUMNS", "0") or 0)), highlight=False, soft_wrap=True,
                no_color=True, markup=False)
    render_rehearse(r, c)
    return buf.getvalue()


def render_rehearse(r: RehearseResult, c: Console) -> None:
    c.print(f"canary rehearse: {r.workdir} on Kafka {r.kafka_version} ({r.mode}), {r.java}: "
            + ("PASSED" if r.ok else f"FAILED ({len(r.findings)} finding(s))"))
    if r.settings or r.ignored:
        taken = ", ".join(f"{k}={v}" for k, v in r.settings.items()) or "nothing"
        ignored = "; ".join(f"{k} ({why})" for k, why in r.ignored.items())
        c.print(f"from the server properties: {taken}" + (f"; ignored: {ignored}" if ignored else ""))
    if r.api_versions:
        c.print("the broker answers " + ", ".join(f"{k} {v}" for k, v in r.api_versions.items()))
    t = _table("PARTITION", "LOG END", "LOADED", "RECOVERED", "BROKER LOG", "READS", "PRODUCED",
               title="Loaded (as after canary apply, then with recovery forced)")
    for p in r.partitions:
        findings = sum(1 for s in p.said if s.kind == "finding")
        expected = sum(1 for s in p.said if s.kind == "expected")
        log = ", ".join(x for x in (f"{findings} finding(s)" if findings else "",
                                    f"{expected} expected" if expected else "") if x) or "-"
        t.add_row(p.name, str(p.loaded.log_end_offset if p.loaded else "-"),
                  f"{p.loaded.segments} segments" if p.loaded else "NO",
                  f"ends at {p.recovered.log_end_offset}" if p.recovered else "NO", log,
                  f"{sum(x.ok for x in p.reads)}/{len(p.reads)} ok", f"{sum(x.ok for x in p.produced)}/"
                  f"{len(p.produced)} ok")
    c.print(t)
    t = _table("PARTITION", "READER", "RECORDS", "FETCHES", "RESULT", title="Reads (every record compared with "
                                                                            "W/originals)")
    for p in r.partitions:
        for x in p.reads:
            t.add_row(p.name, x.reader, f"{x.records}/{x.expected}", str(x.fetches), _read_result(x))
    c.print(t)
    if r.costs:
        t = _table("FETCH", "TO FORMAT", "FETCHES", "RECORDS", "BYTES/FETCH", "MS/FETCH", "MAX MS", "HEAP/FETCH",
                   "MAX HEAP", title="What each old fetch cost the broker (its request log: messageConversionsTime, "
                                     "temporaryMemoryBytes, KIP-283)")
        for k in r.costs:
            pf = k.per_fetch()
            t.add_row(f"v{k.fetch_version}", f"v{k.to_magic}", str(k.fetches), str(k.records),
                      format_size(int(pf["record_bytes"])), f"{pf['conversion_ms']:.2f}", f"{k.max_conversion_ms:.2f}",
                      format_size(int(pf["temporary_memory_bytes"])), format_size(k.max_temporary_memory_bytes))
        c.print(t)
    t = _table("PARTITION", "PRODUCER", "RECORDS", "OFFSET", "RESULT", title="Produced to the copies and read back")
    for p in r.partitions:
        for pc in p.produced:
            t.add_row(p.name, pc.producer, str(pc.records), str(pc.base_offset) if pc.base_offset >= 0 else "-",
                      _produce_result(pc))
    c.print(t)
    if r.clients:
        t = _table("CLIENT", "FETCH", "ON THIS BROKER", "WHY", title="Clients")
        for v in r.clients:
            t.add_row(v.client, f"v{v.max_fetch_version}", v.verdict, v.why)
        c.print(t)
    for line in r.refusals:
        c.print(f"refused by Kafka {r.kafka_version}: {line}")
    for p in r.partitions:
        groups: dict[str, list[str]] = {}
        for s in p.said:
            if s.kind == "expected":
                groups.setdefault(s.why, []).append(s.entry.words)
        for why, words in groups.items():
            first = words[0] if len(words[0]) <= 140 else words[0][:139] + "..."
            c.print(f"  {p.name}: expected: {len(words)} x \"{first}\": {why}")
        for n in p.notes:
            c.print(f"  {p.name}: {n}")
    for n in r.notes:
        c.print(f"  {n}")


def _read_result(x: ReadCheck) -> str:
    if not x.ok:
        first = x.differences[0] if x.differences else ""
        return f"FAIL ({x.difference_count}): {first}" + (f"; the read ended {x.stop}" if x.stop else "")
    if x.stop and x.expected_stop:
        return f"ok; stops at offset {x.stop_offset}: {x.expected_stop} ({x.unreachable} record(s) past it)"
    return "ok"


def _produce_result(pc: ProduceCheck) -> str:
    note = f" ({pc.note})" if pc.note else ""
    if pc.error is not None:
        return ("refused, as announced: " if pc.refused_expected else "REFUSED: ") + pc.error + note
    rb = pc.read_back
    if rb is None or not rb.ok:
        first = rb.differences[0] if rb is not None and rb.differences else (rb.stop if rb else "not read back")
        return f"FAIL: {first}{note}"
    return f"ok, read back{note}"


def rehearse_findings(r: RehearseResult) -> list[str]:
    return [f"canary rehearse: {f.line()}" for f in r.findings]


def rehearse_json_lines(r: RehearseResult) -> list[dict[str, Any]]:
    d = r.as_dict()
    lines: list[dict[str, Any]] = list(d["partitions"])
    lines += d["costs"] + d["clients"]
    lines += [{"type": "finding", **f} for f in d["findings"]]
    lines.append({"type": "summary", **{k: v for k, v in d.items()
                                        if k not in ("partitions", "costs", "clients", "findings", "schema")}})
    return lines
