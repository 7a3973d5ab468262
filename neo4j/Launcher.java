/*
 * Runs Neo4j Community in-process with the Bolt connector on 127.0.0.1, for development and CI, and the HTTP
 * connector on 127.0.0.1 too (Neo4j Browser at /browser, the HTTP query API), unless HTTP_PORT is 0.
 *
 * Usage: java -cp 'lib/*' Launcher.java DATA_DIR PORT PASSWORD PAGECACHE [HTTP_PORT]
 * Java's single-file launch compiles this file on the fly, so no build step is needed. The process
 * keeps running until it is signalled; a shutdown hook stops the database cleanly.
 */
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;

public class Launcher {
    public static void main(String[] args) throws Exception {
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: Launcher DATA_DIR PORT PASSWORD PAGECACHE [HTTP_PORT]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String port = args[1];
        String password = args[2];
        String httpPort = args.length == 5 ? args[4] : "0";
        boolean http = !httpPort.equals("0");
        // 5.26's builder takes typed Setting objects or a properties file; a file keeps the
        // neo4j.conf names, the same ones docker-compose.yml sets through the environment.
        Files.createDirectories(home);
        Path conf = home.resolve("neo4j.conf");
        Files.writeString(conf, String.join("\n",
            "server.bolt.enabled=true",
            "server.bolt.listen_address=127.0.0.1:" + port,
            // Neo4j Browser connects to the address the HTTP discovery document advertises.
            "server.bolt.advertised_address=127.0.0.1:" + port,
            "server.http.enabled=" + http,
            http ? "server.http.listen_address=127.0.0.1:" + httpPort : "",
            http ? "server.http.advertised_address=127.0.0.1:" + httpPort : "",
            "server.https.enabled=false",
            "dbms.security.auth_enabled=true",
            "server.memory.pagecache.size=" + args[3],
            "db.tx_log.rotation.retention_policy=100M size",
            ""));
        DatabaseManagementService service = new DatabaseManagementServiceBuilder(home)
            .loadPropertiesFromFile(conf)
            .build();
        Runtime.getRuntime().addShutdownHook(new Thread(service::shutdown));
        // The built-in user starts with a password that must be changed; set the configured one
        // through the system database so Bolt clients can log in with it straight away.
        GraphDatabaseService system = service.database("system");
        system.executeTransactionally(
            "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
            Map.of("password", password));
        System.out.println("neo4j ready on bolt://127.0.0.1:" + port
            + (http ? ", Neo4j Browser on http://127.0.0.1:" + httpPort + "/browser/" : ""));
        System.out.flush();
        Thread.currentThread().join();
    }
}
