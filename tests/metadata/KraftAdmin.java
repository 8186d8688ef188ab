// A Kafka Admin client for tests/metadata: applies changes to a running KRaft broker and describes what it
// reports, as JSON on stdout (one document). Run with the broker's own classpath:
//   java -cp <kafka jars> KraftAdmin.java <bootstrap> <command>...
// Commands (applied in order, each waited for until the broker serves its effect: in a combined node the
// controller acknowledges a change once committed, and the broker's metadata cache applies it a moment later):
//   create:<topic>:<partitions>          delete:<topic>            partitions:<topic>:<total>
//   topic-config:<topic>:<key>=<value>   broker-config:<id>:<key>=<value>
//   quota:user:<name>:<key>=<value>      acl:<type>/<name>:<topic>:<operation>   describe
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.*;
import org.apache.kafka.common.resource.*;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.*;

public class KraftAdmin {
    static final long T = 60;

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        ObjectMapper mapper = new ObjectMapper();
        try (Admin admin = Admin.create(p)) {
            for (int i = 1; i < args.length; i++) {
                String command = args[i];
                String[] a = command.split(":", -1);
                switch (a[0]) {
                    case "create":
                        admin.createTopics(List.of(new NewTopic(a[1], Integer.parseInt(a[2]), (short) 1)))
                            .all().get(T, TimeUnit.SECONDS);
                        until(command, () -> partitions(admin, a[1]) == Integer.parseInt(a[2]));
                        break;
                    case "delete":
                        admin.deleteTopics(List.of(a[1])).all().get(T, TimeUnit.SECONDS);
                        until(command, () -> !admin.listTopics().names().get(T, TimeUnit.SECONDS).contains(a[1]));
                        break;
                    case "partitions":
                        admin.createPartitions(Map.of(a[1], NewPartitions.increaseTo(Integer.parseInt(a[2]))))
                            .all().get(T, TimeUnit.SECONDS);
                        until(command, () -> partitions(admin, a[1]) == Integer.parseInt(a[2]));
                        break;
                    case "topic-config":
                    case "broker-config": {
                        String[] kv = a[2].split("=", 2);
                        ConfigResource r = new ConfigResource(a[0].equals("topic-config")
                            ? ConfigResource.Type.TOPIC : ConfigResource.Type.BROKER, a[1]);
                        AlterConfigOp op = kv[1].isEmpty()
                            ? new AlterConfigOp(new ConfigEntry(kv[0], null), AlterConfigOp.OpType.DELETE)
                            : new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET);
                        admin.incrementalAlterConfigs(Map.of(r, List.of(op))).all().get(T, TimeUnit.SECONDS);
                        until(command, () -> {
                            ConfigEntry ce = admin.describeConfigs(List.of(r)).all().get(T, TimeUnit.SECONDS).get(r)
                                .get(kv[0]);
                            boolean dynamic = ce != null && (ce.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG
                                || ce.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG
                                || ce.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
                            return kv[1].isEmpty() ? !dynamic : dynamic && kv[1].equals(ce.value());
                        });
                        break;
                    }
                    case "quota": {
                        String[] kv = a[3].split("=", 2);
                        ClientQuotaEntity e = new ClientQuotaEntity(Map.of(a[1], a[2]));
                        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(e, List.of(
                            new ClientQuotaAlteration.Op(kv[0], kv[1].isEmpty() ? null : Double.parseDouble(kv[1]))))))
                            .all().get(T, TimeUnit.SECONDS);
                        until(command, () -> {
                            Map<String, Double> v = admin.describeClientQuotas(ClientQuotaFilter.all()).entities()
                                .get(T, TimeUnit.SECONDS).getOrDefault(e, Map.of());
                            return kv[1].isEmpty() ? !v.containsKey(kv[0])
                                                   : Double.valueOf(Double.parseDouble(kv[1])).equals(v.get(kv[0]));
                        });
                        break;
                    }
                    case "acl": {
                        // acl:<principal type>/<name>:<topic>:<operation>, e.g. acl:User/alice:orders:READ
                        AclBinding b = new AclBinding(new ResourcePattern(ResourceType.TOPIC, a[2], PatternType.LITERAL),
                            new AccessControlEntry(a[1].replace("/", ":"), "*", AclOperation.fromString(a[3]),
                                AclPermissionType.ALLOW));
                        admin.createAcls(List.of(b)).all().get(T, TimeUnit.SECONDS);
                        until(command, () -> admin.describeAcls(AclBindingFilter.ANY).values().get(T, TimeUnit.SECONDS)
                            .contains(b));
                        break;
                    }
                    case "describe":
                        System.out.println(mapper.writeValueAsString(describe(admin, mapper)));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown command " + command);
                }
            }
        }
    }

    interface Check { boolean holds() throws Exception; }

    // Poll every 20 ms, for at most T seconds, until the broker serves the change just made.
    static void until(String command, Check check) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (!check.holds()) {
            if (System.nanoTime() > deadline)
                throw new IllegalStateException(command + ": the broker did not serve it within " + T + " s");
            Thread.sleep(20);
        }
    }

    static int partitions(Admin admin, String topic) throws Exception {
        if (!admin.listTopics().names().get(T, TimeUnit.SECONDS).contains(topic)) return -1;
        return admin.describeTopics(List.of(topic)).allTopicNames().get(T, TimeUnit.SECONDS).get(topic)
            .partitions().size();
    }

    static ObjectNode describe(Admin admin, ObjectMapper mapper) throws Exception {
        ObjectNode out = mapper.createObjectNode();
        DescribeClusterResult cluster = admin.describeCluster();
        out.put("clusterId", cluster.clusterId().get(T, TimeUnit.SECONDS));
        ArrayNode nodes = out.putArray("brokers");
        for (Node n : cluster.nodes().get(T, TimeUnit.SECONDS)) {
            ObjectNode o = nodes.addObject();
            o.put("id", n.id()); o.put("host", n.host()); o.put("port", n.port()); o.put("rack", n.rack());
        }
        Set<String> names = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(T, TimeUnit.SECONDS);
        ObjectNode topics = out.putObject("topics");
        Map<String, TopicDescription> descs = admin.describeTopics(names).allTopicNames().get(T, TimeUnit.SECONDS);
        List<ConfigResource> resources = new ArrayList<>();
        for (String name : new TreeSet<>(names)) {
            TopicDescription d = descs.get(name);
            ObjectNode t = topics.putObject(name);
            t.put("topicId", d.topicId().toString());
            ArrayNode parts = t.putArray("partitions");
            for (TopicPartitionInfo pi : d.partitions()) {
                ObjectNode po = parts.addObject();
                po.put("partition", pi.partition());
                po.put("leader", pi.leader() == null ? -1 : pi.leader().id());
                ArrayNode r = po.putArray("replicas"); for (Node n : pi.replicas()) r.add(n.id());
                ArrayNode isr = po.putArray("isr"); for (Node n : pi.isr()) isr.add(n.id());
            }
            resources.add(new ConfigResource(ConfigResource.Type.TOPIC, name));
        }
        for (Node n : cluster.nodes().get(T, TimeUnit.SECONDS))
            resources.add(new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(n.id())));
        resources.add(new ConfigResource(ConfigResource.Type.BROKER, ""));
        ObjectNode configs = out.putObject("configs");
        for (Map.Entry<ConfigResource, Config> e : admin.describeConfigs(resources).all().get(T, TimeUnit.SECONDS).entrySet()) {
            ObjectNode c = mapper.createObjectNode();
            for (ConfigEntry ce : e.getValue().entries()) {
                ConfigEntry.ConfigSource s = ce.source();
                boolean dynamic = s == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG
                    || (e.getKey().name().isEmpty() ? s == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                                                    : s == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);
                if (dynamic) c.put(ce.name(), ce.value());
            }
            if (c.size() > 0) configs.set(e.getKey().type().name().toLowerCase() + ":" + e.getKey().name(), c);
        }
        ArrayNode quotas = out.putArray("quotas");
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e :
                admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get(T, TimeUnit.SECONDS).entrySet()) {
            ObjectNode q = quotas.addObject();
            ObjectNode ent = q.putObject("entity");
            for (Map.Entry<String, String> x : e.getKey().entries().entrySet()) ent.put(x.getKey(), x.getValue());
            ObjectNode vals = q.putObject("values");
            for (Map.Entry<String, Double> x : e.getValue().entrySet()) vals.put(x.getKey(), x.getValue());
        }
        ArrayNode acls = out.putArray("acls");
        try {
            for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get(T, TimeUnit.SECONDS)) {
                ObjectNode a = acls.addObject();
                a.put("resourceType", b.pattern().resourceType().name());
                a.put("name", b.pattern().name());
                a.put("patternType", b.pattern().patternType().name());
                a.put("principal", b.entry().principal());
                a.put("host", b.entry().host());
                a.put("operation", b.entry().operation().name());
                a.put("permission", b.entry().permissionType().name());
            }
        } catch (java.util.concurrent.ExecutionException e) {
            out.put("aclsError", e.getCause().toString());
        }
        ObjectNode features = out.putObject("features");
        for (Map.Entry<String, FinalizedVersionRange> e :
                admin.describeFeatures().featureMetadata().get(T, TimeUnit.SECONDS).finalizedFeatures().entrySet())
            features.put(e.getKey(), e.getValue().maxVersionLevel());
        return out;
    }
}
