// The producer-state step of LogSegment.recover (Kafka 3.9) for control batches, run with kafka-clients 3.9.1.
//
// For each file: walk its batches as recover() does (FileRecords.batches(), ensureValid), and for a v2 batch
// with a producer id that is a control batch do what ProducerAppendInfo.append (storage module, not in
// kafka-clients) does with it: batch.iterator(), hasNext(), next(), EndTransactionMarker.deserialize(record).
// Prints "<file>\tok" or "<file>\t<exception simple class name>\t<message>" (the first failure).
//
// Run (JDK 11+ source-file mode): java -cp <kafka-ref classpath.txt> ControlStep.java FILE...
import java.io.File;
import java.util.Iterator;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;

public class ControlStep {
    public static void main(String[] args) throws Exception {
        for (String f : args) {
            FileRecords records = FileRecords.open(new File(f), false);
            String out = "ok";
            try {
                for (FileChannelRecordBatch batch : records.batches()) {
                    batch.ensureValid();
                    if (batch.magic() >= RecordBatch.MAGIC_VALUE_V2 && batch.hasProducerId() && batch.isControlBatch()) {
                        Iterator<Record> it = batch.iterator();
                        if (it.hasNext())
                            EndTransactionMarker.deserialize(it.next());
                    }
                }
            } catch (Throwable t) {
                out = t.getClass().getSimpleName() + "\t" + String.valueOf(t.getMessage()).replace('\n', ' ');
            } finally {
                records.closeHandlers();
            }
            System.out.println(f + "\t" + out);
        }
    }
}
