import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilder;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilderFactory;
import org.apache.logging.log4j.core.config.builder.impl.BuiltConfiguration;
import org.opensearch.action.admin.cluster.health.ClusterHealthResponse;
import org.opensearch.cluster.health.ClusterHealthStatus;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * One embedded OpenSearch 2.19.1 node with HTTP (netty4), Painless and the k-NN plugin, on 127.0.0.1.
 *
 * <p>Environment: {@code OPENSEARCH_PORT} (HTTP, default 9200), {@code OPENSEARCH_TRANSPORT_PORT}
 * (default 9300), {@code OPENSEARCH_HOME} (data and logs; default a temporary directory removed at exit).
 * The argument {@code --exit-with-stdin} stops the node when standard input closes, so a test process
 * that dies never leaves a JVM behind. Prints one line starting with {@code OpenSearch ready} once the
 * cluster is green; stops cleanly on SIGTERM or Ctrl-C.
 *
 * <p>Started as a plain {@link Node} (not through the bootstrap), there is no security manager and no
 * jar-hell check; the k-NN zip on Maven Central has no native libraries, so only the Lucene engine works.
 */
public final class OpenSearchNode extends Node {
    private static final List<String> PLUGINS = List.of(
            Netty4Plugin.class.getName(), PainlessPlugin.class.getName(), "org.opensearch.knn.plugin.KNNPlugin");

    private OpenSearchNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, plugins, true);
    }

    public static void main(String[] args) throws Exception {
        quietLogging();
        String httpPort = env("OPENSEARCH_PORT", "9200");
        String transportPort = env("OPENSEARCH_TRANSPORT_PORT", "9300");
        String configuredHome = System.getenv("OPENSEARCH_HOME");
        Path home = configuredHome == null || configuredHome.isEmpty()
                ? Files.createTempDirectory("opensearch-node")
                : Path.of(configuredHome).toAbsolutePath();
        Files.createDirectories(home.resolve("modules"));
        Files.createDirectories(home.resolve("plugins"));
        Files.createDirectories(home.resolve("config"));

        Settings settings = Settings.builder()
                .put("path.home", home.toString())
                .put("cluster.name", "agentmem")
                .put("node.name", "agentmem-node")
                .put("discovery.type", "single-node")
                .put("network.host", "127.0.0.1")
                .put("http.port", httpPort)
                .put("transport.port", transportPort)
                .put("cluster.routing.allocation.disk.threshold_enabled", false)
                .put("action.auto_create_index", false)
                .build();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), null, () -> "agentmem-node");
        OpenSearchNode node = new OpenSearchNode(environment, pluginClasses());

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(10, java.util.concurrent.TimeUnit.SECONDS);
            } catch (Exception error) {
                System.err.println("OpenSearch node did not close cleanly: " + error);
            }
            if (configuredHome == null || configuredHome.isEmpty()) {
                deleteTree(home);
            }
        }, "opensearch-node-shutdown"));

        try {
            node.start();
        } catch (Exception error) {
            System.err.println("OpenSearch node failed to start: " + error);
            System.exit(1);
        }
        ClusterHealthResponse health = node.client().admin().cluster().prepareHealth()
                .setWaitForGreenStatus().setTimeout(TimeValue.timeValueSeconds(60)).get();
        if (health.getStatus() != ClusterHealthStatus.GREEN) {
            System.err.println("OpenSearch cluster is " + health.getStatus() + ", not green, after 60 s");
            System.exit(1);
        }
        System.out.println("OpenSearch ready: http://127.0.0.1:" + httpPort + " (cluster green, k-NN lucene engine)");
        System.out.flush();

        if (List.of(args).contains("--exit-with-stdin")) {
            InputStream in = System.in;
            while (in.read() != -1) {
                // discard: only the end of the stream matters
            }
            System.exit(0);
        }
        Thread.currentThread().join(); // OpenSearch threads are daemons: keep the JVM alive until a signal
    }

    @SuppressWarnings("unchecked")
    private static List<Class<? extends Plugin>> pluginClasses() throws ClassNotFoundException {
        // k-NN is on the classpath from its unpacked zip (not a compile-time dependency): load it by name.
        List<Class<? extends Plugin>> classes = new java.util.ArrayList<>();
        for (String name : PLUGINS) {
            classes.add((Class<? extends Plugin>) Class.forName(name).asSubclass(Plugin.class));
        }
        return classes;
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    /** Warnings and errors on stderr; the node's INFO chatter is not needed to use it. */
    private static void quietLogging() {
        ConfigurationBuilder<BuiltConfiguration> builder = ConfigurationBuilderFactory.newConfigurationBuilder();
        builder.setStatusLevel(Level.ERROR);
        builder.add(builder.newAppender("stderr", "Console")
                .addAttribute("target", "SYSTEM_ERR")
                .add(builder.newLayout("PatternLayout").addAttribute("pattern", "[%p %c{1}] %m%n")));
        builder.add(builder.newRootLogger(Level.WARN).add(builder.newAppenderRef("stderr")));
        // Two warnings every single node prints (dangling-index import off, one allocator per shard): not actionable.
        for (String chatty : List.of("org.opensearch.gateway.DanglingIndicesState",
                "org.opensearch.cluster.routing.allocation.AllocationService")) {
            builder.add(builder.newLogger(chatty, Level.ERROR));
        }
        Configurator.initialize(builder.build());
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory: the OS cleans it eventually
        }
    }
}
