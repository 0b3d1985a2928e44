package graphmem.neo4j;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.SettingValueParsers;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Result;
import org.neo4j.graphdb.Transaction;
import org.neo4j.internal.helpers.HostnamePort;
import org.neo4j.kernel.internal.GraphDatabaseAPI;
import org.neo4j.logging.Level;
import org.neo4j.logging.log4j.Log4jLogProvider;

/**
 * Embedded Neo4j (Community) server for graphmem development and tests.
 *
 * <p>Starts a {@link DatabaseManagementService} with only the Bolt connector enabled on
 * 127.0.0.1, runs {@code RETURN 1} on the default database, and then prints exactly one line
 * {@code READY bolt://127.0.0.1:PORT} to stdout. Everything else goes to stderr (or to
 * {@code <home>/logs/debug.log}). SIGTERM/SIGINT trigger a clean shutdown via a shutdown hook.
 *
 * <pre>
 * Usage: Launcher [--port N] [--data DIR] [--pagecache SIZE] [--debug-log]
 *   --port N          Bolt port on 127.0.0.1 (default 7687; 0 = pick a free port)
 *   --data DIR        Neo4j home directory (databases in DIR/data, logs in DIR/logs); persistent.
 *                     Without it a temporary directory is used and deleted on exit.
 *   --pagecache SIZE  page cache size, e.g. 256m, 1g (default 256m)
 *   --debug-log       keep Neo4j's internal debug.log (in DIR/logs); off by default
 * Environment:
 *   GRAPHMEM_NEO4J_PASSWORD  if set and non-empty, auth is enabled and user neo4j gets this
 *                            password; otherwise auth is disabled.
 * </pre>
 */
public final class Launcher {
    private static final String HOST = "127.0.0.1";
    private static final String PASSWORD_ENV = "GRAPHMEM_NEO4J_PASSWORD";
    /** How long a SIGTERM received during startup waits for startup to finish. */
    private static final long BUILD_WAIT_SECONDS = 30;

    private Launcher() {}

