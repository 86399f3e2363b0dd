package dev.kiln.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.util.SerializableConfiguration;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serial;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

/**
 * A large file that executors read themselves through Spark's Hadoop file systems rather than receive from the driver
 * (a language model of gigabytes): a local path is used in place, any other is copied once to a local temporary file.
 * {@link #key()} (path, size and modification time as the driver saw them) identifies the file in executor caches.
 *
 * @param path  the path as given, in Hadoop's syntax
 * @param key   the file's identity: its qualified path, size and modification time on the driver
 * @param conf  the driver's Hadoop configuration (credentials, file system settings)
 */
record RemoteFile(String path, String key, SerializableConfiguration conf) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * The file at {@code path}, checked on the driver.
     *
     * @throws IllegalArgumentException if it is not a file
     * @throws UncheckedIOException if it cannot be read
     */
    static RemoteFile of(String path, Configuration conf) {
        try {
            Path p = new Path(path);
            FileSystem fs = p.getFileSystem(conf);
            FileStatus st = fs.getFileStatus(p);
            if (!st.isFile()) throw new IllegalArgumentException(path + " is not a file");
            return new RemoteFile(path, fs.makeQualified(p) + ":" + st.getLen() + ":" + st.getModificationTime(), new SerializableConfiguration(conf));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    /** The file's name. */
    String name() { return new Path(path).getName(); }

    /**
     * A local file with this file's contents: the file itself where it is local to this machine, else a copy in a new
     * temporary file, which the caller owns.
     *
     * @return the local file, and whether it is a temporary copy
     */
    Local local() {
        try {
            Path p = new Path(path);
            FileSystem fs = p.getFileSystem(conf.value());
            if (fs instanceof LocalFileSystem) return new Local(java.nio.file.Path.of(fs.makeQualified(p).toUri()), false);
            java.nio.file.Path copy = Files.createTempFile("kiln-spark-", "-" + name());
            try (InputStream in = fs.open(p)) {
                Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
            }
            return new Local(copy, true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path + " on this executor: " + e.getMessage(), e);
        }
    }

    /**
     * A file on this machine.
     *
     * @param file      where it is
     * @param temporary whether it is a copy to delete when done
     */
    record Local(java.nio.file.Path file, boolean temporary) {}
}
