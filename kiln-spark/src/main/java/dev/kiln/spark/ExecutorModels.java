package dev.kiln.spark;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The compiled models of this JVM (a Spark executor, or the driver in local mode): one {@link ServingModel} per model
 * bytes, device and batch size, compiled by the first task that needs it and shared by every later task, so a job of
 * many partitions compiles once per executor. The models live until the JVM exits; a shutdown hook closes them, since
 * an executor has no other end of life that user code sees.
 */
final class ExecutorModels {
    /** What a compiled model is keyed by. */
    record Key(String modelId, String device, int batchSize) {}

    private static final Map<Key, ServingModel> MODELS = new ConcurrentHashMap<>();
    private static final AtomicInteger COMPILES = new AtomicInteger();

    /**
     * Held while a plan runs. Kiln's host devices split every kernel over one pool of workers, a worker per core: a run
     * already uses the whole machine, and two task threads running plans at once make the pool switch between them at
     * every kernel (on 2 cores, local[2] scored the test MLP at 68k rows/s with runs side by side, 247k with one at a
     * time). Task threads still convert rows side by side; only the runs take turns, first come first served.
     */
    private static final ReentrantLock RUNS = new ReentrantLock(true);

    static {
        Thread hook = new Thread(ExecutorModels::closeAll, "kiln-spark-close-models");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    private ExecutorModels() {}

    /**
     * The model compiled for {@code options}; on a miss, {@code bytes} is asked for the model (a broadcast's value is only
     * fetched then) and compiled, once even when several tasks miss at once.
     */
    static ServingModel get(String modelId, ScoringOptions options, Supplier<ModelFile> bytes) {
        Key key = new Key(modelId, options.device(), options.batchSize());
        return MODELS.computeIfAbsent(key, k -> {
            KilnJvmOptions.requireInThisJvm(); // a clear error, not a NoClassDefFoundError from a kernel
            ModelFile file = bytes.get();
            if (!file.id().equals(modelId)) throw new IllegalStateException("model bytes " + file + " are not model " + modelId);
            ServingModel m = ServingModel.compile(file, k.device(), k.batchSize());
            COMPILES.incrementAndGet();
            return m;
        });
    }

    /** Runs {@code run} while no other plan of this JVM runs. */
    static <T> T exclusively(Supplier<T> run) {
        RUNS.lock();
        try {
            return run.get();
        } finally {
            RUNS.unlock();
        }
    }

    /** How many models this JVM has compiled since it started (tests read it back from executors). */
    static int compiles() { return COMPILES.get(); }

    /** Replicas made per compiled model in this JVM, for tests. */
    static List<Integer> replicaCounts() { return MODELS.values().stream().map(ServingModel::replicaCount).toList(); }

    private static void closeAll() {
        for (ServingModel m : MODELS.values()) m.close();
        MODELS.clear();
    }
}