    public static void main(String[] args) {
        int port = 7687;
        Path dataDir = null;
        String pageCache = "256m";
        long pageCacheBytes;
        boolean debugLog = false;

        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--port" -> port = Integer.parseInt(value(args, ++i, a));
                    case "--data" -> dataDir = Path.of(value(args, ++i, a));
                    case "--pagecache" -> pageCache = value(args, ++i, a);
                    case "--debug-log" -> debugLog = true;
                    case "-h", "--help" -> {
                        usage(System.out);
                        return;
                    }
                    default -> throw new IllegalArgumentException("unknown argument: " + a);
                }
            }
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port out of range: " + port);
            }
            pageCacheBytes = SettingValueParsers.BYTES.parse(pageCache);
        } catch (IllegalArgumentException e) {
            System.err.println("neo4j-launcher: " + e.getMessage());
            usage(System.err);
            System.exit(2);
            return;
        }

        try {
            run(port, dataDir, pageCache, pageCacheBytes, debugLog);
        } catch (Throwable t) {
            System.err.println("neo4j-launcher: startup failed: " + t);
            t.printStackTrace(System.err);
            System.err.flush();
            // halt() rather than exit(): run() already shut down / cleaned up, and we must not
            // block on half-started Neo4j threads.
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(int port, Path dataDir, String pageCache, long pageCacheBytes,
            boolean debugLog)
            throws Exception {
        final boolean temporary = dataDir == null;
        final Path home = temporary
                ? Files.createTempDirectory("graphmem-neo4j-")
                : dataDir.toAbsolutePath().normalize();
        Files.createDirectories(home);

        String password = System.getenv(PASSWORD_ENV);
        boolean authEnabled = password != null && !password.isEmpty();

        System.err.println("neo4j-launcher: home=" + home + (temporary ? " (temporary)" : "")
                + " port=" + port + " auth=" + (authEnabled ? "enabled" : "disabled")
                + " pagecache=" + pageCache);
        System.err.flush();

        // The hook is registered before build() so that SIGTERM during startup still cleans up:
        // it waits (bounded) for build() to finish, shuts Neo4j down, deletes a temporary home.
        final AtomicReference<DatabaseManagementService> dbmsRef = new AtomicReference<>();
        final CountDownLatch built = new CountDownLatch(1);
        final AtomicBoolean stopped = new AtomicBoolean(false);
        final CountDownLatch stoppedLatch = new CountDownLatch(1);
        Runnable stop = () -> {
            if (!stopped.compareAndSet(false, true)) {
                return;
            }
            try {
                System.err.println("neo4j-launcher: shutting down");
                if (!built.await(BUILD_WAIT_SECONDS, TimeUnit.SECONDS)) {
                    System.err.println("neo4j-launcher: startup still in progress; exiting without clean shutdown");
                }
                DatabaseManagementService dbms = dbmsRef.get();
                if (dbms != null) {
                    dbms.shutdown();
                    System.err.println("neo4j-launcher: shutdown complete");
                }
            } catch (Throwable t) {
                System.err.println("neo4j-launcher: error during shutdown: " + t);
            } finally {
                if (temporary) {
                    try {
                        deleteRecursively(home);
                    } catch (IOException e) {
                        System.err.println("neo4j-launcher: could not delete " + home + ": " + e);
                    }
                }
                System.err.flush();
                stoppedLatch.countDown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "graphmem-neo4j-shutdown"));

        final DatabaseManagementService managementService;
        try {
            DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(home)
                    // Bolt only, loopback only.
                    .setConfig(BoltConnector.enabled, true)
                    .setConfig(BoltConnector.listen_address, new SocketAddress(HOST, port))
                    .setConfig(BoltConnector.advertised_address, new SocketAddress(HOST, port))
                    .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                    .setConfig(HttpConnector.enabled, false)
                    .setConfig(HttpsConnector.enabled, false)
                    // Netty waits a 5 s "quiet period" per Bolt event loop group (2 groups) on
                    // shutdown; skip it so SIGTERM -> exit takes ~1 s instead of ~11 s.
                    .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                    // No anonymous usage reporting to neo4j.com ("dbms.usage_report.enabled").
                    .setConfig(GraphDatabaseSettings.udc_enabled, false)
                    // Auth.
                    .setConfig(GraphDatabaseSettings.auth_enabled, authEnabled)
                    // Allow short dev passwords (default minimum is 8).
                    .setConfig(GraphDatabaseSettings.auth_minimum_password_length, 1)
                    // Memory / disk footprint.
                    .setConfig(GraphDatabaseSettings.pagecache_memory, pageCacheBytes)
                    .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                    .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold,
                            SettingValueParsers.BYTES.parse("64m"))
                    .setConfig(GraphDatabaseSettings.keep_logical_logs, "256M size")
                    // Logging: WARN+ of the user log to stderr; internal debug.log only on request.
                    .setConfig(GraphDatabaseSettings.debug_log_enabled, debugLog)
                    .setUserLogProvider(new Log4jLogProvider(System.err, Level.WARN));
            managementService = builder.build();
            dbmsRef.set(managementService);
        } catch (Throwable t) {
            built.countDown();
            if (stopped.get()) {
                // SIGTERM during startup: the shutdown hook owns cleanup and exit.
                stoppedLatch.await();
                return;
            }
            stop.run();
            throw t;
        }
        built.countDown();

        try {
            GraphDatabaseService db = managementService.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);

            if (authEnabled) {
                setPassword(managementService, password);
            }

            // Smoke test through the embedded API before announcing readiness.
            long one;
            try (Transaction tx = db.beginTx(); Result r = tx.execute("RETURN 1 AS one")) {
                one = ((Number) r.next().get("one")).longValue();
                tx.commit();
            }
            if (one != 1L) {
                throw new IllegalStateException("RETURN 1 returned " + one);
            }

            int boundPort = port;
            ConnectorPortRegister ports = ((GraphDatabaseAPI) db).getDependencyResolver()
                    .resolveDependency(ConnectorPortRegister.class);
            HostnamePort local = ports.getLocalAddress(ConnectorType.BOLT);
            if (local != null && local.getPort() > 0) {
                boundPort = local.getPort();
            } else if (port == 0) {
                throw new IllegalStateException("Bolt connector did not register a local port");
            }

            if (stopped.get()) {
                // SIGTERM arrived while starting: never announce readiness of a stopping server.
                stoppedLatch.await();
                return;
            }
            System.out.println("READY bolt://" + HOST + ":" + boundPort);
            System.out.flush();
        } catch (Throwable t) {
            if (stopped.get()) {
                stoppedLatch.await();
                return;
            }
            stop.run();
            throw t;
        }

        // Park the main thread; Neo4j's own threads keep the JVM alive and the shutdown hook
        // handles SIGTERM/SIGINT.
        stoppedLatch.await();
    }

    /** Sets the password of user neo4j (and clears "change required"), idempotently. */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        try {
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        } catch (RuntimeException e) {
            // Persisted store where the password is already this value.
            String msg = String.valueOf(e.getMessage()) + " " + e.getCause();
            if (!msg.contains("cannot be the same")) {
                throw e;
            }
        }
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length) {
            throw new IllegalArgumentException(flag + " needs a value");
        }
        return args[i];
    }

    private static void usage(PrintStream out) {
        out.println("usage: java -cp 'target/classes:target/lib/*' graphmem.neo4j.Launcher"
                + " [--port N] [--data DIR] [--pagecache SIZE] [--debug-log]");
        out.println("  env " + PASSWORD_ENV + "=...  enable auth with this password for user neo4j");
    }

    private static void deleteRecursively(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                Files.deleteIfExists(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
