"""``kafkatool metadata``'s engine: the KRaft cluster metadata image rebuilt offline from
``__cluster_metadata-0`` (latest snapshot, then the log after it; or as of an offset or a time), and the
difference between two points.
"""

from kafkatool.metadata.diff import MetadataChange, diff_images
from kafkatool.metadata.image import MetadataImage, Partition, Topic
from kafkatool.metadata.loader import ImageResult, MetadataFinding, MetadataLog, SnapshotFile, build_image

__all__ = [
    "ImageResult", "MetadataChange", "MetadataFinding", "MetadataImage", "MetadataLog", "Partition",
    "SnapshotFile", "Topic", "build_image", "diff_images",
]
