package dev.kiln.bench;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.OnnxPlan;
import dev.kiln.onnx.ValueInfo;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.spark.KilnJvmOptions;
import dev.kiln.spark.KilnModel;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.io.Serial;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.udf;

/**
 * Rows per second of scoring a DataFrame on Spark (issue 15), three ways on the same rows:
 * <ul>
 *   <li>Kiln on Spark: {@link KilnModel} (broadcast model, one plan per executor JVM, batches of {@code --batch} rows);</li>
 *   <li>ONNX Runtime on Spark: the same model in a {@code mapPartitions} with one ORT session per executor JVM, batches
 *       of the same size, the way Spark users run ORT today;</li>
 *   <li>Kiln without Spark: kiln-onnx's {@link OnnxPlan} over the same rows in batches, in one thread.</li>
 * </ul>
 * Models: {@code mlp} (kiln-spark's test MLP, 8 features, batch axis symbolic) and {@code resnet50} (the shared
 * light_resnet50, exported for one row: both runtimes score it a row per run). Inputs are random f32 values generated
 * into a cached DataFrame before anything is timed; each figure is the best of {@code --runs} timed actions (a no-op sink
 * that makes Spark compute every output) after one warm-up action.
 *
 * <pre>kiln-bench/bench.sh --main SparkPeerBench [--models mlp,resnet50] [--rows 100000] [--resnet-rows 200]
 *     [--master local[2]] [--partitions 2] [--batch 64] [--runs 3] [--ort-threads 1]</pre>
 *
 * Run from the repository root (the models resolve as kiln-spark/src/test/resources/mlp/model.onnx and
 * ../shared/models/light_resnet50/model.onnx, or give {@code --mlp PATH} / {@code --resnet PATH}).
 */
