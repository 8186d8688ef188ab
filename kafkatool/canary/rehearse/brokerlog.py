"""The sandbox broker's log, read for what it says about the canary partitions, in its own words.

Every line the sandbox's log4j writes is ``[%d] %p %m (%c)``, an exception's lines following its entry. An entry is
about a canary partition when it names it (``partition=orders-0``, a path ending in ``/orders-0``, or the name
alone). What becomes what:

* **findings** (the rehearsal fails): every WARN, ERROR or FATAL entry about a canary partition, and every ERROR
  or FATAL entry at all while the broker loads, unless it is one of the expected lines below. Among them, the
  lines of Kafka's ``LogLoader``/``LogSegment`` (3.9 ``core/.../log/LogLoader.scala``, 4.x
  ``storage/.../LogLoader.java``): ``Found invalid messages in log segment ... at byte offset N`` (with the
  ``CorruptRecordException`` that stopped the recovery), ``Corruption found in segment N, truncating to offset
  M``, ``Could not find offset index file corresponding to log file ...``, ``Found a corrupted index file ...``,
  ``Found an orphaned index file ..., with no corresponding log file``, ``Error while loading logs in ...``;
* **expected** (reported, not failing): what the rehearsal itself causes. ``Recovering unflushed segment N``
  when recovery is forced; ``New epoch entry ... caused truncation of conflicting entries`` (the sandbox's
  topics are new, their leader epochs start at 0, below the canary's); ``Deleting non-empty leader epoch cache
  due to incompatible message format`` (a ZooKeeper broker of an old message format drops the checkpoint the
  canary carries); ``UnsupportedVersionException`` for a request the rehearsal sends to show that the broker
  refuses it (Kafka 4: Fetch v0-3, Produce v0-2); a coordinator's load of ``__consumer_offsets`` or
  ``__transaction_state`` overtaken by a newer leader epoch or by the broker's stop (``Stopped loading records
  from ... because the partition is not online or is no longer the leader``: seen once on Kafka 4.4, whose
  restarted KRaft broker takes leadership again as it is unfenced);
* ``Completed load of Log(dir=.../orders-0, ...) with N segments, local-log-start-offset S and log-end-offset E``:
  the partition loaded, and where the broker says it ends;
* ``kafka.request.logger`` entries (``Completed request:{json}``, logged at INFO for deprecated API versions,
  Fetch v0-3 among them in 3.x): the broker's own measure of each old fetch: ``messageConversionsTime`` (ms) and
  ``temporaryMemoryBytes`` (KIP-283: the bytes read into the heap to convert, plus those written).

The sandbox's directory is replaced by ``<sandbox>`` in the words kept (it is removed afterwards).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_ENTRY = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*)$")
_LOGGER = re.compile(r"^(.*) \(([\w.$-]+)\)$", re.S)
_LOADED = re.compile(r"Completed load of Log\(dir=\S*?/([^/,\s]+), .*? with (\d+) segments, "
                     r"local-log-start-offset (-?\d+) and log-end-offset (-?\d+)")
REQUEST_LOGGER = "kafka.request.logger"

# (pattern, why it is expected) -- see the module docstring
EXPECTED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"caused truncation of conflicting entries"),
     "the sandbox's new topic starts at leader epoch 0, below the canary's: becoming leader rewrites the copy's "
     "leader-epoch cache (in the cluster the epochs are higher)"),
    (re.compile(r"Deleting non-empty leader epoch cache due to incompatible message format"),
     "a broker writing format v0/v1 keeps no leader-epoch cache and deletes the canary's"),
    (re.compile(r"UnsupportedVersionException: Received request for api with key \d+ \(\w+\) and unsupported "
                r"version \d+"),
     "the rehearsal's own request, sent to show that this broker refuses it"),
    (re.compile(r"Closing socket for .* because of error|Exception while processing request from"),
     "the broker closing the connection of a request it refuses (the rehearsal's own)"),
    (re.compile(r"Stopped loading records from \S+ because the partition is not online or is no longer the leader"),
     "the group or transaction coordinator's load of the partition was overtaken by a newer leader epoch (a "
     "restarted KRaft broker takes leadership again as it is unfenced) or by the broker's stop; Kafka 4's "
     "CoordinatorRuntime logs the dropped load as an ERROR and loads again at the new epoch (a log that fails to "
     "load has lines of its own, which stay findings)"),
    (re.compile(r"Unexpected error handling request RequestHeader\(apiKey=CONTROLLER_REGISTRATION,.* \[java\.util\."
                r"concurrent\.CompletionException: org\.apache\.kafka\.common\.errors\.NotControllerException: "),
     "a KRaft node that is broker and controller at once sent its controller registration before its own controller "
     "was active (a fast start): Kafka 4's ControllerApis logs the refusal as an ERROR and the node registers again"),
)
_FORCED_RECOVERY = re.compile(r"Recovering unflushed segment|Recovering \d+ logs from .* since no clean shutdown "
                              r"file was found")


@dataclass(frozen=True, slots=True)
class Entry:
    line: int  # 1-based line number in the log
    time: str
    level: str
    message: str  # the sandbox dir replaced by <sandbox>
    logger: str
    detail: str  # the exception's first line, if any

    @property
    def words(self) -> str:
        """The broker's own words: its message, and the exception's first line when there is one."""
        return self.message + (f" [{self.detail}]" if self.detail else "")


def entries(text: str, sandbox: str | None = None) -> Iterator[Entry]:
    cur: tuple[int, str, str, str] | None = None
    extra: list[str] = []

    def emit() -> Entry | None:
        if cur is None:
            return None
        n, ts, level, rest = cur
        m = _LOGGER.match(rest)
        message, logger = (m.group(1), m.group(2)) if m else (rest, "")
        detail = next((x.strip() for x in extra if x.strip() and not x.startswith(("\tat ", "\t... "))), "")
        if sandbox:
            message, detail = message.replace(sandbox, "<sandbox>"), detail.replace(sandbox, "<sandbox>")
        return Entry(n, ts, level, message, logger, detail)

    for n, line in enumerate(text.splitlines(), 1):
        m = _ENTRY.match(line)
        if m:
            e = emit()
            if e is not None:
                yield e
            cur = (n, m.group(1), m.group(2), m.group(3))
            extra = []
        elif cur is not None and len(extra) < 50:
            extra.append(line)
    e = emit()
    if e is not None:
        yield e


class PartitionNames:
    """Finds which canary partition an entry names."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self._rx = re.compile("(?<![\\w.-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                              + ")(?![\\w-])") if names else None

    def of(self, e: Entry) -> str | None:
        if self._rx is None:
            return None
        m = self._rx.search(e.message) or self._rx.search(e.detail)
        return m.group(1) if m else None


@dataclass(frozen=True, slots=True)
class Said:
    """An entry of the broker's log, judged."""

    entry: Entry
    partition: str | None
    kind: str  # finding / expected
    why: str = ""  # for expected lines: why the rehearsal causes them

    def as_dict(self) -> dict[str, Any]:
        e = self.entry
        return {"partition": self.partition, "kind": self.kind, "level": e.level, "logger": e.logger,
                "words": e.words, "why": self.why or None, "line": e.line}


def judge(text: str, names: PartitionNames, *, sandbox: str, forced_recovery: bool,
          all_errors: bool) -> list[Said]:
    """The entries that matter. ``forced_recovery``: the rehearsal removed the clean-shutdown marker, so recovery
    lines are expected. ``all_errors``: an ERROR/FATAL entry naming no canary partition is a finding too (while the
    broker loads the canary; during reads and produce only those about the partitions count)."""
    out: list[Said] = []
    for e in entries(text, sandbox):
        if e.logger == REQUEST_LOGGER or e.level in ("TRACE", "DEBUG"):
            continue
        part = names.of(e)
        if forced_recovery and _FORCED_RECOVERY.search(e.message):
            if part is not None:
                out.append(Said(e, part, "expected", "recovery forced by the rehearsal: the broker validates every "
                                                     "batch"))
            continue
        why = next((w for rx, w in EXPECTED if rx.search(e.words)), None)
        if why is not None:
            if part is not None or e.level in ("WARN", "ERROR", "FATAL"):
                out.append(Said(e, part, "expected", why))
            continue
        if e.level == "INFO":
            if part is not None and _FORCED_RECOVERY.search(e.message):
                out.append(Said(e, part, "finding"))  # a recovery the broker chose (after a clean shutdown)
            continue
        if part is not None or (e.level in ("ERROR", "FATAL") and all_errors):
            out.append(Said(e, part, "finding"))
    return out


@dataclass(frozen=True, slots=True)
class Loaded:
    partition: str
    segments: int
    log_start_offset: int
    log_end_offset: int
    words: str


def loaded(text: str, names: Sequence[str], sandbox: str) -> dict[str, Loaded]:
    """The canary partitions the broker says it loaded."""
    wanted = set(names)
    out = {}
    for e in entries(text, sandbox):
        if "Completed load of" not in e.message:
            continue
        m = _LOADED.search(e.message)
        if m and m.group(1) in wanted:
            out[m.group(1)] = Loaded(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), e.message)
    return out


