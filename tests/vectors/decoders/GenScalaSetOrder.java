// Generates scala-2.13-hashset-order.txt: the order in which Kafka 3.9's TransactionLog.formatRecordKeyAndValue
// prints a transaction's partitions. It replays readTxnRecordValue's
//   topicPartitions = mutable.Set.empty[TopicPartition]
//   per PartitionsSchema: addPartitions(partitionIds.asScala.map(id => new TopicPartition(topic, id)).toSet)  // ++=
// with the real Scala 2.13 collections (scala-library from pyspark) and kafka-clients 3.9.1's TopicPartition,
// then prints topicPartitions.mkString("[", ",", "]").
// Each line: groups as topic:p,p,...;topic:p,...|printed set
import java.util.*;
import org.apache.kafka.common.TopicPartition;
import scala.jdk.javaapi.CollectionConverters;

public class GenScalaSetOrder {
  public static void main(String[] args) {
    SplittableRandom rnd = new SplittableRandom(20241122L);
    String[] topics = {"orders", "payments", "txtest", "a", "output-topic", "__consumer_offsets", "t\u00e9l\u00e9", "x"};
    List<List<Object[]>> cases = new ArrayList<>();
    for (int c = 0; c < 60; c++) {
      List<Object[]> groups = new ArrayList<>();
      int ngroups = 1 + rnd.nextInt(c < 30 ? 3 : 6);
      for (int g = 0; g < ngroups; g++) {
        String topic = topics[rnd.nextInt(topics.length)];
        int n = c % 10 == 0 ? 1 + rnd.nextInt(40) : 1 + rnd.nextInt(7);
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) ids.add(rnd.nextInt(c % 3 == 0 ? 64 : 12));
        groups.add(new Object[]{topic, ids});
      }
      cases.add(groups);
    }
    for (List<Object[]> groups : cases) {
      scala.collection.mutable.HashSet<TopicPartition> set = new scala.collection.mutable.HashSet<>();
      StringBuilder in = new StringBuilder();
      for (Object[] g : groups) {
        String topic = (String) g[0];
        @SuppressWarnings("unchecked") List<Integer> ids = (List<Integer>) g[1];
        List<TopicPartition> tps = new ArrayList<>();
        for (int id : ids) tps.add(new TopicPartition(topic, id));
        scala.collection.immutable.Set<TopicPartition> s = CollectionConverters.asScala(tps).toSet();
        set.addAll(s);
        if (in.length() > 0) in.append(';');
        in.append(topic).append(':');
        for (int i = 0; i < ids.size(); i++) in.append(i == 0 ? "" : ",").append(ids.get(i));
      }
      System.out.println(in + "|" + set.mkString("[", ",", "]"));
    }
  }
}
