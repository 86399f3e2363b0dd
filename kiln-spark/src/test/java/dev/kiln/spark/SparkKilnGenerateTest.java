package dev.kiln.spark;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.SamplingOptions;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.apache.spark.sql.functions.array;
import static org.apache.spark.sql.functions.call_function;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.struct;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code kiln_generate} over a prompt column in {@code local[2]}, on kiln-llm's tiny random-weight Llama: every text is
 * compared with kiln-llm's own generation of the same prompt outside Spark, with the options and the row's seed computed
 * here from the documented rule (SHA-256 of the seed and the prompt), not by kiln-spark's code.
 */
class SparkKilnGenerateTest {
    private static final List<String> PROMPTS = List.of("The Licensor grants", "You a worldwide", "royalty-free licence", "to use the", "Software.",
            "The", "grants You", "licence to use the Software");
    private static final int MAX_TOKENS = 6;
    private static SparkSession spark;
    private static UserDefinedFunction generate;

    static Path model() { return Path.of(System.getProperty("kiln.test.llm", "../kiln-llm/src/test/resources/llm"), "llama", "llama-f32.gguf"); }

    @BeforeAll
    static void start() {
        spark = SparkTestSessions.local("SparkKilnGenerateTest");
        generate = KilnFunctions.registerGenerate(spark, "kiln_generate", model().toString(), MAX_TOKENS, "error");
        KilnFunctions.registerGenerate(spark, "kiln_generate_keep", model().toString(), MAX_TOKENS, "keep");
    }

    @AfterAll
    static void stop() { spark.stop(); }

    @Test
    void generatesWhatTheLanguageModelGeneratesDirectlyOpeningItOncePerJvm() {
        int before = ExecutorLanguageModels.opens();
        Dataset<Row> prompts = spark.createDataset(PROMPTS, Encoders.STRING()).toDF("prompt").repartition(4);
        List<Row> rows = prompts.select(col("prompt"), generate.apply(col("prompt")).as("text")).collectAsList();
        List<Row> again = prompts.selectExpr("prompt", "kiln_generate(prompt) AS text").collectAsList();
        // one model file: opened by the first query of this JVM that needed it (here or in an earlier test), never again
        assertThat(ExecutorLanguageModels.opens()).as("language models opened in this JVM").isEqualTo(before == 0 ? 1 : before);
        List<String> expected = new ArrayList<>();
        try (LanguageModel m = LanguageModel.open(model())) {
            for (String p : PROMPTS) expected.add(p + "\u0000" + m.generate(p, GenerationOptions.greedy().withMaxTokens(MAX_TOKENS)).text());
        }
        for (List<Row> got : List.of(rows, again)) {
            assertThat(got.stream().map(r -> r.getString(0) + "\u0000" + r.getString(1))).containsExactlyInAnyOrderElementsOf(expected);
        }
        assertThat(rows).allSatisfy(r -> assertThat(r.getString(1)).isNotEmpty());
    }

    @Test
    void aNonStringPromptFailsWhenTheQueryIsAnalysed() {
        Dataset<Row> ids = spark.range(3).toDF("id");
        assertThatThrownBy(() -> ids.selectExpr("kiln_generate(id)"))
                .hasStackTraceContaining("kiln_generate, argument 1: the prompt must be a string").hasStackTraceContaining("column 'id'");
    }

    @Test
    void aNullPromptFailsItsTaskOrIsNullUnderKeep() {
        Dataset<Row> prompts = spark.createDataset(Arrays.asList("The", null, "grants"), Encoders.STRING()).toDF("prompt").coalesce(1);
        assertThatThrownBy(() -> prompts.selectExpr("kiln_generate(prompt)").collectAsList())
                .hasStackTraceContaining("row 1 of partition 0").hasStackTraceContaining("the prompt is null");
        List<Row> kept = prompts.selectExpr("kiln_generate_keep(prompt)").collectAsList();
        assertThat(kept).hasSize(3);
        assertThat(kept.get(1).isNullAt(0)).isTrue();
        assertThat(kept.get(0).getString(0)).isNotEmpty();
    }

    /** Every sampling option at once, as SQL; {@link #sampled} is the same outside Spark. */
    private static final String SAMPLED = "named_struct('temperature', 1.5, 'top_k', 40, 'top_p', 0.95, 'min_p', 0.01, 'repetition_penalty', 1.1,"
            + " 'presence_penalty', 0.5, 'seed', 42, 'stop', array('zz'), 'max_tokens', 5)";

    private static GenerationOptions sampled(String prompt, long seed) throws Exception {
        return GenerationOptions.defaults().withMaxTokens(5).withStop("zz").withSampling(SamplingOptions.defaults().withTemperature(1.5).withTopK(40)
                .withTopP(0.95).withMinP(0.01).withRepetitionPenalty(1.1).withPresencePenalty(0.5).withSeed(rowSeed(seed, prompt)));
    }