_FAILED = re.compile(r"Error while loading logs in \S*?/([^/\s]+) in ")


def failed_loads(text: str, names: Sequence[str]) -> set[str]:
    """The canary partitions the broker says it could not load (``Error while loading logs in <dir> in Nms``)."""
    wanted = set(names)
    return {m.group(1) for m in _FAILED.finditer(text) if m.group(1) in wanted}


@dataclass(frozen=True, slots=True)
class RequestCost:
    """What the broker logged about one request it completed (3.x, deprecated API versions)."""

    api_key: int
    version: int
    correlation_id: int
    total_ms: float
    conversion_ms: float  # messageConversionsTime (0 when none)
    temporary_memory_bytes: int
    records_size: int  # recordsSizeInBytes of the response's first partition (fetch) or the request's (produce)


def request_costs(text: str, client_id: str) -> dict[int, RequestCost]:
    """By correlation id, the ``kafka.request.logger`` entries of requests ``client_id`` sent."""
    out: dict[int, RequestCost] = {}
    for e in entries(text):
        if e.logger != REQUEST_LOGGER or not e.message.startswith("Completed request:"):
            continue
        try:
            doc = json.loads(e.message[len("Completed request:"):])
            head = doc["requestHeader"]
            if head.get("clientId") != client_id:
                continue
            size = _records_size(doc)
            out[int(head["correlationId"])] = RequestCost(
                int(head["requestApiKey"]), int(head["requestApiVersion"]), int(head["correlationId"]),
                float(doc.get("totalTimeMs", 0.0)), float(doc.get("messageConversionsTime", 0.0)),
                int(doc.get("temporaryMemoryBytes", 0)), size)
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _records_size(doc: dict[str, Any]) -> int:
    for side, topics_key, parts_key in (("response", "responses", "partitions"),
                                        ("request", "topicData", "partitionData")):
        try:
            part = doc[side][topics_key][0][parts_key][0]
            return int(part["recordsSizeInBytes"])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return 0
