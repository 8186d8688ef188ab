package kafkaref;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Many kafka-ref commands in one JVM: for test suites, where JVM start-up costs more than the work.
 *
 * stdin: one command per line, its arguments separated by TAB (e.g. "dump\t--in\tF\t--deep").
 * stdout: for each command, exactly the JSON lines `kafka-ref <command> ...` prints, then one line
 * {"type":"batch-end","rc":N} with the exit code that run would have had. Each command goes through
 * KafkaRef.run with KafkaRef.main's error handling; commands share nothing but the JVM (every command opens
 * and closes its own files). Added to kafkatool's copy of kafka-ref; no Kafka logic here.
 */
public final class KafkaRefBatch {
    private KafkaRefBatch() { }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16),
            false, StandardCharsets.UTF_8);
        KafkaRef.OUT = out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty())
                continue;
            String[] argv = line.split("\t", -1);
            int rc;
            try {
                rc = KafkaRef.run(argv);
            } catch (KafkaRef.UsageException e) {
                System.err.println("kafka-ref: " + e.getMessage());
                rc = 1;
            } catch (Throwable t) {
                out.println(KafkaRef.errorJson("error", t).toString());
                t.printStackTrace(System.err);
                rc = 1;
            }
            out.println("{\"type\":\"batch-end\",\"rc\":" + rc + "}");
            out.flush();
        }
        out.flush();
        System.exit(0);
    }
}