    /** The documented seed of a row: the first 8 bytes, big-endian, of SHA-256(seed as 8 big-endian bytes, prompt in UTF-8). */
    static long rowSeed(long seed, String prompt) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        byte[] in = ByteBuffer.allocate(8 + prompt.getBytes(StandardCharsets.UTF_8).length).putLong(seed).put(prompt.getBytes(StandardCharsets.UTF_8)).array();
        byte[] d = sha.digest(in);
        long v = 0;
        for (int i = 0; i < 8; i++) v = v << 8 | (d[i] & 0xff);
        return v;
    }

    @FunctionalInterface
    private interface Options {
        GenerationOptions of(String prompt) throws Exception;
    }

    /** kiln-llm's text for each prompt, outside Spark. */
    private static Map<String, String> outside(List<String> prompts, Options options) throws Exception {
        Map<String, String> out = new TreeMap<>();
        try (LanguageModel m = LanguageModel.open(model())) {
            for (String p : prompts) out.put(p, m.generate(p, options.of(p)).text());
        }
        return out;
    }

    private static Map<String, String> byPrompt(Dataset<Row> rows) {
        Map<String, String> out = new TreeMap<>();
        for (Row r : rows.collectAsList()) assertThat(out.put(r.getString(0), r.getString(1))).as("prompt %s twice", r.getString(0)).isNull();
        return out;
    }

    @Test
    void samplingWithASeedGivesKilnLlmsTextForTheRowsSeedHoweverTheRowsArePartitioned() throws Exception {
        Dataset<Row> prompts = spark.createDataset(PROMPTS, Encoders.STRING()).toDF("prompt");
        Map<String, String> expected = outside(PROMPTS, p -> sampled(p, 42));
        Map<String, Map<String, String>> got = new LinkedHashMap<>();
        for (int partitions : new int[] {1, 3, 8}) {
            got.put("SQL, " + partitions + " partitions", byPrompt(prompts.repartition(partitions).selectExpr("prompt", "kiln_generate(prompt, " + SAMPLED + ")")));
        }
        // the DataFrame form: the same options as a struct of literals, through the function registry
        Column options = struct(lit(1.5).as("temperature"), lit(40).as("top_k"), lit(0.95).as("top_p"), lit(0.01).as("min_p"),
                lit(1.1).as("repetition_penalty"), lit(0.5).as("presence_penalty"), lit(42L).as("seed"), array(lit("zz")).as("stop"), lit(5).as("max_tokens"));
        got.put("DataFrame, coalesced to 1", byPrompt(prompts.coalesce(1).select(col("prompt"), call_function("kiln_generate", col("prompt"), options))));
        got.forEach((how, texts) -> assertThat(texts).as(how).isEqualTo(expected));
        // sampling really ran: at least one prompt's text differs from its greedy text
        Map<String, String> greedy = outside(PROMPTS, p -> GenerationOptions.greedy().withMaxTokens(5));
        assertThat(expected).isNotEqualTo(greedy);
    }

    @Test
    void aSeedPerRowFromAColumnGivesEachRowItsOwnSample() throws Exception {
        Dataset<Row> rows = spark.range(6).toDF("id").selectExpr("id", "'The Licensor' AS prompt").repartition(3);
        List<Row> got = rows.selectExpr("id", "kiln_generate(prompt, named_struct('temperature', 1.5, 'seed', id, 'max_tokens', 5))").collectAsList();
        Map<Long, String> texts = new TreeMap<>();
        for (Row r : got) texts.put(r.getLong(0), r.getString(1));
        Map<Long, String> expected = new TreeMap<>();
        try (LanguageModel m = LanguageModel.open(model())) {
            for (long id = 0; id < 6; id++) {
                expected.put(id, m.generate("The Licensor", GenerationOptions.defaults().withMaxTokens(5)
                        .withSampling(SamplingOptions.defaults().withTemperature(1.5).withSeed(rowSeed(id, "The Licensor")))).text());
            }
        }
        assertThat(texts).isEqualTo(expected);
        assertThat(texts.values().stream().distinct().count()).as("distinct samples of one prompt").isGreaterThan(1);
    }

    @Test
    void temperatureZeroIsGreedyWhateverTheSeedAndFilters() throws Exception {
        Dataset<Row> prompts = spark.createDataset(PROMPTS, Encoders.STRING()).toDF("prompt").repartition(2);
        Map<String, String> got = byPrompt(prompts.selectExpr("prompt",
                "kiln_generate(prompt, named_struct('temperature', 0, 'seed', 7, 'top_k', 3, 'max_tokens', 4))"));
        assertThat(got).isEqualTo(outside(PROMPTS, p -> GenerationOptions.greedy().withMaxTokens(4)));
    }

    @Test
    void registrationDefaultsApplyAndACallOverridesThemFieldByField() throws Exception {
        GenerationOptions defaults = GenerationOptions.defaults().withMaxTokens(4).withSampling(SamplingOptions.defaults().withTemperature(1.2).withSeed(9));
        KilnFunctions.registerGenerate(spark, "kiln_sample", model().toString(), defaults, "error");
        Dataset<Row> prompts = spark.createDataset(PROMPTS, Encoders.STRING()).toDF("prompt").repartition(3);
        assertThat(byPrompt(prompts.selectExpr("prompt", "kiln_sample(prompt)"))).isEqualTo(outside(PROMPTS,
                p -> defaults.withSampling(defaults.sampling().withSeed(rowSeed(9, p)))));
        assertThat(byPrompt(prompts.selectExpr("prompt", "kiln_sample(prompt, named_struct('seed', 10, 'top_p', null))"))).isEqualTo(outside(PROMPTS,
                p -> defaults.withSampling(defaults.sampling().withSeed(rowSeed(10, p)))));
        assertThatThrownBy(() -> KilnFunctions.registerGenerate(spark, "kiln_bad", model().toString(), GenerationOptions.greedy(), "error"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("kiln_bad: maxTokens must be at least 1, got 0");
    }

    @Test
    void badOptionsFailWhenTheQueryIsAnalysedNamingTheArgumentAndField() {
        Dataset<Row> prompts = spark.createDataset(PROMPTS, Encoders.STRING()).toDF("prompt");
        Map<String, List<String>> cases = new LinkedHashMap<>();
        cases.put("named_struct('temperature', -0.5)", List.of("argument 2 (options), field 'temperature': expected a number in [0, 2]", "given -0.5"));
        cases.put("named_struct('top_p', 0)", List.of("field 'top_p': expected a number in (0, 1], given 0"));
        cases.put("named_struct('top_p', 1.5)", List.of("field 'top_p': expected a number in (0, 1], given 1.5"));
        cases.put("named_struct('temperature', 'hot')", List.of("field 'temperature': expected a number", "given string"));
        cases.put("named_struct('seed', 1.5)", List.of("field 'seed': expected an integer", "given decimal(2,1)"));
        cases.put("named_struct('stop', array(1))", List.of("field 'stop': expected a string or an array of strings, given array<int>"));
        cases.put("named_struct('stop', '')", List.of("field 'stop': stop strings must not be empty"));
        cases.put("named_struct('max_tokens', 0)", List.of("field 'max_tokens': expected an integer >= 1, given 0"));
        cases.put("named_struct('tempreature', 1)", List.of("unknown option 'tempreature'", "temperature"));
        cases.put("named_struct('frequency_penalty', 0.5)", List.of("option 'frequency_penalty' is not supported"));
        cases.put("map('temperature', 1)", List.of("argument 2 (options): expected a struct of options", "given map<string,int>"));
        cases.put("named_struct('seed', 1), 3", List.of("kiln_generate takes 1 argument (the prompt) or 2 (the prompt and a struct of options); given 3"));
        cases.forEach((args, messages) -> {
            // selectExpr analyses the query and runs nothing: a failure here is before any task
            var thrown = assertThatThrownBy(() -> prompts.selectExpr("kiln_generate(prompt, " + args + ")")).as(args);
            for (String m : messages) thrown.hasStackTraceContaining(m);
            thrown.hasStackTraceContaining("kiln_generate");
        });
    }

    @Test
    void optionsOutOfRangeInAColumnAreBadRows() {
        Dataset<Row> rows = spark.range(3).toDF("id").coalesce(1);
        String call = "(prompt, named_struct('temperature', CAST(id AS DOUBLE) - 1.0, 'seed', 1))";
        Dataset<Row> withPrompt = rows.selectExpr("id", "'The' AS prompt");
        assertThatThrownBy(() -> withPrompt.selectExpr("kiln_generate" + call).collectAsList())
                .hasStackTraceContaining("row 0 of partition 0").hasStackTraceContaining("argument 2 (options), field 'temperature': expected a number in [0, 2]");
        List<Row> kept = withPrompt.selectExpr("kiln_generate_keep" + call).collectAsList();
        assertThat(kept).hasSize(3);
        assertThat(kept.get(0).isNullAt(0)).isTrue();
        assertThat(kept.get(1).getString(0)).isNotNull();
        assertThat(kept.get(2).getString(0)).isNotNull();
    }
}
