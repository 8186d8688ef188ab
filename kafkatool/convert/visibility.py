"""What dropping transaction markers does to old consumers: the records of aborted transactions they then read.

Message formats v0 and v1 have no control batches, so down-conversion drops every transaction marker
(``RecordsUtil.downConvert`` skips control batches, as the broker does when it down-converts for a Fetch below
v4). A consumer of the old format cannot tell an aborted transaction from a committed one: every record of a
transaction that ended in an ABORT marker becomes visible to it. :func:`transaction_outcomes` counts them by a
header walk of the source (a transactional data batch belongs to its producer's open transaction; the
producer's next marker ends it, COMMIT or ABORT), decoding only the one record of each control batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafkatool.errors import KafkaToolError
from kafkatool.record.batch import ControlRecordType
from kafkatool.record.default_records import DefaultRecordBatch, parse_control_type
from kafkatool.record.file_records import FileRecords


@dataclass(frozen=True, slots=True)
class TransactionOutcomes:
    commits: int = 0  # COMMIT markers
    aborts: int = 0  # ABORT markers
    aborted_records: int = 0  # records of aborted transactions: visible to old consumers once the markers are gone
    open_records: int = 0  # records of transactions with no marker yet (at the log end)

    def warning(self) -> str | None:
        """The operator's line about it (None: no marker was dropped)."""
        if not self.commits and not self.aborts:
            return None
        text = (f"dropped {self.commits + self.aborts} transaction markers ({self.commits} commits, {self.aborts} "
                f"aborts), as Kafka's down-conversion does: formats v0/v1 have none; ")
        if self.aborted_records:
            text += (f"{self.aborted_records} records of {self.aborts} aborted transactions become visible to old "
                     "consumers as if committed")
        else:
            text += "no aborted records become visible"
        if self.open_records:
            text += f"; {self.open_records} records of transactions still open at the log end are visible too"
        return text


def transaction_outcomes(logs: Iterable[Path], limit: int | None = None) -> TransactionOutcomes:
    """Walk the ``.log`` files of one partition in offset order: markers and the records they end."""
    open_records: dict[int, int] = {}  # producer id -> records of its open transaction
    commits = aborts = aborted = 0
    for log in logs:
        if not log.exists():
            continue
        with FileRecords(log) as fr:
            try:
                for batch in fr.batches():
                    if type(batch) is not DefaultRecordBatch:
                        continue
                    h = batch.h
                    if not h.attributes & 0x10:  # not transactional
                        continue
                    pid = h.producer_id
                    if not h.attributes & 0x20:  # data
                        open_records[pid] = open_records.get(pid, 0) + h.records_count
                        continue
                    recs = batch.records(limit=limit)
                    kind = parse_control_type(recs[0].key) if recs else ControlRecordType.UNKNOWN
                    if kind == ControlRecordType.ABORT:
                        aborts += 1
                        aborted += open_records.pop(pid, 0)
                    elif kind == ControlRecordType.COMMIT:
                        commits += 1
                        open_records.pop(pid, None)
            except KafkaToolError:
                pass  # damage is the conversion's to report; the counts cover what came before it
    return TransactionOutcomes(commits, aborts, aborted, sum(open_records.values()))