public final class SparkPeerBench {
    private SparkPeerBench() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>(Map.of("--models", "mlp,resnet50", "--rows", "100000", "--resnet-rows", "200", "--master", "local[2]",
                "--partitions", "2", "--batch", "64", "--runs", "3", "--ort-threads", "1", "--mlp", "kiln-spark/src/test/resources/mlp/model.onnx",
                "--resnet", "../shared/models/light_resnet50/model.onnx"));
        for (int i = 0; i < args.length; i += 2) {
            if (!o.containsKey(args[i]) || i + 1 >= args.length) {
                System.err.println("usage: SparkPeerBench " + o.keySet().stream().sorted().map(k -> "[" + k + " V]").toList());
                System.exit(2);
            }
            o.put(args[i], args[i + 1]);
        }
        int partitions = Integer.parseInt(o.get("--partitions")), batch = Integer.parseInt(o.get("--batch")), runs = Integer.parseInt(o.get("--runs"));
        SparkSession spark = SparkSession.builder().master(o.get("--master")).appName("SparkPeerBench")
                .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false")
                .config("spark.executor.extraJavaOptions", KilnJvmOptions.JAVA_OPTIONS)
                .getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        try {
            for (String m : o.get("--models").split(",")) {
                Path model = Path.of(m.equals("mlp") ? o.get("--mlp") : m.equals("resnet50") ? o.get("--resnet") : m);
                if (!Files.isRegularFile(model)) throw new IllegalArgumentException("no model " + model.toAbsolutePath() + " (run from the repository root)");
                int rows = Integer.parseInt(m.equals("resnet50") ? o.get("--resnet-rows") : o.get("--rows"));
                bench(spark, m, model, rows, partitions, batch, runs, Integer.parseInt(o.get("--ort-threads")));
            }
        } finally {
            spark.stop();
        }
    }

    private static void bench(SparkSession spark, String name, Path model, int rows, int partitions, int batch, int runs, int ortThreads)
            throws OrtException {
        List<ValueInfo> inputs;
        boolean batched;
        try (OnnxModel m = OnnxModel.load(model)) {
            inputs = m.inputs();
            batched = inputs.getFirst().dims().getFirst().isSymbolic();
        }
        int effectiveBatch = batched ? batch : 1;
        // the rows: one array<float> column per input, random values from the row's id, generated and cached before timing
        Dataset<Row> base = spark.range(rows).repartition(partitions).toDF();
        List<String> cols = new ArrayList<>();
        for (int k = 0; k < inputs.size(); k++) {
            int width = rowSize(inputs.get(k)), seed = k;
            String c = "in" + k;
            cols.add(c);
            UDF1<Long, float[]> gen = id -> random(id * 31 + seed, width);
            base = base.withColumn(c, udf(gen, DataTypes.createArrayType(DataTypes.FloatType, false)).apply(col("id")));
        }
        Dataset<Row> data = base.cache();
        data.count();

        KilnModel kiln = new KilnModel().setModelPath(model.toString()).setInputCols(cols.toArray(String[]::new)).setBatchSize(batch)
                .setOutputCols(outputNames(model));
        double kilnSpark = rowsPerSecond(() -> kiln.transform(data), rows, runs);
        List<OrtInput> ortInputs = inputs.stream().map(v -> new OrtInput(v.name(), rowSize(v),
                v.dims().stream().mapToLong(d -> d.isFixed() ? d.size() : 0).toArray())).toList();
        OrtScorer ort = new OrtScorer(model.toAbsolutePath().toString(), ortInputs, effectiveBatch, ortThreads);
        StructType ortSchema = data.schema().add("ort_out", DataTypes.createArrayType(DataTypes.FloatType, false));
        double ortSpark = rowsPerSecond(() -> data.mapPartitions(ort, Encoders.row(ortSchema)), rows, runs);
        double kilnAlone = kilnWithoutSpark(model, inputs, rows, effectiveBatch, batched, runs);

        System.out.printf(Locale.ROOT, "model %s: %d rows, %s, %d partitions, batch %d%s, best of %d after a warm-up, %d cores%n", name, rows,
                spark.sparkContext().master(), partitions, effectiveBatch, batched ? "" : " (batch axis fixed at 1)", runs,
                Runtime.getRuntime().availableProcessors());
        System.out.printf(Locale.ROOT, "  Kiln on Spark (KilnModel)            %12.1f rows/s%n", kilnSpark);
        System.out.printf(Locale.ROOT, "  ONNX Runtime on Spark (mapPartitions) %11.1f rows/s  (%d intra-op thread(s) a session)%n", ortSpark, ortThreads);
        System.out.printf(Locale.ROOT, "  Kiln without Spark (OnnxPlan, 1 thread) %9.1f rows/s%n", kilnAlone);
        System.out.printf(Locale.ROOT, "  Kiln / ORT on Spark %.2fx   Kiln on Spark / Kiln alone %.2f%n", kilnSpark / ortSpark, kilnSpark / kilnAlone);
        data.unpersist();
    }

    private static String[] outputNames(Path model) {
        try (OnnxModel m = OnnxModel.load(model)) {
            return m.outputs().stream().map(v -> "kiln_" + v.name().replaceAll("[^A-Za-z0-9_]", "_")).toArray(String[]::new);
        }
    }

    /** Rows per second of the best of {@code runs} no-op writes of {@code scored}, after one warm-up. */
    private static double rowsPerSecond(java.util.function.Supplier<Dataset<Row>> scored, int rows, int runs) {
        scored.get().write().format("noop").mode("overwrite").save(); // warm-up: compiles, JIT
        double best = Double.MAX_VALUE;
        for (int r = 0; r < runs; r++) {
            long t = System.nanoTime();
            scored.get().write().format("noop").mode("overwrite").save();
            best = Math.min(best, (System.nanoTime() - t) / 1e9);
        }
        return rows / best;
    }

    private static double kilnWithoutSpark(Path model, List<ValueInfo> inputs, int rows, int batch, boolean batched, int runs) {
        float[][] data = new float[inputs.size()][];
        for (int k = 0; k < inputs.size(); k++) {
            int width = rowSize(inputs.get(k));
            data[k] = new float[Math.multiplyExact(batch, width)];
            for (int r = 0; r < batch; r++) System.arraycopy(random(r * 31L + k, width), 0, data[k], r * width, width);
        }
        try (OnnxModel m = OnnxModel.load(model);
             OnnxPlan plan = m.prepare(DeviceRegistry.get("CPU"), batched ? Map.of(inputs.getFirst().dims().getFirst().symbol(), batch) : Map.of())) {
            Runnable all = () -> {
                for (int done = 0; done < rows; done += batch) {
                    int n = Math.min(batch, rows - done);
                    Map<String, Tensor> feed = new LinkedHashMap<>();
                    for (int k = 0; k < inputs.size(); k++) {
                        int[] dims = inputs.get(k).dims().stream().mapToInt(d -> d.isFixed() ? (int) d.size() : 0).toArray();
                        dims[0] = n;
                        int width = rowSize(inputs.get(k));
                        feed.put(inputs.get(k).name(), Tensor.of(java.util.Arrays.copyOf(data[k], n * width), dims));
                    }
                    plan.run(feed);
                }
            };
            all.run();
            double best = Double.MAX_VALUE;
            for (int r = 0; r < runs; r++) {
                long t = System.nanoTime();
                all.run();
                best = Math.min(best, (System.nanoTime() - t) / 1e9);
            }
            return rows / best;
        }
    }

    private static int rowSize(ValueInfo v) {
        int n = 1;
        for (int k = 1; k < v.dims().size(); k++) {
            if (!v.dims().get(k).isFixed()) throw new IllegalArgumentException("input " + v + " has an open axis " + k);
            n = Math.multiplyExact(n, (int) v.dims().get(k).size());
        }
        return n;
    }

    private static float[] random(long seed, int width) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] v = new float[width];
        for (int i = 0; i < width; i++) v[i] = (float) r.nextDouble(-1, 1);
        return v;
    }

    /** A model input as the ORT scorer feeds it: its name, values per row and declared dims (the batch axis is set per run). */
    record OrtInput(String name, int width, long[] dims) implements java.io.Serializable {}

    /**
     * ONNX Runtime in a {@code mapPartitions}: one session per executor JVM and model (ORT sessions are thread-safe), the
     * partition's rows in batches, the first output as an {@code array<float>} column.
     */
    record OrtScorer(String model, List<OrtInput> inputs, int batch, int threads) implements MapPartitionsFunction<Row, Row> {
        @Serial
        private static final long serialVersionUID = 1L;

        private static final Map<String, OrtSession> SESSIONS = new java.util.concurrent.ConcurrentHashMap<>();

        private OrtSession session() {
            return SESSIONS.computeIfAbsent(model + "#" + threads, k -> {
                try {
                    OrtSession.SessionOptions opts = new OrtSession.SessionOptions();
                    opts.setIntraOpNumThreads(threads);
                    opts.setInterOpNumThreads(1);
                    opts.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
                    return OrtEnvironment.getEnvironment().createSession(model, opts);
                } catch (OrtException e) {
                    throw new IllegalStateException("ONNX Runtime cannot open " + model + ": " + e.getMessage(), e);
                }
            });
        }

        @Override
        public Iterator<Row> call(Iterator<Row> rows) throws OrtException {
            OrtSession s = session();
            OrtEnvironment env = OrtEnvironment.getEnvironment();
            List<Row> out = new ArrayList<>();
            List<Row> pending = new ArrayList<>(batch);
            while (rows.hasNext()) {
                pending.add(rows.next());
                if (pending.size() == batch || !rows.hasNext()) {
                    Map<String, OnnxTensor> feed = new LinkedHashMap<>();
                    try {
                        for (int k = 0; k < inputs.size(); k++) {
                            OrtInput v = inputs.get(k);
                            int width = v.width();
                            float[] flat = new float[pending.size() * width];
                            for (int r = 0; r < pending.size(); r++) {
                                List<Float> vals = pending.get(r).getList(k + 1); // column 0 is id
                                for (int i = 0; i < width; i++) flat[r * width + i] = vals.get(i);
                            }
                            long[] shape = v.dims().clone();
                            shape[0] = pending.size();
                            feed.put(v.name(), OnnxTensor.createTensor(env, FloatBuffer.wrap(flat), shape));
                        }
                        try (OrtSession.Result res = s.run(feed)) {
                            FloatBuffer fb = ((OnnxTensor) res.get(0)).getFloatBuffer();
                            int per = fb.remaining() / pending.size();
                            for (Row r : pending) {
                                float[] y = new float[per];
                                fb.get(y);
                                Object[] vals = new Object[r.length() + 1];
                                for (int c = 0; c < r.length(); c++) vals[c] = r.get(c);
                                vals[r.length()] = y;
                                out.add(RowFactory.create(vals));
                            }
                        }
                    } finally {
                        for (OnnxTensor t : feed.values()) t.close();
                    }
                    pending.clear();
                }
            }
            return out.iterator();
        }
    }
}
