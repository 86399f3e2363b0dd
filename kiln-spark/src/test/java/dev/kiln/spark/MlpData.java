package dev.kiln.spark;

import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.OnnxPlan;
import dev.kiln.runtime.DeviceRegistry;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The test MLP (tools/golden/gen_spark_mlp.py: x f32[batch,8], offset f32[batch,3] -> logits f32[batch,3], label
 * i64[batch,1]), rows of random inputs for it, and Kiln's own results for those rows, computed in this process through
 * kiln-onnx with no Spark involved: the reference every Spark result is compared with.
 */
final class MlpData {
    private MlpData() {}

    static Path model() { return model("mlp"); }

    /** A model of the generator: mlp, mlp_fixed (batch axis fixed at 1) or open_axis (x is [batch, n]). */
    static Path model(String folder) {
        try {
            return Path.of(MlpData.class.getResource("/" + folder + "/model.onnx").toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** id bigint, x array<float>[8], offset ml Vector[3]. */
    static final StructType SCHEMA = new StructType()
            .add("id", DataTypes.LongType, false)
            .add("x", DataTypes.createArrayType(DataTypes.FloatType, false), true)
            .add("offset", new VectorUDT(), true);

    static float[][] xs(int n) { return random(n, 8, 1); }

    static float[][] offsets(int n) { return random(n, 3, 2); }

    private static float[][] random(int n, int width, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[][] out = new float[n][width];
        for (float[] row : out) for (int k = 0; k < width; k++) row[k] = (float) (r.nextDouble() * 4 - 2);
        return out;
    }

    static List<Row> rows(int n) {
        float[][] x = xs(n), off = offsets(n);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<Float> xi = new ArrayList<>();
            for (float v : x[i]) xi.add(v);
            double[] o = new double[3];
            for (int k = 0; k < 3; k++) o[k] = off[i][k];
            rows.add(RowFactory.create((long) i, xi, Vectors.dense(o)));
        }
        return rows;
    }

    static Dataset<Row> frame(SparkSession spark, int n, int partitions) {
        return spark.createDataFrame(rows(n), SCHEMA).repartition(partitions);
    }

    /** Kiln's results for the first n rows, run directly: logits [n][3] and labels [n]. */
    record Reference(float[][] logits, long[] labels) {}

    static Reference reference(int n) {
        float[][] x = xs(n), off = offsets(n);
        float[] xf = new float[n * 8], of = new float[n * 3];
        for (int i = 0; i < n; i++) {
            System.arraycopy(x[i], 0, xf, i * 8, 8);
            System.arraycopy(off[i], 0, of, i * 3, 3);
        }
        try (OnnxModel m = OnnxModel.load(model()); OnnxPlan plan = m.prepare(DeviceRegistry.get("CPU"), Map.of("batch", n))) {
            List<Tensor> out = plan.run(Map.of("x", Tensor.of(xf, n, 8), "offset", Tensor.of(of, n, 3)));
            float[] l = out.get(0).toFloatArray();
            float[][] logits = new float[n][3];
            for (int i = 0; i < n; i++) System.arraycopy(l, i * 3, logits[i], 0, 3);
            return new Reference(logits, out.get(1).toLongArray());
        }
    }
}
