"""What changed in the metadata image between two points: one change per thing added, removed or changed.

Images are compared in their JSON form (``MetadataImage.to_json``), section by section, each keyed the way an
operator names things: features by name, brokers and controllers by id, topics by name and their partitions
by number, configs by resource, client quotas by entity, ACLs by their id; the producer id block, the ZK
migration state as a whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MetadataChange:
    section: str  # features, brokers, controllers, topics, partitions, configs, client_quotas, acls, ...
    key: str  # what changed, e.g. "orders", "orders-3", "topic:orders", "1"
    change: str  # "added" | "removed" | "changed"
    before: Any = None
    after: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "key": self.key, "change": self.change, "before": self.before,
                "after": self.after}


def _keyed(section: str, items: Any) -> dict[str, Any]:
    if section == "features":
        return dict(items)
    if section in ("brokers", "controllers"):
        return {str(i["id"]): i for i in items}
    if section == "topics":
        return {t["name"]: {k: v for k, v in t.items() if k != "partitions"} for t in items}
    if section == "partitions":
        return {f"{t['name']}-{p['partition']}": p for t in items for p in t["partitions"]}
    if section == "configs":
        return {f"{c['resource_type']}:{c['resource_name']}": c["configs"] for c in items}
    if section == "client_quotas":
        return {",".join(f"{k}={'<default>' if v is None else v}" for k, v in sorted(q["entity"].items())): q["values"]
                for q in items}
    if section == "acls":
        return {a["id"]: a for a in items}
    if section in ("scram_credentials",):
        return {f"{s['name']}/{s['mechanism']}": s for s in items}
    if section == "delegation_tokens":
        return {d["token_id"]: d for d in items}
    raise KeyError(section)


_SECTIONS = ("features", "brokers", "controllers", "topics", "partitions", "configs", "client_quotas", "acls",
             "scram_credentials", "delegation_tokens")
# Not "quorum": the last LeaderChange/Voters control records the replay met, which a snapshot does not carry.
_WHOLE = ("producer_ids", "zk_migration_state")


def diff_images(before: dict[str, Any], after: dict[str, Any]) -> list[MetadataChange]:
    """The changes from ``before`` to ``after`` (``MetadataImage.to_json`` documents), in section order."""
    out: list[MetadataChange] = []
    for section in _SECTIONS:
        src = "topics" if section == "partitions" else section
        a, b = _keyed(section, before[src]), _keyed(section, after[src])
        for key in sorted(a.keys() | b.keys()):
            if key not in a:
                out.append(MetadataChange(section, key, "added", None, b[key]))
            elif key not in b:
                out.append(MetadataChange(section, key, "removed", a[key], None))
            elif a[key] != b[key]:
                out.append(MetadataChange(section, key, "changed", a[key], b[key]))
    for section in _WHOLE:
        if before[section] != after[section]:
            kind = "added" if not before[section] else "removed" if not after[section] else "changed"
            out.append(MetadataChange(section, section, kind, before[section], after[section]))
    return out
