package dev.kiln.spark;

import dev.kiln.llm.generate.GenerationOptions;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.classic.UserDefinedFunctionUtils;
import org.apache.spark.sql.expressions.SparkUserDefinedFunction;
import scala.Function1;
import scala.collection.immutable.Seq;
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
import java.util.SplittableRandom;

import static org.apache.spark.sql.functions.udf;

/**
 * Kiln models as Spark SQL functions, for users of SQL and DataFrames without Spark ML: {@code kiln_predict} scores an
 * ONNX model ({@link #register}), {@code kiln_generate} continues prompts with a language model ({@link #registerGenerate}).
 *
 * <pre>{@code
 * KilnFunctions.register(spark, "kiln_predict", "hdfs:///models/mlp.onnx");
 * spark.sql("SELECT id, kiln_predict(x, offset).logits FROM t");
 * df.select(callUDF("kiln_predict", col("x"), col("offset")).getField("label"));
 *
 * KilnFunctions.registerGenerate(spark, "kiln_generate", "hdfs:///models/model.gguf", 64, "error");
 * spark.sql("SELECT kiln_generate(prompt) FROM prompts");                                        // greedy
 * spark.sql("SELECT kiln_generate(prompt, named_struct('temperature', 0.8, 'seed', 42)) FROM prompts"); // sampled
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
     * {@link #registerGenerate(SparkSession, String, String, GenerationOptions, String)} with greedy defaults (temperature 0)
     * of at most {@code maxTokens} tokens: {@code kiln_generate(prompt)} gives the same text for a prompt on every executor
     * and in every run; calls with an options struct may still sample.
     *
     * @throws IllegalArgumentException if the driver cannot see a .gguf file at the path, or {@code maxTokens} is below 1
     */
    public static UserDefinedFunction registerGenerate(SparkSession spark, String name, String modelPath, int maxTokens, String handleInvalid) {
        if (maxTokens < 1) throw new IllegalArgumentException(name + ": maxTokens must be at least 1, got " + maxTokens);
        return registerGenerate(spark, name, modelPath, GenerationOptions.greedy().withMaxTokens(maxTokens), handleInvalid);
    }

    /**
     * Registers {@code name} in {@code spark} as a function continuing a prompt with the language model {@code modelPath}
     * (kiln-llm: a GGUF file of the Llama family), in two forms:
     * <ul>
     *   <li>{@code kiln_generate(prompt)}: the generated text under {@code defaults};</li>
     *   <li>{@code kiln_generate(prompt, options)}: under {@code defaults} overridden by the non-null fields of
     *       {@code options}, a struct named as OpenAI's API names them: {@code temperature} (0 to 2; 0 is greedy),
     *       {@code top_p} ((0, 1]), {@code top_k} (0 keeps all), {@code min_p}, {@code repetition_penalty},
     *       {@code presence_penalty}, {@code seed}, {@code stop} (a string or an array of strings), {@code max_tokens}
     *       and {@code ignore_eos}. In SQL: {@code kiln_generate(prompt, named_struct('temperature', 0.8, 'top_p', 0.95,
     *       'seed', 42))}; with DataFrames: {@code call_function("kiln_generate", col("prompt"),
     *       struct(lit(0.8).as("temperature"), lit(42).as("seed")))}. The struct may be a column (a seed per row, say).</li>
     * </ul>
     * The argument types, and the values of constant options, are checked when the query is analysed, before any task
     * runs: an unknown option, a value of the wrong type or out of range fails naming the argument and the field (the
     * values of options that are not constant are checked per row: a bad row). See {@link GenerateOptions} for the table.
     *
     * <p><b>Reproducibility.</b> Each row's generator is seeded from the seed and the prompt alone (see
     * {@link GenerateOptions#rowSeed}), never from a generator shared by a task: a row's text does not depend on how the
     * DataFrame is partitioned, on the task thread or on the executor, and the function is deterministic as Spark requires
     * of a UDF it may evaluate twice (a retried task). Two rows with the same prompt and options therefore get the same
     * text; give each row its own seed (an options column) for different samples of one prompt. When {@code defaults}
     * have no seed, one is drawn here, once, and logged: the text is then reproducible for this registration only.
     *
     * <p>Each executor JVM opens the model once, its task threads generating side by side with a decoder each. The path
     * must be readable from the executors through Spark's Hadoop file systems ({@code hdfs:}, {@code s3a:}, a shared or
     * local {@code file:} path): a language model is gigabytes, so it is not broadcast through the driver's memory; an
     * executor maps a local file in place and copies a remote one to a local temporary file once.
     *
     * @param defaults      the options of calls without an options argument and of the options a call leaves out;
     *                      {@code maxTokens} must be at least 1 (0, up to the context, is refused for a whole DataFrame)
     * @param handleInvalid {@code error}: a null prompt, one too long for the context, or (in a non-constant options column)
     *                      an option out of range fails its task naming the row; {@code keep}: its result is null
     * @return the one-argument form as a function of a column ({@code fn.apply(col("prompt"))}); the options form through
     *         {@code functions.call_function(name, prompt, options)} or SQL
     * @throws IllegalArgumentException if the driver cannot see a .gguf file at the path, or {@code defaults.maxTokens()} is
     *                                  below 1
     */
    public static UserDefinedFunction registerGenerate(SparkSession spark, String name, String modelPath, GenerationOptions defaults,
                                                       String handleInvalid) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(defaults, "defaults");
        boolean keep = new ScoringOptions("CPU", 1, handleInvalid).keepInvalid();
        long drawn = new SplittableRandom().nextLong();
        GenerateOptions options = GenerateOptions.of(name, defaults, drawn);
        if (defaults.sampling().seed().isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "Kiln function " + name + ": no default seed given, drew seed " + drawn + " for calls that sample"
                    + " without one (a row's text is reproducible while this registration stands; give a seed to reproduce it elsewhere)");
        }
        KilnJvmOptions.warnIfExecutorsLackThem(spark.sparkContext().conf());
        RemoteFile model = RemoteFile.of(modelPath, spark.sparkContext().hadoopConfiguration());
        if (!model.name().endsWith(".gguf")) throw new IllegalArgumentException(name + ": " + modelPath + " is not a .gguf file; kiln_generate opens one GGUF file");
        GenerateUdf body = new GenerateUdf(name, model, options, keep);
        UDF1<String, String> f1 = body::generate;
        UDF2<String, Row, String> f2 = body::generate;
        SparkUserDefinedFunction one = (SparkUserDefinedFunction) udf(f1, DataTypes.StringType).withName(name);
        SparkUserDefinedFunction two = (SparkUserDefinedFunction) udf(f2, DataTypes.StringType).withName(name);
        // Spark's udf().register gives a name one arity; a builder of our own gives it both, as Spark builds a registered
        // UDF's call (a ScalaUDF named after the function, which the analysis check below finds by that name)
        Function1<Seq<Expression>, Expression> builder = args -> switch (args.size()) {
            case 1 -> UserDefinedFunctionUtils.toScalaUDF(one, args);
            case 2 -> UserDefinedFunctionUtils.toScalaUDF(two, args);
            default -> throw new IllegalArgumentException(name + " takes 1 argument (the prompt) or 2 (the prompt and a struct of options); given "
                    + args.size());
        };
        spark.sessionState().functionRegistry().createOrReplaceTempFunction(name, builder, "java_udf");
        spark.sessionState().analyzer(); // builds the analyser and with it the extension's check rule, if not built yet
        RegisteredFunctions.registerGenerate(spark, name, options);
        if (!RegisteredFunctions.checkedIn(spark)) {
            LOG.log(System.Logger.Level.WARNING, "Kiln function " + name + ": this session was built without KilnSparkExtensions, so its options"
                    + " are checked on the first row, not when a query is analysed (set spark.sql.extensions=" + KilnSparkExtensions.class.getName() + ")");
        }
        return one;
    }
}
