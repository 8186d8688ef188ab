"""A client of the sandbox broker: one connection (opened again after the broker closes it), correlation ids, and
the requests of :mod:`.protocol` as calls. Every wait is bounded (the socket timeout, and ``deadline`` loops)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TypeVar

from kafkatool.canary.rehearse import protocol as kp
from kafkatool.canary.wire import BrokerConnection, WireError
from kafkatool.errors import KafkaToolError
from kafkatool.fetch import FetchPartition, ParsedResponse, encode_fetch_request, parse_response

CLIENT_ID = "kafkatool-rehearse"
T = TypeVar("T")


class SandboxClient:
    def __init__(self, host: str, port: int, *, timeout: float = 60.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._conn: BrokerConnection | None = None
        self._next = 1
        self.sent: list[tuple[int, int, int]] = []  # (api key, version, correlation id) of every request sent

    def correlation_id(self) -> int:
        cid = self._next
        self._next += 1
        return cid

    def _roundtrip(self, api_key: int, version: int, cid: int, data: bytes) -> bytes:
        if self._conn is None:
            self._conn = BrokerConnection(self.host, self.port, timeout=self.timeout)
        self.sent.append((api_key, version, cid))
        try:
            return self._conn.roundtrip(data)
        except WireError:
            self.close()  # the broker closed it (a request it refuses): the next call connects again
            raise

    def call(self, api_key: int, version: int, encode: Callable[[int], bytes],
             parse: Callable[[bytes, int], T]) -> T:
        cid = self.correlation_id()
        return parse(self._roundtrip(api_key, version, cid, encode(cid)), cid)

    # ------------------------------------------------------------------ requests

    def api_versions(self) -> kp.ApiVersions:
        return self.call(kp.API_API_VERSIONS, kp.API_VERSIONS_VERSION,
                         lambda c: kp.encode_api_versions(c, CLIENT_ID), kp.parse_api_versions)

    def metadata(self, topics: Sequence[str]) -> list[kp.TopicMeta]:
        return self.call(kp.API_METADATA, kp.METADATA_VERSION, lambda c: kp.encode_metadata(c, CLIENT_ID, topics),
                         kp.parse_metadata)

    def create_topics(self, topics: Sequence[kp.NewTopic], timeout_ms: int) -> list[kp.TopicResult]:
        return self.call(kp.API_CREATE_TOPICS, kp.CREATE_TOPICS_VERSION,
                         lambda c: kp.encode_create_topics(c, CLIENT_ID, topics, timeout_ms), kp.parse_create_topics)

    def find_coordinator(self, key: str, key_type: int) -> tuple[int, str | None]:
        return self.call(kp.API_FIND_COORDINATOR, kp.FIND_COORDINATOR_VERSION,
                         lambda c: kp.encode_find_coordinator(c, CLIENT_ID, key, key_type), kp.parse_find_coordinator)

    def produce(self, version: int, topic: str, partition: int, records: bytes) -> kp.ProduceResult:
        return self.call(kp.API_PRODUCE, version,
                         lambda c: kp.encode_produce(version, c, CLIENT_ID, topic, partition, records),
                         lambda data, c: kp.parse_produce(data, c, version))

    def modern_fetch(self, parts: Sequence[kp.ModernFetch], *, isolation: int) -> kp.ModernFetchResponse:
        return self.call(kp.API_FETCH, kp.MODERN_FETCH_VERSION,
                         lambda c: kp.encode_modern_fetch(c, CLIENT_ID, parts, isolation=isolation),
                         kp.parse_modern_fetch)

    def old_fetch(self, version: int, part: FetchPartition) -> tuple[int, ParsedResponse]:
        """A FetchRequest v0-v3 as an old consumer sends it; returns (correlation id, parsed response)."""
        cid = self.correlation_id()
        data = self._roundtrip(kp.API_FETCH, version, cid,
                               encode_fetch_request(version, cid, [part], max_wait_ms=0, min_bytes=0,
                                                    client_id=CLIENT_ID))
        parsed = parse_response(data, version)
        if parsed.correlation_id != cid:
            raise kp.ProtocolError(f"Fetch v{version}: the response has correlation id {parsed.correlation_id}, "
                                   f"not {cid}")
        return cid, parsed

    # ------------------------------------------------------------------ waits

    def until(self, what: str, check: Callable[[], bool], timeout: float, poll: float = 0.05) -> None:
        """Wait (bounded) until ``check()``; a request failing meanwhile counts as not yet."""
        deadline = time.monotonic() + timeout
        last: str | None = None
        while True:
            try:
                if check():
                    return
            except KafkaToolError as e:
                last = e.message
            if time.monotonic() > deadline:
                raise KafkaToolError(f"{what}: not within {timeout:g} s" + (f" (last: {last})" if last else ""))
            time.sleep(poll)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> SandboxClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
