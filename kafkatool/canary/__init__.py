"""``kafkatool canary``: inventory a log dir's message formats, plan a format upgrade, and rehearse it.

* :mod:`.inventory` walks every partition: bytes/batches/records per magic and codec, timestamp types,
  zstd, transactional/idempotent data, control batches, largest batches, compaction evidence;
* :mod:`.clients` maps consumer client versions to the Fetch versions and message formats they read;
* :mod:`.plan` turns both into upgrade phases, risks and down-conversion costs (via :mod:`kafkatool.fetch.simulate`);
* :mod:`.run` converts chosen partitions into a work dir W (originals copied there, manifest written);
* :mod:`.verify` proves record-level equivalence of every canary partition with its original;
* :mod:`.apply` swaps verified canary partitions into the log dir the way the broker's ``LogLoader``
  completes ``.swap`` files, and rolls them back; :mod:`.loader` predicts what a broker start would do.
"""
