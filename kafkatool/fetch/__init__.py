"""``kafkatool fetch-sim``'s engine: what a 3.9 broker sends a consumer of an older message format.
"""

from kafkatool.fetch.report import partition_problem
from kafkatool.fetch.request import FetchPartition, encode_fetch_request
from kafkatool.fetch.response import ParsedPartition, ParsedResponse, error_name, parse_response
from kafkatool.fetch.simulate import (
    DEFAULT_PARTITION_MAX_BYTES,
    FetchOptions,
    PartitionLog,
    PartitionRequest,
    simulate,
)

__all__ = ["DEFAULT_PARTITION_MAX_BYTES", "FetchOptions", "FetchPartition", "ParsedPartition", "ParsedResponse",
           "PartitionLog", "PartitionRequest", "encode_fetch_request", "error_name", "parse_response",
           "partition_problem", "simulate"]
