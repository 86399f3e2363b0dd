package dev.kiln.spark;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.GenerationOptions;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code kiln_generate} over a prompt column in {@code local[2]}, on kiln-llm's tiny random-weight Llama. */
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
        assertThat(ExecutorLanguageModels.opens() - before).as("language models opened in this JVM").isEqualTo(1);
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
}
