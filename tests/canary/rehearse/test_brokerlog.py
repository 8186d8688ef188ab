"""kafkatool.canary.rehearse.brokerlog: a broker log (lines as the sandbox's log4j pattern writes them, the messages
as Kafka 3.9 and 4.4 word them) split into entries and judged."""

from __future__ import annotations

from kafkatool.canary.rehearse import brokerlog as bl

SANDBOX = "/tmp/kafkatool-rehearse-abc"
LOG = f"""\
[2026-11-26 14:57:10,001] INFO Loading logs from log dirs ArraySeq({SANDBOX}/data) (kafka.log.LogManager)
[2026-11-26 14:57:10,120] WARN [LogLoader partition=orders-10, dir={SANDBOX}/data] Found invalid messages in log \
segment {SANDBOX}/data/orders-10/00000000000000000386.log at byte offset 4096. (kafka.log.LogLoader)
org.apache.kafka.common.errors.CorruptRecordException: Record is corrupt (stored crc = 1, computed crc = 2)
\tat org.apache.kafka.common.record.DefaultRecordBatch.ensureValid(DefaultRecordBatch.java:163)
\tat kafka.log.LogSegment.recover(LogSegment.java:480)
[2026-11-26 14:57:10,130] WARN [LogLoader partition=orders-10, dir={SANDBOX}/data] Corruption found in segment 386, \
truncating to offset 400 (kafka.log.LogLoader)
[2026-11-26 14:57:10,140] INFO [LogLoader partition=orders-1, dir={SANDBOX}/data] Recovering unflushed segment 0. \
0/2 recovered for orders-1. (kafka.log.LogLoader)
[2026-11-26 14:57:10,150] INFO Completed load of Log(dir={SANDBOX}/data/orders-1, topicId=T3vdrAnoTt6UdOjRUSplRw, \
topic=orders, partition=1, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=2086) with 6 segments, \
local-log-start-offset 0 and log-end-offset 2086 in 155ms (1/2 completed in {SANDBOX}/data) (kafka.log.LogManager)
[2026-11-26 14:57:10,160] INFO Completed load of Log(dir={SANDBOX}/data/orders-10, topicId=0x5EFnxwSkKMqDz_AD7QGA, \
topic=orders, partition=10, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=400) with 1 segments, \
local-log-start-offset 0 and log-end-offset 400 in 12ms (2/2 completed in {SANDBOX}/data) \
(org.apache.kafka.storage.internals.log.LogManager)
[2026-11-26 14:57:11,000] WARN [LeaderEpochCache orders-1] New epoch entry EpochEntry(epoch=0, startOffset=2086) \
caused truncation of conflicting entries [EpochEntry(epoch=5, startOffset=417)]. Cache now contains 1 entries. \
(org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache)
[2026-11-26 14:57:11,100] WARN [QuorumController id=1] Performing controller activation. \
(org.apache.kafka.controller.QuorumController)
[2026-11-26 14:57:11,200] ERROR Closing socket for 127.0.0.1:1-127.0.0.1:2-0-1 because of error \
(kafka.network.Processor)
org.apache.kafka.common.errors.UnsupportedVersionException: Received request for api with key 1 (Fetch) and \
unsupported version 3
[2026-11-26 14:57:11,300] ERROR Error while loading log dir {SANDBOX}/other (kafka.log.LogManager)
java.io.IOException: boom
[2026-11-26 14:57:12,000] INFO Completed request:{{"isForwarded":false,"requestHeader":{{"requestApiKey":1,\
"requestApiVersion":1,"correlationId":11,"clientId":"kafkatool-rehearse","requestApiKeyName":"FETCH",\
"requestApiVersionDeprecated":true}},"request":{{}},"response":{{"throttleTimeMs":0,"responses":[{{"topic":"t",\
"partitions":[{{"partitionIndex":0,"errorCode":0,"highWatermark":4,"recordsSizeInBytes":231}}]}}]}},\
"totalTimeMs":1.999,"temporaryMemoryBytes":351,"messageConversionsTime":0.208}} (kafka.request.logger)
[2026-11-26 14:57:12,001] INFO Completed request:{{"requestHeader":{{"requestApiKey":1,"requestApiVersion":1,\
"correlationId":12,"clientId":"someone-else"}},"totalTimeMs":1.0}} (kafka.request.logger)
"""
NAMES = bl.PartitionNames(["orders-1", "orders-10"])


def test_entries_keep_the_exception_and_hide_the_sandbox():
    es = list(bl.entries(LOG, SANDBOX))
    assert [e.level for e in es[:3]] == ["INFO", "WARN", "WARN"]
    invalid = es[1]
    assert invalid.logger == "kafka.log.LogLoader" and invalid.line == 2
    assert invalid.message.endswith("<sandbox>/data/orders-10/00000000000000000386.log at byte offset 4096.")
    assert invalid.detail == ("org.apache.kafka.common.errors.CorruptRecordException: Record is corrupt (stored crc = "
                              "1, computed crc = 2)")
    assert invalid.words == f"{invalid.message} [{invalid.detail}]"
    assert SANDBOX not in "".join(e.words for e in es)


def test_partition_names_do_not_take_a_prefix_for_a_name():
    es = list(bl.entries(LOG, SANDBOX))
    assert [NAMES.of(e) for e in es[:4]] == [None, "orders-10", "orders-10", "orders-1"]


