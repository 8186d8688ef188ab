"""One connection to a broker for raw protocol requests: size-prefixed frames out and in, every wait bounded.

For what a client library would hide: the exact bytes of a FetchRequest v0-v3 response (down-converted by the
broker), read whole and handed back with their size prefix (see :mod:`kafkatool.fetch.request` and
``kafkatool.fetch.response.parse_response``).
"""

from __future__ import annotations

import socket
import struct
from types import TracebackType

from kafkatool.errors import KafkaToolError

_I32 = struct.Struct(">i")
DEFAULT_MAX_RESPONSE = 256 << 20


class WireError(KafkaToolError):
    """The broker closed the connection, timed out, or sent a frame that cannot be a response."""


class BrokerConnection:
    def __init__(self, host: str, port: int, *, timeout: float = 30.0,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE) -> None:
        self.where = f"{host}:{port}"
        self.max_response_bytes = max_response_bytes
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise WireError(f"cannot connect to {self.where}: {e.strerror or e}") from None

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            except OSError as e:  # socket.timeout included
                raise WireError(f"{self.where}: no response ({e})") from None
            if not chunk:
                raise WireError(f"{self.where} closed the connection after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def roundtrip(self, request: bytes) -> bytes:
        """Send one size-prefixed request; return the size-prefixed response, whole."""
        try:
            self.sock.sendall(request)
        except OSError as e:
            raise WireError(f"{self.where}: cannot send ({e})") from None
        head = self._read(4)
        (size,) = _I32.unpack(head)
        if not 4 <= size <= self.max_response_bytes:
            raise WireError(f"{self.where} sent a response size of {size} bytes")
        return head + self._read(size)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
