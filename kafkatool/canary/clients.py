"""Consumer clients, their Fetch API versions and the message formats they read (``canary plan``'s clients file).

A clients file lists one consumer population per line, ``#`` starts a comment (shown as its label)::

    java-client 0.10.2            # billing (Kafka's Java consumer, kafka-clients version)
    librdkafka 0.9.5              # legacy C service, default config
    librdkafka 0.9.5 api.version.request=true
    fetch-version 3               # anything else: the newest Fetch version it sends

What a Fetch version reads (``FetchRequest.json`` version notes; broker side ``KafkaApis.maybeConvertFetchedData``,
spec §5.1): v0-v1 message format v0 (the broker down-converts anything newer), v2-v3 format v1 (KIP-32),
v4+ format v2 (KIP-98), v10+ zstd (KIP-110: below v10 a topic with ``compression.type=zstd`` answers
``UNSUPPORTED_COMPRESSION_TYPE`` and down-conversion of zstd batches is refused). Kafka 4.0 removed Fetch
v0-v3 (KIP-724 / KAFKA-18269): such clients cannot fetch at all.

Java client (kafka-clients) newest Fetch version by release, from ``FetchRequest.json``'s history and the
KIPs that bumped it: 0.8 v0; 0.9.0 v1 (KIP-13 throttle time); 0.10.0 v2 (KIP-32); 0.10.1 v3 (KIP-74);
0.11.0 v5 (KIP-98 v4, KIP-107 v5); 1.0 v6; 1.1 v7 (KIP-227); 2.0 v8; 2.1 v10 (KIP-320 v9, KIP-110 v10);
2.3 v11 (KIP-392) and newer from there (only the thresholds v2, v4 and v10 change a verdict).

librdkafka (and the clients built on it: confluent-kafka-*, rdkafka bindings): before 0.9.0 the 0.8 protocol
(Fetch v0); 0.9.x sends Fetch v2 (format v1) only with ``api.version.request=true``, whose default was
*false* until 0.11.0, so by default it uses ``broker.version.fallback=0.9.0`` and Fetch v1 (format v0;
librdkafka wiki "Broker version compatibility"); 0.11.0-1.3.x Fetch v4 (format v2, no v10: zstd topics fail,
librdkafka issue #2880); 1.4.x implements Fetch v1, v2, v4 and v11 (v11 against 2.3+ brokers); 1.5.0+ every
version up to v11.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kafkatool.errors import InputError, UsageError
from kafkatool.util.regular import read_regular

ZSTD_FETCH_VERSION = 10  # KIP-110
MAX_CLIENTS_READ = 16 << 20  # a clients file is a few lines per client
KAFKA4_MIN_FETCH_VERSION = 4  # KAFKA-18269: Fetch v0-3 removed in 4.0

Version = tuple[int, int, int]


def magic_for_fetch_version(version: int) -> int:
    """The newest message format a Fetch version reads (the broker down-converts anything newer)."""
    if version <= 1:
        return 0
    if version <= 3:
        return 1
    return 2


@dataclass(frozen=True, slots=True)
class ClientSpec:
    line: int
    kind: str  # java-client, librdkafka, fetch-version
    version: str
    options: dict[str, str] = field(default_factory=dict)
    label: str = ""

    @property
    def text(self) -> str:
        opts = "".join(f" {k}={v}" for k, v in self.options.items())
        return f"{self.kind} {self.version}{opts}"

    @property
    def display(self) -> str:
        return f"{self.text} ({self.label})" if self.label else self.text


@dataclass(frozen=True, slots=True)
class ClientCapability:
    """What one client population can fetch."""

    spec: ClientSpec
    max_fetch_version: int
    or_newer: bool  # the release may send a newer version than listed (only thresholds matter)
    source: str  # why (the table row)

    @property
    def max_magic(self) -> int:
        return magic_for_fetch_version(self.max_fetch_version)

    @property
    def reads_zstd(self) -> bool:
        return self.max_fetch_version >= ZSTD_FETCH_VERSION

    @property
    def fetches_on_kafka4(self) -> bool:
        return self.max_fetch_version >= KAFKA4_MIN_FETCH_VERSION

    @property
    def fetch_label(self) -> str:
        return f"v{self.max_fetch_version}{'+' if self.or_newer else ''}"

    def as_dict(self) -> dict[str, object]:
        return {"client": self.spec.text, "label": self.spec.label, "line": self.spec.line,
                "max_fetch_version": self.max_fetch_version, "or_newer": self.or_newer,
                "max_magic": self.max_magic, "reads_zstd": self.reads_zstd,
                "fetches_on_kafka4": self.fetches_on_kafka4, "source": self.source}


# (first release, newest Fetch version, or newer?, source)
_JAVA: list[tuple[Version, int, bool, str]] = [
    ((0, 8, 0), 0, False, "Kafka 0.8: Fetch v0"),
    ((0, 9, 0), 1, False, "Kafka 0.9.0: Fetch v1 (KIP-13 throttle time)"),
    ((0, 10, 0), 2, False, "Kafka 0.10.0: Fetch v2 reads message format v1 (KIP-32)"),
    ((0, 10, 1), 3, False, "Kafka 0.10.1: Fetch v3 (KIP-74 response max bytes)"),
    ((0, 11, 0), 5, False, "Kafka 0.11.0: Fetch v4 reads message format v2 (KIP-98), v5 (KIP-107)"),
    ((1, 0, 0), 6, False, "Kafka 1.0: Fetch v6"),
    ((1, 1, 0), 7, False, "Kafka 1.1: Fetch v7 (KIP-227 fetch sessions)"),
    ((2, 0, 0), 8, False, "Kafka 2.0: Fetch v8"),
    ((2, 1, 0), 10, False, "Kafka 2.1: Fetch v10 reads zstd (KIP-110; v9 KIP-320)"),
    ((2, 3, 0), 11, True, "Kafka 2.3+: Fetch v11 (KIP-392) or newer"),
]

_LIBRDKAFKA: list[tuple[Version, int, bool, str]] = [
    ((0, 0, 0), 0, False, "librdkafka < 0.9.0: the 0.8 protocol (Fetch v0)"),
    ((0, 9, 0), 1, False, "librdkafka 0.9.x: api.version.request defaults to false, so "
                          "broker.version.fallback=0.9.0 and Fetch v1"),
    ((0, 11, 0), 4, False, "librdkafka 0.11.0-1.3.x: Fetch v4 (message format v2), no v10 (issue #2880)"),
    ((1, 4, 0), 11, False, "librdkafka 1.4.x: Fetch v1/v2/v4/v11 (v11 against brokers 2.3+)"),
    ((1, 5, 0), 11, False, "librdkafka 1.5.0+: every Fetch version up to v11"),
]

KINDS = {"java-client": "java-client", "java": "java-client", "kafka-clients": "java-client",
         "librdkafka": "librdkafka", "rdkafka": "librdkafka", "fetch-version": "fetch-version"}

_VERSION_RE = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.\d+)*(?:[-+.][0-9A-Za-z.-]*)?$")


def parse_version(text: str) -> Version:
    m = _VERSION_RE.match(text.strip())
    if not m:
        raise UsageError(f"not a version number: {text!r} (e.g. 0.10.2, 2.8.1)")
    return int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)


def _lookup(table: list[tuple[Version, int, bool, str]], v: Version, what: str) -> tuple[int, bool, str]:
    row = None
    for first, fetch, newer, source in table:
        if v >= first:
            row = (fetch, newer, source)
    if row is None:
        raise UsageError(f"{what} {'.'.join(map(str, v))} is older than any Kafka release")
    return row


def capability(spec: ClientSpec) -> ClientCapability:
    if spec.kind == "fetch-version":
        try:
            v = int(spec.version)
        except ValueError:
            raise UsageError(f"line {spec.line}: fetch-version needs a number, not {spec.version!r}") from None
        if not 0 <= v <= 32:
            raise UsageError(f"line {spec.line}: fetch-version {v} is not a Fetch API version")
        return ClientCapability(spec, v, False, f"declared Fetch v{v}")
    ver = parse_version(spec.version)
    if spec.kind == "java-client":
        fetch, newer, source = _lookup(_JAVA, ver, "java-client")
        return ClientCapability(spec, fetch, newer, source)
    fetch, newer, source = _lookup(_LIBRDKAFKA, ver, "librdkafka")
    avr = spec.options.get("api.version.request", "").lower()
    if (0, 9, 1) <= ver < (0, 11, 0) and avr == "true":
        return ClientCapability(spec, 2, False, "librdkafka 0.9.1-0.9.5 with api.version.request=true: Fetch v2 "
                                                "(message format v1)")
    if ver >= (0, 11, 0) and avr == "false":
        fb = spec.options.get("broker.version.fallback", "0.10.0")
        fv = _lookup(_JAVA, parse_version(fb), "broker.version.fallback")[0]
        fv = min(fv, fetch, 4)
        return ClientCapability(spec, fv, False, f"librdkafka with api.version.request=false: "
                                                 f"broker.version.fallback={fb} features (Fetch v{fv})")
    return ClientCapability(spec, fetch, newer, source)


def parse_clients(text: str, *, origin: str = "clients") -> list[ClientSpec]:
    out: list[ClientSpec] = []
    for n, raw in enumerate(text.splitlines(), 1):
        body, _, comment = raw.partition("#")
        words = body.split()
        if not words:
            continue
        kind = KINDS.get(words[0].lower())
        if kind is None:
            raise UsageError(f"{origin} line {n}: unknown client kind {words[0]!r} (java-client VERSION, "
                             "librdkafka VERSION, fetch-version N)")
        if len(words) < 2:
            raise UsageError(f"{origin} line {n}: {words[0]} needs a version")
        opts: dict[str, str] = {}
        for w in words[2:]:
            if "=" not in w:
                raise UsageError(f"{origin} line {n}: unexpected {w!r} (options are key=value)")
            k, v = w.split("=", 1)
            opts[k] = v
        spec = ClientSpec(n, kind, words[1], opts, comment.strip())
        try:
            capability(spec)  # validate now: a bad line is a usage error before any work
        except UsageError as e:
            raise UsageError(f"{origin} line {n}: {e.message.removeprefix(f'line {n}: ')}") from None
        out.append(spec)
    return out


def read_clients(path: str | os.PathLike[str]) -> list[ClientCapability]:
    p = Path(path)
    try:
        text = read_regular(p, limit=MAX_CLIENTS_READ).decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the clients file: {getattr(e, 'strerror', None) or e}", path=p) from None
    return [capability(s) for s in parse_clients(text, origin=str(p))]
