// Writes whole FetchResponse v0..v3 sends with kafka-clients 3.9.1's own classes, the way KafkaApis does for a
// down-converting fetch: each partition's records are a LazyDownConversionRecords over a FileRecords slice
// (FileRecords.searchForOffsetWithSize from position 0, slice(position, size)), or
// FetchResponse.partitionResponse(idx, UNSUPPORTED_COMPRESSION_TYPE) when its constructor throws; the response is
// FetchResponse.of(NONE, throttle, 0, partitions).toSend(new ResponseHeader(correlationId, 0), version), written
// to a file until completed(). Origin of tests/vectors/fetch_response/*.bin (see README.md there).
//
// usage: FetchResponseGolden OUT VERSION CORRELATION_ID THROTTLE_MS SPEC...
//   SPEC = topic:partition:logFile:fetchOffset:size:highWatermark   (size -1: empty records, "out of range"
//          style: MemoryRecords.EMPTY with error OFFSET_OUT_OF_RANGE and high watermark -1)
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnsupportedCompressionTypeException;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.network.TransferableChannel;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.LazyDownConversionRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Records;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ResponseHeader;
import org.apache.kafka.common.utils.Time;

public final class FetchResponseGolden {
    static final class Sink implements TransferableChannel {
        final FileChannel ch;
        Sink(FileChannel ch) { this.ch = ch; }
        @Override public boolean hasPendingWrites() { return false; }
        @Override public long transferFrom(FileChannel fc, long position, long count) throws java.io.IOException {
            return fc.transferTo(position, count, ch);
        }
        @Override public int write(ByteBuffer src) throws java.io.IOException { return ch.write(src); }
        @Override public long write(ByteBuffer[] srcs, int offset, int length) throws java.io.IOException {
            return ch.write(srcs, offset, length);
        }
        @Override public long write(ByteBuffer[] srcs) throws java.io.IOException { return ch.write(srcs); }
        @Override public boolean isOpen() { return ch.isOpen(); }
        @Override public void close() throws java.io.IOException { ch.close(); }
    }

    public static void main(String[] args) throws Exception {
        File out = new File(args[0]);
        short version = Short.parseShort(args[1]);
        int correlationId = Integer.parseInt(args[2]);
        int throttle = Integer.parseInt(args[3]);
        byte toMagic = version <= 1 ? (byte) 0 : (byte) 1;
        LinkedHashMap<TopicIdPartition, FetchResponseData.PartitionData> data = new LinkedHashMap<>();
        for (int i = 4; i < args.length; i++) {
            String[] f = args[i].split(":");
            TopicPartition tp = new TopicPartition(f[0], Integer.parseInt(f[1]));
            long fetchOffset = Long.parseLong(f[3]);
            int size = Integer.parseInt(f[4]);
            long hw = Long.parseLong(f[5]);
            TopicIdPartition tip = new TopicIdPartition(Uuid.ZERO_UUID, tp);
            if (size < 0) {
                // ReplicaManager's error path (e.g. OffsetOutOfRange): EMPTY records, then KafkaApis still wraps them.
                data.put(tip, new FetchResponseData.PartitionData().setPartitionIndex(tp.partition())
                    .setErrorCode(Errors.OFFSET_OUT_OF_RANGE.code()).setHighWatermark(-1L)
                    .setRecords(new LazyDownConversionRecords(tp, MemoryRecords.EMPTY, toMagic, fetchOffset,
                        Time.SYSTEM)));
                continue;
            }
            FileRecords fr = FileRecords.open(new File(f[2]), false);
            FileRecords.LogOffsetPosition lop = fr.searchForOffsetWithSize(fetchOffset, 0);
            int start = lop == null ? fr.sizeInBytes() : lop.position;
            Records slice = fr.slice(start, size);
            try {
                data.put(tip, new FetchResponseData.PartitionData().setPartitionIndex(tp.partition())
                    .setErrorCode(Errors.NONE.code()).setHighWatermark(hw)
                    .setRecords(new LazyDownConversionRecords(tp, slice, toMagic, fetchOffset, Time.SYSTEM)));
            } catch (UnsupportedCompressionTypeException e) {
                data.put(tip, FetchResponse.partitionResponse(tp.partition(), Errors.UNSUPPORTED_COMPRESSION_TYPE));
            }
        }
        FetchResponse response = FetchResponse.of(Errors.NONE, throttle, 0, data);
        Send send = response.toSend(new ResponseHeader(correlationId, (short) 0), version);
        try (FileChannel ch = FileChannel.open(out.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
            StandardOpenOption.TRUNCATE_EXISTING)) {
            Sink sink = new Sink(ch);
            while (!send.completed()) send.writeTo(sink);
        }
        System.out.println("{\"out\":\"" + out + "\",\"version\":" + version + ",\"send_size\":" + send.size() + "}");
    }
}
