"""kafkatool's error tree and exit codes.

One small tree, wrapped at one point (``kafkatool.commands.app.main``): every failure the tool can
explain is a :class:`KafkaToolError` carrying the exit code it maps to and, where the failure is about
bytes on disk, the file and byte position. Low-level parsers raise with a position relative to the
buffer they were given; the layer that knows the file adds the path and absolute position with
:meth:`KafkaToolError.at`.
"""

from __future__ import annotations

import enum
import os

from kafkatool.util.printable import shown


class ExitCode(enum.IntEnum):
    """The shared exit codes of every kafkatool command (documented in the man pages)."""

    OK = 0
    FINDINGS = 1  # corruption, mismatch, failed check or canary
    USAGE = 2  # bad option or argument, unreadable input, I/O error
    REFUSED = 3  # a live broker holds the log dir's .lock
    SOFTWARE = 70  # an internal error: a bug in kafkatool (sysexits.h's EX_SOFTWARE)
    INTERRUPTED = 130  # SIGINT


class KafkaToolError(Exception):
    """Base class: a failure kafkatool can explain in one line."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 position: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = os.fspath(path) if path is not None else None
        self.position = position
        # The request field the error is about, by its library name (``to_magic``): the CLI shows the option that
        # sets it (before a usage error's message; after one about bytes on disk, whose outcome that value would
        # change). The library's own words never name a command-line flag.
        self.field = field

    def at(self, path: str | os.PathLike[str] | None = None, base: int = 0) -> KafkaToolError:
        """Attach the file name and shift the position by ``base`` (the buffer's file offset)."""
        if path is not None and self.path is None:
            self.path = os.fspath(path)
        if self.position is not None:
            self.position += base
        elif base:
            self.position = base
        return self

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = shown(self.path)
            if self.position is not None:
                where += f" at byte {self.position}"
            where += ": "
        elif self.position is not None:
            where = f"at byte {self.position}: "
        elif self.field is not None:
            where = f"{self.field}: "
        return where + self.message


class UsageError(KafkaToolError):
    """Bad options or arguments (exit 2)."""


class InputError(KafkaToolError):
    """An input that cannot be used at all: missing, unreadable, wrong file type (exit 2)."""


class NotRegularFileError(InputError):
    """An input that is not a regular file: a FIFO, a directory, a device, a socket, a dangling symlink or a
    symlink loop (``kafkatool.util.regular``). Exit 2 for a file named on the command line; a file met in a walk
    of a partition or log dir (``walked``) is a ``not-a-regular-file`` finding (exit 1)."""

    finding = "not-a-regular-file"

    def __init__(self, kind: str, *, path: str | os.PathLike[str] | None = None, walked: bool = False) -> None:
        super().__init__(f"not a regular file ({kind})", path=path)
        self.kind = kind
        if walked:
            self.exit_code = ExitCode.FINDINGS


class CorruptDataError(KafkaToolError):
    """Bytes on disk that Kafka itself would reject (Kafka's CorruptRecordException/InvalidRecordException)."""

    exit_code = ExitCode.FINDINGS


class CorruptRecordError(CorruptDataError):
    """Framing or checksum damage: Kafka's ``CorruptRecordException``."""


class InvalidRecordError(CorruptDataError):
    """Well-framed bytes that do not decode: Kafka's ``InvalidRecordException``."""


class TruncatedError(CorruptDataError):
    """The data ends inside a structure (a torn tail rather than damage in the middle)."""


class UnsupportedCodecError(KafkaToolError):
    """A codec the operation cannot handle (zstd below magic 2, unknown codec id)."""

    exit_code = ExitCode.FINDINGS


class LimitExceededError(KafkaToolError):
    """A size limit was hit: decompression bomb, memory budget, hostile length field."""

    exit_code = ExitCode.FINDINGS


class BrokerLockHeldError(KafkaToolError):
    """A live broker holds the log dir's ``.lock``: refuse to write (exit 3)."""

    exit_code = ExitCode.REFUSED
