package dev.kiln.spark;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * Lays out the Spark home that local-cluster mode's workers launch executors from, with no Spark distribution: a folder
 * (named by SPARK_HOME, which the pom sets for the test JVM) whose {@code jars/} holds this JVM's class path, each jar
 * linked and each class folder (this module's classes and test classes, the reactor's modules) packed as a jar. The
 * launcher builds an executor's class path from {@code jars/*} when SPARK_SCALA_VERSION is set.
 */
final class SparkHome {
    private SparkHome() {}

    /** Lays out (anew) the Spark home named by SPARK_HOME and returns it. */
    static Path layOut() {
        String home = System.getenv("SPARK_HOME");
        if (home == null) throw new IllegalStateException("SPARK_HOME is not set: run the tests through Maven (kiln-spark's pom sets it)");
        if (System.getenv("SPARK_SCALA_VERSION") == null) throw new IllegalStateException("SPARK_SCALA_VERSION is not set (kiln-spark's pom sets it)");
        Path jars = Path.of(home, "jars");
        try {
            deleteTree(Path.of(home));
            Files.createDirectories(jars);
            int n = 0;
            for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                Path p = Path.of(entry).toAbsolutePath();
                String name = String.format("%03d-", n++) + p.getFileName();
                if (Files.isDirectory(p)) packJar(p, jars.resolve(name + ".jar"));
                else if (entry.endsWith(".jar") && Files.isRegularFile(p)) Files.createSymbolicLink(jars.resolve(name), p);
            }
            return Path.of(home);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lay out the Spark home " + home + ": " + e.getMessage(), e);
        }
    }

    private static void packJar(Path dir, Path jar) throws IOException {
        try (OutputStream os = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(os); Stream<Path> files = Files.walk(dir)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                out.putNextEntry(new JarEntry(dir.relativize(f).toString().replace(File.separatorChar, '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) return;
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
