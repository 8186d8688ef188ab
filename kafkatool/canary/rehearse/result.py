"""What a rehearsal found: per partition, what the broker said loading it, what every client read, what the produced
records came back as; the broker's cost of each old fetch; which clients this broker refuses. ``W/rehearse.json``
is :meth:`RehearseResult.as_dict`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkatool.canary.rehearse.brokerlog import Loaded, Said
from kafkatool.canary.rehearse.reads import ReadCheck

REHEARSE_JSON = "rehearse.json"
REHEARSE_REPORT = "rehearse.txt"
SCHEMA = 1


@dataclass(slots=True)
class Finding:
    """Why the rehearsal fails, one line each. ``words``: the broker's own (a log line, an error it answered)."""

    partition: str | None
    phase: str  # load / recovery / read / produce / canary / broker
    text: str
    words: str | None = None

    def line(self) -> str:
        where = f"{self.partition}: " if self.partition else ""
        return f"{where}{self.phase}: {self.text}" + (f": {self.words}" if self.words else "")

    def as_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "phase": self.phase, "text": self.text, "broker_words": self.words}


@dataclass(slots=True)
class ProduceCheck:
    """Records appended to the copy by one producer, and read back."""

    partition: str
    producer: str  # e.g. "0.10 producer: Produce v2, message format v1"
    produce_version: int
    records: int
    batch_bytes: int
    base_offset: int = -1
    error: str | None = None  # the broker's answer when it refused (or closed the connection)
    refused_expected: bool = False  # a refusal this broker announces (Kafka 4: Produce v0-2)
    read_back: ReadCheck | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        if self.error is not None:
            return self.refused_expected
        return self.read_back is not None and self.read_back.ok

    def as_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "producer": self.producer, "produce_version": self.produce_version,
                "records": self.records, "batch_bytes": self.batch_bytes, "base_offset": self.base_offset,
                "ok": self.ok, "error": self.error, "refused_as_announced": self.refused_expected,
                "read_back": self.read_back.as_dict() if self.read_back else None, "note": self.note or None}


@dataclass(slots=True)
class PartitionRehearsal:
    name: str
    expected_log_end_offset: int
    loaded: Loaded | None = None  # the broker's "Completed load" (trusting load)
    recovered: Loaded | None = None  # the same after the load with recovery forced
    said: list[Said] = field(default_factory=list)  # the broker's log about it (findings and expected lines)
    reads: list[ReadCheck] = field(default_factory=list)
    produced: list[ProduceCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def load(x: Loaded | None) -> dict[str, Any] | None:
            return None if x is None else {"segments": x.segments, "log_start_offset": x.log_start_offset,
                                           "log_end_offset": x.log_end_offset, "words": x.words}

        return {"type": "partition", "partition": self.name, "expected_log_end_offset": self.expected_log_end_offset,
                "loaded": load(self.loaded), "recovered": load(self.recovered),
                "broker_log": [s.as_dict() for s in self.said], "reads": [r.as_dict() for r in self.reads],
                "produced": [p.as_dict() for p in self.produced], "notes": self.notes}


@dataclass(slots=True)
class ConversionCost:
    """What one old Fetch version cost the broker (its request log), over every fetch of every partition."""

    fetch_version: int
    to_magic: int
    fetches: int = 0
    logged: int = 0  # fetches the broker's request log reported (the rest: not seen before the broker stopped)
    records: int = 0
    record_bytes: int = 0  # bytes of records the broker sent (its committed sizes)
    temporary_memory_bytes: int = 0  # KIP-283: bytes read into the heap to convert, plus bytes written
    max_temporary_memory_bytes: int = 0
    conversion_ms: float = 0.0  # messageConversionsTime
    max_conversion_ms: float = 0.0
    total_ms: float = 0.0

    def per_fetch(self) -> dict[str, float]:
        n = max(self.logged, 1)
        return {"temporary_memory_bytes": self.temporary_memory_bytes / n, "conversion_ms": self.conversion_ms / n,
                "total_ms": self.total_ms / n, "record_bytes": self.record_bytes / max(self.fetches, 1)}

    def as_dict(self) -> dict[str, Any]:
        return {"type": "conversion-cost", "fetch_version": self.fetch_version, "to_magic": self.to_magic,
                "fetches": self.fetches, "logged": self.logged, "records": self.records,
                "record_bytes": self.record_bytes, "temporary_memory_bytes": self.temporary_memory_bytes,
                "max_temporary_memory_bytes": self.max_temporary_memory_bytes,
                "conversion_ms": round(self.conversion_ms, 3), "max_conversion_ms": round(self.max_conversion_ms, 3),
                "total_ms": round(self.total_ms, 3),
                "per_fetch": {k: round(v, 3) for k, v in self.per_fetch().items()}}


@dataclass(slots=True)
class ClientVerdict:
    """A population of the clients file on this broker."""

    client: str
    max_fetch_version: int
    verdict: str  # refused / down-converted / reads as stored
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"type": "client", "client": self.client, "max_fetch_version": self.max_fetch_version,
                "verdict": self.verdict, "why": self.why}


@dataclass(slots=True)
class RehearseResult:
    workdir: str
    kafka: str  # the install's libs dir
    kafka_version: str
    mode: str
    java: str
    settings: dict[str, str]  # taken from the server properties
    ignored: dict[str, str]
    api_versions: dict[str, str] = field(default_factory=dict)  # Fetch/Produce: the range the broker announces
    refusals: list[str] = field(default_factory=list)  # old requests the broker refused, in its words
    partitions: list[PartitionRehearsal] = field(default_factory=list)
    costs: list[ConversionCost] = field(default_factory=list)
    clients: list[ClientVerdict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sandbox_kept: str | None = None

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "ok": self.ok, "workdir": self.workdir, "kafka": self.kafka,
                "kafka_version": self.kafka_version, "mode": self.mode, "java": self.java,
                "server_properties_taken": self.settings, "server_properties_ignored": self.ignored,
                "api_versions": self.api_versions, "refusals": self.refusals,
                "partitions": [p.as_dict() for p in self.partitions], "costs": [c.as_dict() for c in self.costs],
                "clients": [c.as_dict() for c in self.clients], "findings": [f.as_dict() for f in self.findings],
                "notes": self.notes, "seconds": round(self.seconds, 1), "sandbox_kept": self.sandbox_kept}
