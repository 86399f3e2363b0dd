package dev.kiln.spark;

import dev.kiln.onnx.OnnxModel;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An ONNX model's bytes as the driver read them, broadcast once to every executor. {@code id} is the SHA-256 of the
 * bytes: executors key their compiled plans by it, so a model re-read by another transform (same bytes) compiles
 * nowhere again, and a changed file under the same path is a new model.
 *
 * @param id     hex SHA-256 of {@code bytes}
 * @param source the path it was read from (for messages)
 * @param bytes  the file's contents
 */
record ModelFile(String id, String source, byte[] bytes) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The largest file Spark can broadcast as one array (and that protobuf parses without external data). */
    private static final long MAX_BYTES = Integer.MAX_VALUE - 8;

    /** Signatures by model id; a signature is a few names and dims, so they are kept for the JVM's life. */
    private static final Map<String, ModelSignature> SIGNATURES = new ConcurrentHashMap<>();

    /**
     * Reads {@code path} through Hadoop's file systems (a local path, {@code file:}, {@code hdfs:}, {@code s3a:} ...), as
     * Spark resolves its own paths.
     *
     * @throws UncheckedIOException if it cannot be read
     * @throws IllegalArgumentException if it is over 2 GiB
     */
    static ModelFile read(String path, Configuration conf) {
        try {
            Path p = new Path(path);
            FileSystem fs = p.getFileSystem(conf);
            long size = fs.getFileStatus(p).getLen();
            if (size > MAX_BYTES) {
                throw new IllegalArgumentException("model " + path + " is " + size + " bytes; kiln-spark broadcasts a model as one array, at most "
                        + MAX_BYTES + " bytes");
            }
            byte[] bytes = new byte[(int) size];
            try (FSDataInputStream in = fs.open(p)) {
                in.readFully(0, bytes);
            }
            return new ModelFile(sha256(bytes), path, bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read model " + path + ": " + e.getMessage(), e);
        }
    }

    /**
     * The model's signature, read on the driver to check a schema before any task runs; parsed once per model bytes in this
     * JVM (a pipeline transforms again and again with the same model, and parsing a large model's weights takes seconds).
     */
    ModelSignature signature() { return SIGNATURES.computeIfAbsent(id, k -> parseSignature()); }

    private ModelSignature parseSignature() {
        try (OnnxModel m = OnnxModel.load(bytes, source)) {
            return ModelSignature.of(m, source);
        }
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
    }

    @Override
    public String toString() { return "ModelFile[" + source + ", " + bytes.length + " bytes, sha256 " + id.substring(0, 12) + "]"; }
}
