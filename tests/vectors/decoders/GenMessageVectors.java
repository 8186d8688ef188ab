// Generates tests/vectors/decoders/kafka-clients-3.9.1-messages.txt with kafka-clients 3.9.1's own generated
// message classes and JSON converters (the same generator that builds Kafka's group-coordinator records).
// Each line: name|version|hex of MessageUtil.toVersionPrefixedBytes(version, message)|Converter.write(message, version).toString()
// Build: javac -cp kafka-clients.jar:jackson-databind.jar:jackson-core.jar:jackson-annotations.jar GenMessageVectors.java
import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import com.fasterxml.jackson.databind.JsonNode;

public class GenMessageVectors {
  static String hex(byte[] b) { StringBuilder s = new StringBuilder(); for (byte x : b) s.append(String.format("%02x", x)); return s.toString(); }
  static void emit(String name, short v, ApiMessage m, JsonNode json) {
    System.out.println(name + "|" + v + "|" + hex(MessageUtil.toVersionPrefixedBytes(v, m)) + "|" + json.toString());
  }
  static ConsumerProtocolSubscription sub(boolean rich) {
    ConsumerProtocolSubscription s = new ConsumerProtocolSubscription();
    if (!rich) { s.setTopics(Arrays.asList("foo")); return s; }
    s.setTopics(Arrays.asList("orders", "pay\"ments\\", "caf\u00e9-\u65e5\u672c", "ctl\u0001\u001f\t\n\r\b\f/end"));
    s.setUserData(ByteBuffer.wrap(new byte[]{0, 1, 2, (byte) 0xfe, (byte) 0xff}));
    ConsumerProtocolSubscription.TopicPartitionCollection owned = new ConsumerProtocolSubscription.TopicPartitionCollection();
    owned.add(new ConsumerProtocolSubscription.TopicPartition().setTopic("orders").setPartitions(Arrays.asList(0, 2, 7)));
    owned.add(new ConsumerProtocolSubscription.TopicPartition().setTopic("empty").setPartitions(new ArrayList<>()));
    s.setOwnedPartitions(owned);
    s.setGenerationId(42);
    s.setRackId("rack-a");
    return s;
  }
  static ConsumerProtocolAssignment asg(boolean rich) {
    ConsumerProtocolAssignment a = new ConsumerProtocolAssignment();
    ConsumerProtocolAssignment.TopicPartitionCollection c = new ConsumerProtocolAssignment.TopicPartitionCollection();
    c.add(new ConsumerProtocolAssignment.TopicPartition().setTopic("orders").setPartitions(Arrays.asList(1, 3)));
    if (rich) c.add(new ConsumerProtocolAssignment.TopicPartition().setTopic("pay").setPartitions(Arrays.asList(-1, 2147483647)));
    a.setAssignedPartitions(c);
    if (rich) a.setUserData(ByteBuffer.wrap("userdata".getBytes()));
    return a;
  }
  public static void main(String[] args) {
    for (short v = 0; v <= 3; v++) {
      for (boolean rich : new boolean[]{false, true}) {
        ConsumerProtocolSubscription s = sub(rich);
        emit("ConsumerProtocolSubscription", v, s, ConsumerProtocolSubscriptionJsonConverter.write(s, v));
        ConsumerProtocolAssignment a = asg(rich);
        emit("ConsumerProtocolAssignment", v, a, ConsumerProtocolAssignmentJsonConverter.write(a, v));
      }
    }
    // Flexible version, nullable strings, uuid, nullable struct (KIP-893 int8 marker).
    ConsumerGroupHeartbeatResponseData hb = new ConsumerGroupHeartbeatResponseData()
        .setThrottleTimeMs(5).setErrorCode((short) 0).setErrorMessage(null).setMemberId("m-\u00e9")
        .setMemberEpoch(7).setHeartbeatIntervalMs(3000);
    emit("ConsumerGroupHeartbeatResponseData", (short) 0, hb, ConsumerGroupHeartbeatResponseDataJsonConverter.write(hb, (short) 0));
    hb.setAssignment(new ConsumerGroupHeartbeatResponseData.Assignment().setTopicPartitions(Arrays.asList(
        new ConsumerGroupHeartbeatResponseData.TopicPartitions().setTopicId(Uuid.fromString("Uj5wn_FqTXirEASvVZRY1w")).setPartitions(Arrays.asList(0, 1)),
        new ConsumerGroupHeartbeatResponseData.TopicPartitions().setTopicId(Uuid.ZERO_UUID).setPartitions(new ArrayList<>()))));
    hb.setErrorMessage("");
    emit("ConsumerGroupHeartbeatResponseData", (short) 0, hb, ConsumerGroupHeartbeatResponseDataJsonConverter.write(hb, (short) 0));
    // Tagged fields: written (and printed in JSON) only when they differ from their default.
    ApiVersionsResponseData av = new ApiVersionsResponseData().setErrorCode((short) 35).setThrottleTimeMs(0);
    av.apiKeys().add(new ApiVersionsResponseData.ApiVersion().setApiKey((short) 18).setMinVersion((short) 0).setMaxVersion((short) 3));
    emit("ApiVersionsResponseData", (short) 3, av, ApiVersionsResponseDataJsonConverter.write(av, (short) 3));
    av.setFinalizedFeaturesEpoch(9000000000L).setZkMigrationReady(true);
    av.supportedFeatures().add(new ApiVersionsResponseData.SupportedFeatureKey().setName("metadata.version").setMinVersion((short) 1).setMaxVersion((short) 21));
    emit("ApiVersionsResponseData", (short) 3, av, ApiVersionsResponseDataJsonConverter.write(av, (short) 3));
    emit("ApiVersionsResponseData", (short) 2, av.setFinalizedFeaturesEpoch(-1).setZkMigrationReady(false).setSupportedFeatures(new ApiVersionsResponseData.SupportedFeatureKeyCollection()),
        ApiVersionsResponseDataJsonConverter.write(av, (short) 2));
  }
}
