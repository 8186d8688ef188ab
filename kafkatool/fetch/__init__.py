"""``kafkatool fetch-sim``'s engine: what a 3.9 broker sends a consumer of an older message format.
"""

from kafkatool.fetch.report import partition_problem
from kafkatool.fetch.response import error_name
from kafkatool.fetch.simulate import (
    DEFAULT_PARTITION_MAX_BYTES,
    FetchOptions,
    PartitionLog,
    PartitionRequest,
    simulate,
)

__all__ = ["DEFAULT_PARTITION_MAX_BYTES", "FetchOptions", "PartitionLog", "PartitionRequest", "error_name",
           "partition_problem", "simulate"]
