package dev.kiln.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

import java.io.Serial;
import java.io.Serializable;

/**
 * A model's bytes broadcast from the driver: Spark sends a broadcast's blocks to each executor once, however many tasks
 * read it, and an executor whose {@link ExecutorModels} already compiled this model never fetches them at all.
 *
 * @param id    the model's SHA-256, the executors' cache key
 * @param bytes the broadcast bytes
 */
record ShippedModel(String id, Broadcast<ModelFile> bytes) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    /** Reads {@code path} on the driver and broadcasts it. */
    static ShippedModel ship(SparkContext sc, String path) {
        ModelFile file = ModelFile.read(path, sc.hadoopConfiguration());
        return new ShippedModel(file.id(), JavaSparkContext.fromSparkContext(sc).broadcast(file));
    }

    /** This JVM's compiled model, compiled on first use. */
    ServingModel open(ScoringOptions options) { return ExecutorModels.get(id, options, bytes::value); }
}
