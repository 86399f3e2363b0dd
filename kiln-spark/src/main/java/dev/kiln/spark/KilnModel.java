package dev.kiln.spark;

import org.apache.spark.ml.Transformer;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.param.StringArrayParam;
import org.apache.spark.ml.util.DefaultParamsReadable;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

import java.io.Serial;
import java.util.List;

/**
 * A Spark ML {@link Transformer} that scores a DataFrame with an ONNX model compiled by Kiln, appending one column per
 * model output.
 *
 * <pre>{@code
 * KilnModel m = new KilnModel()
 *     .setModelPath("hdfs:///models/mlp.onnx")
 *     .setInputCols("features")            // one array or ml Vector column per model input, in model order
 *     .setOutputCols("logits", "label")    // optional: the model's output names by default
 *     .setBatchSize(256);
 * Dataset<Row> scored = m.transform(df);
 * m.write().overwrite().save("/pipelines/kiln");   // Spark ML persistence; KilnModel.load(path) reads it back
 * }</pre>
 *
 * <p>The driver reads the model file and broadcasts its bytes, once per SparkContext while the file is unchanged; each
 * executor compiles it once (keyed by the bytes' SHA-256, the device and the batch size) and its task threads share that
 * plan through replicas, their runs taking turns. A partition is scored in batches of {@code batchSize} rows, the last
 * one at its real size. Output columns
 * are {@code array<float>}, {@code array<bigint>} ... after the output's dtype, or a scalar for an output with one
 * value per row and no axes.
 *
 * <p>Schema mismatches (a missing column, an element type that cannot feed the input, a Vector column whose declared
 * size differs, a taken output name) fail in {@link #transformSchema}, before any task runs. A bad row (a null, a wrong
 * length) fails its task naming its position, or, with {@code handleInvalid = "keep"}, gets null outputs; no row is
 * dropped.
 */
public final class KilnModel extends Transformer implements DefaultParamsWritable {
    @Serial
    private static final long serialVersionUID = 1L;

    private static final DefaultParamsReadable<KilnModel> READABLE = new DefaultParamsReadable<>() {};

    private final String uid;
    private final Param<String> modelPath;
    private final StringArrayParam inputCols, outputCols;
    private final IntParam batchSize;
    private final Param<String> device, handleInvalid;

    /** A transformer with a random uid. */
    public KilnModel() { this(Identifiable.randomUID("kiln")); }

    /** A transformer with the given uid (Spark ML's persistence and {@link #copy} call this). */
    public KilnModel(String uid) {
        this.uid = uid;
        modelPath = new Param<>(this, "modelPath", "the ONNX model file, any path Spark's Hadoop file systems read");
        inputCols = new StringArrayParam(this, "inputCols", "one array or ml Vector column per model input, in model input order");
        outputCols = new StringArrayParam(this, "outputCols", "one new column per model output, in model output order (empty: the output names)");
        batchSize = new IntParam(this, "batchSize", "rows per model run (the compiled plan's batch axis)", ParamValidators.gtEq(1));
        device = new Param<>(this, "device", "the Kiln device to compile for: CPU, CLANG or INTERP");
        handleInvalid = new Param<>(this, "handleInvalid", "what a row that cannot be fed does: error (fails its task) or keep (null outputs)",
                ParamValidators.inArray(new String[] {ScoringOptions.ERROR, ScoringOptions.KEEP}));
        setDefault(outputCols, new String[0]);
        setDefault(batchSize, 64);
        setDefault(device, "CPU");
        setDefault(handleInvalid, ScoringOptions.ERROR);
    }

    @Override
    public String uid() { return uid; }

    /** The ONNX model file. */
    public Param<String> modelPath() { return modelPath; }

    /** One input column per model input, in model input order. */
    public StringArrayParam inputCols() { return inputCols; }

    /** One output column per model output, in order; empty (the default) names them after the model's outputs. */
    public StringArrayParam outputCols() { return outputCols; }

    /** Rows per model run; default 64. */
    public IntParam batchSize() { return batchSize; }

    /** The Kiln device; default {@code CPU}. */
    public Param<String> device() { return device; }

    /** {@code error} (default) or {@code keep}, Spark's convention for rows that cannot be handled. */
    public Param<String> handleInvalid() { return handleInvalid; }

    public KilnModel setModelPath(String value) { set(modelPath, value); return this; }

    public KilnModel setInputCols(String... value) { set(inputCols, value); return this; }

    public KilnModel setOutputCols(String... value) { set(outputCols, value); return this; }

    public KilnModel setBatchSize(int value) { set(batchSize, value); return this; }

    public KilnModel setDevice(String value) { set(device, value); return this; }

    public KilnModel setHandleInvalid(String value) { set(handleInvalid, value); return this; }

    public String getModelPath() { return $(modelPath); }

    public String[] getInputCols() { return $(inputCols); }

    public String[] getOutputCols() { return $(outputCols); }

    public int getBatchSize() { return (Integer) $(batchSize); }

    public String getDevice() { return $(device); }

    public String getHandleInvalid() { return $(handleInvalid); }

    /**
     * The input schema with the output columns appended.
     *
     * @throws IllegalArgumentException naming the column and the model input or output on any mismatch
     */
    @Override
    public StructType transformSchema(StructType schema) {
        SparkSession spark = SparkSession.active();
        return bind(ShippedModel.ship(spark.sparkContext(), required(modelPath)).bytes().value(), schema).outputSchema(schema);
    }

    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        SparkSession spark = dataset.sparkSession();
        ShippedModel shipped = ShippedModel.ship(spark.sparkContext(), required(modelPath));
        ScoringPlan plan = bind(shipped.bytes().value(), dataset.schema()); // the driver's own copy: no fetch
        return dataset.toDF().mapPartitions(new PartitionScorer(shipped, plan), Encoders.row(plan.outputSchema(dataset.schema())));
    }

    private ScoringPlan bind(ModelFile file, StructType schema) {
        if (!isDefined(inputCols)) throw new IllegalArgumentException("KilnModel " + uid + ": set inputCols (one column per model input)");
        ScoringOptions options = new ScoringOptions(getDevice(), getBatchSize(), getHandleInvalid());
        return ScoringPlan.bind(file.signature(), schema, List.of(getInputCols()), List.of(getOutputCols()), options);
    }

    private <T> T required(Param<T> p) {
        if (!isDefined(p)) throw new IllegalArgumentException("KilnModel " + uid + ": set " + p.name());
        return $(p);
    }

    @Override
    public KilnModel copy(ParamMap extra) { return defaultCopy(extra); }

    /** The reader of {@link #write()}'s format. */
    public static MLReader<KilnModel> read() { return READABLE.read(); }

    /** Loads a KilnModel saved with {@code write().save(path)}. */
    public static KilnModel load(String path) { return READABLE.load(path); }
}
