package graphmem.neo4j;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
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
import org.neo4j.internal.kernel.api.procs.ProcedureSignature;
import org.neo4j.internal.kernel.api.procs.QualifiedName;
import org.neo4j.kernel.api.QueryLanguage;
import org.neo4j.kernel.api.procedure.GlobalProcedures;
import org.neo4j.kernel.impl.transaction.log.LogAppendEvent;
import org.neo4j.kernel.impl.transaction.log.checkpoint.CheckPointer;
import org.neo4j.kernel.impl.transaction.log.checkpoint.SimpleTriggerInfo;
import org.neo4j.kernel.impl.transaction.log.files.LogFiles;
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
 * <p>Configured for safety, since {@code graphmem cypher} lets a user send queries: LOAD CSV
 * cannot read files, only {@link #PROCEDURES} are registered, and the transaction logs are
 * pruned at every start and stop to the minimum recovery needs, so that erased text does not
 * outlive a restart there (README, "Erasure").
 *
 * <pre>
 * Usage: Launcher [--port N] [--data DIR] [--pagecache SIZE] [--debug-log]
 *   --port N          Bolt port on 127.0.0.1 (default 7687; 0 = pick a free port)
 *   --data DIR        Neo4j home directory (databases in DIR/data, logs in DIR/logs); persistent.
 *                     Without it a temporary directory is used and deleted on exit.
 *   --pagecache SIZE  page cache size, e.g. 256m, 1g (default 1g: taken as pages are read, and
 *                     a store of 100k entries is ~420 MB; at 256m, where it no longer fit, its
 *                     searches took ~4 ms more)
 *   --debug-log       keep Neo4j's internal debug.log (in DIR/logs); off by default
 * Environment:
 *   GRAPHMEM_NEO4J_PASSWORD  if set and non-empty, auth is enabled and user neo4j gets this
 *                            password; otherwise auth is disabled.
 * </pre>
 */
public final class Launcher {
    private static final String HOST = "127.0.0.1";
    private static final String PASSWORD_ENV = "GRAPHMEM_NEO4J_PASSWORD";
    /**
     * The only procedures the server runs: what graphmem's own queries call (awaiting
     * indexes, routing) and the read-only schema procedures a debugging query may use.
     * Everything else (dbms.killConnections, db.clearQueryCaches, db.stats.*, db.create*,
     * tx.setMetaData, ...) is unregistered at startup, so not even a client that bypasses
     * graphmem's query check can call it: dbms.security.procedures.allowlist (also set) only
     * filters plugins, never Neo4j's built-in procedures. The list is the one of
     * graphmem/cli/_cypher_text.py plus what graphmem and the driver call themselves.
     */
    static final List<String> PROCEDURES = List.of(
            "db.awaitIndex",
            "db.awaitIndexes",
            "db.labels",
            "db.relationshipTypes",
            "db.propertyKeys",
            "db.schema.visualization",
            "db.schema.nodeTypeProperties",
            "db.schema.relTypeProperties",
            "db.info",
            "db.ping",
            "dbms.components",
            "dbms.routing.getRoutingTable",
            "dbms.cluster.routing.getRoutingTable");
    /** How long a SIGTERM received during startup waits for startup to finish. */
    private static final long BUILD_WAIT_SECONDS = 30;

    private Launcher() {}

    public static void main(String[] args) {
        int port = 7687;
        Path dataDir = null;
        String pageCache = "1g";
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
        // LOAD CSV may not read files at all (below); the import directory is also an
        // empty one of its own, so that a configuration mistake exposes nothing.
        final Path importDir = home.resolve("import-empty");
        Files.createDirectories(importDir);

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
                    pruneTransactionLogs(dbms, "shutdown");
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
                    // Erasure: keep no transaction log older than the last checkpoint beyond
                    // what recovery needs ("false" = only the newest non-empty log file);
                    // pruneTransactionLogs() rotates and checkpoints at start and stop, so
                    // text erased before a restart leaves the logs with that restart.
                    .setConfig(GraphDatabaseSettings.keep_logical_logs, "false")
                    // Safety: LOAD CSV cannot read local files (no file: URLs, an empty
                    // import directory), and only the procedures listed above exist.
                    .setConfig(GraphDatabaseSettings.allow_file_urls, false)
                    .setConfig(GraphDatabaseSettings.load_csv_file_url_root, importDir)
                    .setConfig(GraphDatabaseSettings.procedure_allowlist, PROCEDURES)
                    // Every node keeps its relationships grouped by type and direction, however
                    // few ("dense"; the default: from 50): a search walks an
                    // entry's NEXT links, and in an ungrouped chain that walk reads all of its
                    // 15-25 HAS_TOKEN and MENTIONS links too. A search's main read took 18%
                    // less, a whole search 11%; writes took as long (benchmarks/README.md,
                    // Speed, session 39).
                    // A server of your own: db.relationship_grouping_threshold=1 (README).
                    .setConfig(GraphDatabaseSettings.dense_node_threshold, 1)
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
            removeProcedures(db);

            // Logs written before this start (a crash, or a stop that could not prune)
            // hold text that may have been erased since: drop them now that recovery is done.
            pruneTransactionLogs(managementService, "startup");

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

    /**
     * Rotates the default database's transaction log and forces a checkpoint, after which
     * Neo4j prunes every log file the retention policy ({@code keep_logical_logs=false})
     * does not keep. Erased text then survives only in the store files until its records
     * are reused (see README, "Erasure").
     */
    private static void pruneTransactionLogs(DatabaseManagementService dbms, String when) {
        try {
            GraphDatabaseAPI db = (GraphDatabaseAPI) dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            var resolver = db.getDependencyResolver();
            resolver.resolveDependency(LogFiles.class).getLogFile().getLogRotation()
                    .rotateLogFile(LogAppendEvent.NULL);
            // Pruning keeps the log file of the last committed transaction, so commit two
            // that cancel out (a label-less node, created, then deleted) into the new file.
            String node;
            try (Transaction tx = db.beginTx()) {
                node = tx.createNode().getElementId();
                tx.commit();
            }
            try (Transaction tx = db.beginTx()) {
                tx.getNodeByElementId(node).delete();
                tx.commit();
            }
            resolver.resolveDependency(CheckPointer.class)
                    .forceCheckPoint(new SimpleTriggerInfo("graphmem log pruning at " + when));
        } catch (Throwable t) {
            System.err.println("neo4j-launcher: could not prune transaction logs at " + when + ": " + t);
        }
    }

    /** Unregisters every procedure not in {@link #PROCEDURES}. */
    private static void removeProcedures(GraphDatabaseService db) throws Exception {
        GlobalProcedures procedures = ((GraphDatabaseAPI) db).getDependencyResolver()
                .resolveDependency(GlobalProcedures.class);
        List<QualifiedName> remove = procedures.getCurrentView().getAllProcedures(QueryLanguage.CYPHER_5)
                .map(ProcedureSignature::name)
                .filter(name -> !PROCEDURES.contains(fullName(name)))
                .toList();
        for (QualifiedName name : remove) {
            procedures.unregister(name);
        }
        System.err.println("neo4j-launcher: procedures available: " + String.join(", ", PROCEDURES)
                + " (" + remove.size() + " others removed)");
    }

    private static String fullName(QualifiedName name) {
        return name.namespace().length == 0 ? name.name() : String.join(".", name.namespace()) + "." + name.name();
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
