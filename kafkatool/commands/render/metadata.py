"""``metadata``'s output: the image as tables (terminal), aligned text (piped) or JSON lines; a diff as one line
(or JSON object) per change; findings on stderr (JSON: on stdout as ``finding`` objects)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.table import Table

from kafkatool.commands import terminal
from kafkatool.commands.options import Output, OutputFormat
from kafkatool.metadata import ImageResult, MetadataChange, MetadataFinding
from kafkatool.util.printable import shown


def _ids(xs: Sequence[int] | None) -> str:
    return ",".join(str(x) for x in xs or ()) or "-"


def _endpoints(eps: list[dict[str, Any]]) -> str:
    return " ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in eps) or "-"


def _sections(img: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every section of the image as (title, columns, rows): one layout for the table and the text views."""
    out: list[tuple[str, list[str], list[list[str]]]] = []
    out.append(("features", ["feature", "level"], [[k, str(v)] for k, v in img["features"].items()]))
    out.append(("brokers", ["id", "epoch", "fenced", "shutdown", "rack", "endpoints", "incarnation", "log dirs"],
                [[str(b["id"]), str(b["epoch"]), str(b["fenced"]).lower(), str(b["in_controlled_shutdown"]).lower(),
                  b["rack"] or "-", _endpoints(b["endpoints"]), b["incarnation_id"], str(len(b["log_dirs"]))]
                 for b in img["brokers"]]))
    out.append(("controllers", ["id", "endpoints", "incarnation"],
                [[str(c["id"]), _endpoints(c["endpoints"]), c["incarnation_id"]] for c in img["controllers"]]))
    out.append(("topics", ["topic", "topic id", "partitions"],
                [[t["name"], t["topic_id"], str(len(t["partitions"]))] for t in img["topics"]]))
    out.append(("partitions", ["partition", "leader", "leader epoch", "partition epoch", "replicas", "isr", "elr",
                               "last known elr", "adding", "removing", "recovery"],
                [[f"{t['name']}-{p['partition']}", str(p["leader"]), str(p["leader_epoch"]),
                  str(p["partition_epoch"]), _ids(p["replicas"]), _ids(p["isr"]), _ids(p["elr"]),
                  _ids(p["last_known_elr"]), _ids(p["adding_replicas"]), _ids(p["removing_replicas"]),
                  p["leader_recovery_state"]] for t in img["topics"] for p in t["partitions"]]))
    out.append(("configs", ["resource", "name", "value"],
                [[f"{c['resource_type']}:{c['resource_name'] or '<default>'}", k, v]
                 for c in img["configs"] for k, v in c["configs"].items()]))
    out.append(("client quotas", ["entity", "key", "value"],
                [[",".join(f"{k}={'<default>' if n is None else n}" for k, n in q["entity"].items()), k, str(v)]
                 for q in img["client_quotas"] for k, v in q["values"].items()]))
    out.append(("acls", ["resource", "pattern", "principal", "host", "operation", "permission"],
                [[f"{a['resource_type']}:{a['resource_name']}", a["pattern_type"], a["principal"], a["host"],
                  a["operation"], a["permission"]] for a in img["acls"]]))
    pid = img["producer_ids"]
    out.append(("producer ids", ["next producer id", "broker", "broker epoch"],
                [] if pid is None else [[str(pid["next_producer_id"]), str(pid["broker_id"]),
                                         str(pid["broker_epoch"])]]))
    if img["scram_credentials"]:
        out.append(("scram credentials", ["user", "mechanism", "iterations"],
                    [[s["name"], s["mechanism"], str(s["iterations"])] for s in img["scram_credentials"]]))
    if img["delegation_tokens"]:
        out.append(("delegation tokens", ["token id", "owner", "expires"],
                    [[d["token_id"], d["owner"], str(d["expiration_timestamp"])] for d in img["delegation_tokens"]]))
    return out


def _head(result: ImageResult) -> str:
    img = result.image
    s = result.snapshot
    base = f"snapshot {shown(s.path.name)}" if s is not None else "no snapshot"
    return (f"metadata image at offset {img.offset} (epoch {img.epoch}, timestamp {img.timestamp}): {base}, then "
            f"the log to offset {result.log_end_offset if result.log_end_offset is not None else '-'}; "
            f"{result.records} records applied")


def render_image(out: Output, form: OutputFormat, result: ImageResult) -> None:
    if form == OutputFormat.json:
        out.json({"type": "metadata_image", "source": result.source_json(), "image": result.image.to_json()})
        _json_findings(out, result.findings)
        return
    img = result.image.to_json()
    if form == OutputFormat.table:
        console = terminal.console(file=out.out, highlight=False, soft_wrap=False)
        console.print(_head(result), markup=False)
        for title, cols, rows in _sections(img):
            if not rows:
                continue
            table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
            for c in cols:
                table.add_column(c, overflow="fold")
            for row in rows:
                table.add_row(*row)
            console.print(table)
    else:
        out.line(_head(result))
        for title, cols, rows in _sections(img):
            if not rows:
                continue
            out.line("")
            out.line(f"== {title}")
            widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
            for row in [cols, *rows]:
                out.line("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    _text_findings(out, result.findings)


def render_diff(out: Output, form: OutputFormat, a: ImageResult, b: ImageResult,
                changes: list[MetadataChange]) -> None:
    if form == OutputFormat.json:
        for c in changes:
            out.json({"type": "metadata_change", **c.to_json()})
        out.json({"type": "metadata_diff", "from": {"offset": a.image.offset, "source": a.source_json()},
                  "to": {"offset": b.image.offset, "source": b.source_json()}, "changes": len(changes)})
        _json_findings(out, a.findings + b.findings)
        return
    for c in changes:
        if c.change == "changed" and isinstance(c.before, dict) and isinstance(c.after, dict):
            keys = sorted(c.before.keys() | c.after.keys())
            detail = ", ".join(f"{k}: {_compact(c.before.get(k))} -> {_compact(c.after.get(k))}" for k in keys
                               if c.before.get(k) != c.after.get(k))
        elif c.change == "changed":
            detail = f"{_compact(c.before)} -> {_compact(c.after)}"
        else:
            detail = _compact(c.after if c.change == "added" else c.before)
        out.line(f"{c.change:<8} {c.section:<14} {c.key}  {detail}")
    out.note(f"{len(changes)} change(s) from offset {a.image.offset} to offset {b.image.offset}")
    _text_findings(out, a.findings + b.findings)


def _compact(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _json_findings(out: Output, findings: list[MetadataFinding]) -> None:
    for f in findings:
        out.json({"type": "finding", **f.to_json()})


def _text_findings(out: Output, findings: list[MetadataFinding]) -> None:
    for f in findings:
        out.message(str(f.severity), str(f))
