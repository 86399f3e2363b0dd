package dev.kiln.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.api.java.UDF5;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.util.Objects;

import static org.apache.spark.sql.functions.udf;

/**
 * Kiln models as Spark SQL functions, for users of SQL and DataFrames without Spark ML: {@code kiln_predict} scores an
 * ONNX model ({@link #register}), {@code kiln_generate} continues prompts with a language model ({@link #registerGenerate}).
 *
 * <pre>{@code
 * KilnFunctions.register(spark, "kiln_predict", "hdfs:///models/mlp.onnx");
 * spark.sql("SELECT id, kiln_predict(x, offset).logits FROM t");
 * df.select(callUDF("kiln_predict", col("x"), col("offset")).getField("label"));
 * }</pre>
 *
 * <p>The function takes one argument per model input, in model order (an array or an ml Vector, as
 * {@link KilnModel}'s input columns), and returns a struct with one field per model output, named as the model names
 * them. The model's bytes are broadcast once and compiled once per executor, as for KilnModel; a function call scores
 * one row per model run, since Spark calls a function a row at a time: {@link KilnModel} scores in batches and is the
 * faster way to score a whole DataFrame.
 *
 * <p>Argument types are checked when a query is analysed, before any task runs, by {@link KilnSparkExtensions}, which
 * Spark loads by itself in sessions built with kiln-spark on the driver's class path; in a session built before it was
 * there, a mismatch is found on the first row instead (logged at registration).
 */
public final class KilnFunctions {
    private static final System.Logger LOG = System.getLogger(KilnFunctions.class.getName());

    private KilnFunctions() {}

    /** {@link #register(SparkSession, String, String, String, String)} on the CPU, failing on bad rows. */
    public static UserDefinedFunction register(SparkSession spark, String name, String modelPath) {
        return register(spark, name, modelPath, "CPU", "error");
    }

    /**
     * Registers {@code name} in {@code spark} as a function scoring {@code modelPath} (read now, on the driver).
     *
     * @param device        the Kiln device: CPU, CLANG or INTERP
     * @param handleInvalid {@code error}: a bad row (null, wrong length) fails its task naming it; {@code keep}: its
     *                      result is null
     * @return the function, also usable directly ({@code fn.apply(col("x"), col("offset"))}; called so, Spark does not check the
     *         number of arguments before the query runs)
     * @throws IllegalArgumentException if the model cannot be scored from rows (see {@link KilnModel}) or has more than
     *                                  five inputs
     */
    public static UserDefinedFunction register(SparkSession spark, String name, String modelPath, String device, String handleInvalid) {
        Objects.requireNonNull(name, "name");
        ShippedModel shipped = ShippedModel.ship(spark.sparkContext(), modelPath);
        ModelSignature sig = shipped.bytes().value().signature();
        int n = sig.inputs().size();
        if (n > PredictUdf.MAX_INPUTS) {
            throw new IllegalArgumentException("model " + modelPath + " has " + n + " inputs; a Kiln SQL function takes at most " + PredictUdf.MAX_INPUTS
                    + " (use KilnModel)");
        }
        ScoringPlan plan = ScoringPlan.forFunction(name, sig, new ScoringOptions(device, 1, handleInvalid));
        StructType result = plan.outputSchema(new StructType());
        PredictUdf body = new PredictUdf(shipped, plan);
        // one interface per arity: Spark calls a Java UDF through the interface it implements, and registering it as that
        // interface lets the function registry reject a call with the wrong number of arguments (WRONG_NUM_ARGS)
        UserDefinedFunction fn;
        switch (n) {
            case 1 -> {
                UDF1<Object, Row> f = body::score;
                spark.udf().register(name, f, result);
                fn = udf(f, result);
            }
            case 2 -> {
                UDF2<Object, Object, Row> f = body::score;
                spark.udf().register(name, f, result);
                fn = udf(f, result);
            }
            case 3 -> {
                UDF3<Object, Object, Object, Row> f = body::score;
                spark.udf().register(name, f, result);
                fn = udf(f, result);
            }
            case 4 -> {
                UDF4<Object, Object, Object, Object, Row> f = body::score;
                spark.udf().register(name, f, result);
                fn = udf(f, result);
            }
            default -> {
                UDF5<Object, Object, Object, Object, Object, Row> f = body::score;
                spark.udf().register(name, f, result);
                fn = udf(f, result);
            }
        }
        LOG.log(System.Logger.Level.INFO, "Kiln function " + name + " scores one row per model run (Spark calls a function a row at a time);"
                + " KilnModel scores a DataFrame in batches");
        spark.sessionState().analyzer(); // builds the analyser, and with it the extension's check rule, if not built yet
        RegisteredFunctions.registerPredict(spark, name, sig);
        if (!RegisteredFunctions.checkedIn(spark)) {
            LOG.log(System.Logger.Level.WARNING, "Kiln function " + name + ": this session was built without KilnSparkExtensions, so its arguments"
                    + " are checked on the first row, not when a query is analysed (build the session with kiln-spark on the driver's class path,"
                    + " or set spark.sql.extensions=" + KilnSparkExtensions.class.getName() + ")");
        }
        return fn.withName(name);
    }

    /**
     * Registers {@code name} in {@code spark} as a function continuing a prompt with the language model {@code modelPath}
     * (kiln-llm: a GGUF file of the Llama family): {@code kiln_generate(prompt)} returns the generated text, at most
     * {@code maxTokens} tokens, decoded greedily so the same prompt gives the same text on every executor. Each executor
     * JVM opens the model once, its task threads generating side by side with a decoder each. The path must be readable
     * from the executors through Spark's Hadoop file systems ({@code hdfs:}, {@code s3a:}, a shared or local {@code file:}
     * path): a language model is gigabytes, so it is not broadcast through the driver's memory; an executor maps a local
     * file in place and copies a remote one to a local temporary file once.
     *
     * @param handleInvalid {@code error}: a null prompt, or one too long for the context, fails its task naming it;
     *                      {@code keep}: its result is null
     * @throws IllegalArgumentException if the driver cannot see a .gguf file at the path, or {@code maxTokens} is below 1
     */
    public static UserDefinedFunction registerGenerate(SparkSession spark, String name, String modelPath, int maxTokens, String handleInvalid) {
        Objects.requireNonNull(name, "name");
        if (maxTokens < 1) throw new IllegalArgumentException(name + ": maxTokens must be at least 1, got " + maxTokens);
        boolean keep = new ScoringOptions("CPU", 1, handleInvalid).keepInvalid();
        RemoteFile model = RemoteFile.of(modelPath, spark.sparkContext().hadoopConfiguration());
        if (!model.name().endsWith(".gguf")) throw new IllegalArgumentException(name + ": " + modelPath + " is not a .gguf file; kiln_generate opens one GGUF file");
        GenerateUdf body = new GenerateUdf(name, model, maxTokens, keep);
        UDF1<String, String> f = body::generate;
        spark.udf().register(name, f, DataTypes.StringType);
        spark.sessionState().analyzer(); // builds the analyser and with it the extension's check rule, if not built yet
        RegisteredFunctions.registerGenerate(spark, name);
        return udf(f, DataTypes.StringType).withName(name);
    }
}