def test_judge_while_loading():
    said = bl.judge(LOG, NAMES, sandbox=SANDBOX, forced_recovery=False, all_errors=True)
    findings = [(s.partition, s.entry.message.split("] ")[-1][:40]) for s in said if s.kind == "finding"]
    assert findings == [("orders-10", "Found invalid messages in log segment <s"),
                        ("orders-10", "Corruption found in segment 386, truncat"),
                        ("orders-1", "Recovering unflushed segment 0. 0/2 reco"),  # not forced: the broker chose it
                        (None, "Error while loading log dir <sandbox>/ot")]
    expected = [s for s in said if s.kind == "expected"]
    assert [(s.partition, "epoch" in s.why or "refuses" in s.why) for s in expected] == [("orders-1", True),
                                                                                         (None, True)]


def test_judge_with_recovery_forced_and_after_the_load():
    said = bl.judge(LOG, NAMES, sandbox=SANDBOX, forced_recovery=True, all_errors=False)
    recovering = [s for s in said if "Recovering unflushed" in s.entry.message]
    assert [(s.kind, s.partition) for s in recovering] == [("expected", "orders-1")]
    # without all_errors an ERROR naming no canary partition is not the rehearsal's business
    assert not [s for s in said if s.kind == "finding" and s.partition is None]
    assert {s.partition for s in said if s.kind == "finding"} == {"orders-10"}


def test_loaded_reads_3_9_and_4_x_lines():
    got = bl.loaded(LOG, ["orders-1", "orders-10", "orders-2"], SANDBOX)
    assert sorted(got) == ["orders-1", "orders-10"]
    assert (got["orders-1"].segments, got["orders-1"].log_end_offset) == (6, 2086)
    o10 = got["orders-10"]
    assert (o10.segments, o10.log_start_offset, o10.log_end_offset) == (1, 0, 400)


def test_request_costs_are_the_broker_measure_of_our_requests_only():
    costs = bl.request_costs(LOG, "kafkatool-rehearse")
    assert list(costs) == [11]
    c = costs[11]
    assert (c.api_key, c.version, c.temporary_memory_bytes, c.conversion_ms, c.records_size) == (1, 1, 351, 0.208, 231)


def test_failed_loads():
    text = (f"[2026-11-26 14:57:10,150] INFO Error while loading logs in {SANDBOX}/data/orders-1 in 3ms (1/2 "
            f"completed in {SANDBOX}/data) (kafka.log.LogManager)\n")
    assert bl.failed_loads(text, ["orders-1", "orders-10"]) == {"orders-1"}


def test_a_coordinator_load_overtaken_by_a_newer_epoch_is_expected_not_a_finding():
    # Kafka 4.4's words, from a rehearsal whose reads and produce all passed (a restarted KRaft broker takes
    # leadership again as it is unfenced, and the group coordinator drops the load begun at the older epoch)
    text = ("[2026-11-26 19:41:02,313] ERROR [GroupCoordinator id=1] Failed to load metadata from __consumer_offsets-0 "
            "with epoch 4 due to Stopped loading records from __consumer_offsets-0 because the partition is not online "
            "or is no longer the leader.. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)\n"
            "org.apache.kafka.common.errors.NotLeaderOrFollowerException: Stopped loading records from "
            "__consumer_offsets-0 because the partition is not online or is no longer the leader.\n")
    names = bl.PartitionNames(["__consumer_offsets-0", "orders-1"])
    said = bl.judge(text, names, sandbox=SANDBOX, forced_recovery=False, all_errors=True)
    assert [(s.kind, s.partition) for s in said] == [("expected", "__consumer_offsets-0")]
    assert "newer leader epoch" in said[0].why
    # the same partition's failed log load stays a finding
    failed = text.replace("Failed to load metadata from __consumer_offsets-0 with epoch 4 due to Stopped loading "
                          "records from __consumer_offsets-0 because the partition is not online or is no longer the "
                          "leader..", "Error while loading log dir <d> for __consumer_offsets-0").split("\n")[0]
    said = bl.judge(failed + "\n", names, sandbox=SANDBOX, forced_recovery=False, all_errors=True)
    assert [(s.kind, s.partition) for s in said] == [("finding", "__consumer_offsets-0")]


def test_a_controller_registration_sent_before_its_controller_is_active_is_expected_not_a_finding():
    # Kafka 4.4's words on a fast start of a combined (broker and controller) node: the registration is refused and
    # sent again; any other failure of a controller registration stays a finding
    head = ("[2026-11-26 22:10:41,907] ERROR [ControllerApis nodeId=1] Unexpected error handling request "
            "RequestHeader(apiKey=CONTROLLER_REGISTRATION, apiVersion=0, clientId=1, correlationId=0, headerVersion=2) "
            "-- ControllerRegistrationRequestData(controllerId=1, incarnationId=btfTqkyfTL6XjxjkbWr8TQ) with context "
            "RequestContext(header=RequestHeader(apiKey=CONTROLLER_REGISTRATION)) (kafka.server.ControllerApis)\n")
    names = bl.PartitionNames(["orders-1"])
    refused = head + ("java.util.concurrent.CompletionException: org.apache.kafka.common.errors."
                      "NotControllerException: The active controller appears to be node 1.\n"
                      "\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(Unknown Source)\n")
    said = bl.judge(refused, names, sandbox=SANDBOX, forced_recovery=False, all_errors=True)
    assert [(s.kind, s.partition) for s in said] == [("expected", None)]
    assert "registers again" in said[0].why
    other = head + "java.util.concurrent.CompletionException: java.lang.IllegalStateException: boom\n"
    said = bl.judge(other, names, sandbox=SANDBOX, forced_recovery=False, all_errors=True)
    assert [(s.kind, s.partition) for s in said] == [("finding", None)]
