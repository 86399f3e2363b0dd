package dev.kiln.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

import java.io.Serial;
import java.io.Serializable;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A model's bytes broadcast from the driver: Spark sends a broadcast's blocks to each executor once, however many tasks
 * read it, and an executor whose {@link ExecutorModels} already compiled this model never fetches them at all.
 *
 * <p>The driver broadcasts a model file once per SparkContext while the file stays as it was (same size and modification
 * time): a pipeline that transforms again and again reads, hashes and broadcasts it once. A changed file is read and
 * broadcast anew; the older broadcast is left to Spark's cleaner once no Dataset refers to it.
 *
 * @param id    the model's SHA-256, the executors' cache key
 * @param bytes the broadcast bytes
 */
record ShippedModel(String id, Broadcast<ModelFile> bytes) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    /** A shipped model and the file's state it was read in ({@link RemoteFile#key()}). */
    private record Shipped(String fileState, ShippedModel model) {}

    /** Per SparkContext (dropped with it), per path as given: the last shipment. */
    private static final Map<SparkContext, Map<String, Shipped>> SHIPPED = Collections.synchronizedMap(new WeakHashMap<>());

    /** The model at {@code path} broadcast in {@code sc}: read and broadcast now unless it was, unchanged, before. */
    static ShippedModel ship(SparkContext sc, String path) {
        KilnJvmOptions.warnIfExecutorsLackThem(sc.conf());
        String state = RemoteFile.of(path, sc.hadoopConfiguration()).key();
        Map<String, Shipped> shipped = SHIPPED.computeIfAbsent(sc, k -> new ConcurrentHashMap<>());
        return shipped.compute(path, (p, last) -> {
            if (last != null && last.fileState().equals(state)) return last;
            ModelFile file = ModelFile.read(path, sc.hadoopConfiguration());
            return new Shipped(state, new ShippedModel(file.id(), JavaSparkContext.fromSparkContext(sc).broadcast(file)));
        }).model();
    }

    /** This JVM's compiled model, compiled on first use. */
    ServingModel open(ScoringOptions options) { return ExecutorModels.get(id, options, bytes::value); }
}
