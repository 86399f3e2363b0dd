package dev.kiln.spark;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.SamplingOptions;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkExecutorInfo;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import scala.jdk.javaapi.CollectionConverters;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link KilnModel} in Spark's real distributed mode on one machine: {@code local-cluster[2,1,1024]} starts a master and
 * two workers in this JVM, each launching an executor JVM of its own from the Spark home laid out under target/. Both
 * executors get the model by broadcast, compile it once each, and score their partitions; the results equal Kiln's run
 * directly, and every endpoint is on loopback. kiln_generate's language model is opened at most once per executor JVM,
 * and generates there what it generates here.
 */
class SparkLocalClusterTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() throws InterruptedException {
        SparkHome.layOut();
        spark = SparkTestSessions.builder("local-cluster[2,1,1024]", "SparkLocalClusterTest")
                // no waiting for a task's preferred executor: each of the two gets tasks as soon as it is free, so both score
                .config("spark.locality.wait", "0")
                .getOrCreate();
        long deadline = System.nanoTime() + 90_000_000_000L; // executor JVMs take seconds to start on 2 busy cores
        while (executorCount() < 2 && System.nanoTime() < deadline) Thread.sleep(200);
        assertThat(executorCount()).as("executors registered").isEqualTo(2);
    }

    @AfterAll
    static void stop() {
        if (spark != null) spark.stop();
    }

    /** Registered executors: the status tracker lists the driver's block manager too. */
    private static int executorCount() { return spark.sparkContext().statusTracker().getExecutorInfos().length - 1; }

    @Test
    void twoExecutorJvmsEachCompileOnceAndScoreLikeKilnDirectly() {
        int n = 800;
        List<Row> scored = new KilnModel().setModelPath(MlpData.model().toString()).setInputCols("x", "offset").setBatchSize(32)
                .transform(MlpData.frame(spark, n, 8)).collectAsList(); // 8 partitions, 4 tasks an executor on average
        SparkKilnModelTest.assertMatchesKiln(scored, n);

        // what each executor JVM compiled, read back by a job with a task on every executor
        Map<String, long[]> perExecutor = new HashMap<>();
        for (int attempt = 0; attempt < 5 && perExecutor.size() < 2; attempt++) {
            List<Integer> seeds = IntStream.range(0, 16).boxed().toList();
            for (String line : JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(seeds, 16)
                    .map(i -> SparkEnv.get().executorId() + " " + ProcessHandle.current().pid() + " " + ExecutorModels.compiles())
                    .collect()) {
                String[] f = line.split(" ");
                perExecutor.put(f[0], new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
            }
        }
        assertThat(perExecutor).as("executor id -> {pid, compiles}").hasSize(2);
        long driverPid = ProcessHandle.current().pid();
        assertThat(perExecutor.values().stream().map(v -> v[0]).distinct()).as("executor JVMs").hasSize(2).doesNotContain(driverPid);
        assertThat(perExecutor.values()).as("compiles in each executor JVM").allSatisfy(v -> assertThat(v[1]).isEqualTo(1));
    }

    @Test
    void kilnGenerateOpensTheLanguageModelOncePerExecutorJvm() throws Exception {
        KilnFunctions.registerGenerate(spark, "kiln_generate", SparkKilnGenerateTest.model().toString(), 4, "error");
        List<String> prompts = IntStream.range(0, 16).mapToObj(i -> "The Licensor grants " + i).toList();
        List<Row> texts = spark.createDataset(prompts, org.apache.spark.sql.Encoders.STRING()).toDF("prompt").repartition(8)
                .selectExpr("prompt", "kiln_generate(prompt) AS text").collectAsList();
        try (LanguageModel m = LanguageModel.open(SparkKilnGenerateTest.model())) {
            assertThat(texts).hasSize(16).allSatisfy(r -> assertThat(r.getString(1)).as(r.getString(0))
                    .isEqualTo(m.generate(r.getString(0), GenerationOptions.greedy().withMaxTokens(4)).text()));
        }
        // sampled with a seed: each row's generator comes from the seed and its prompt, so two executor JVMs give kiln-llm's text
        List<Row> sampled = spark.createDataset(prompts, org.apache.spark.sql.Encoders.STRING()).toDF("prompt").repartition(8)
                .selectExpr("prompt", "kiln_generate(prompt, named_struct('temperature', 1.5, 'top_p', 0.9, 'seed', 42, 'max_tokens', 4)) AS text")
                .collectAsList();
        try (LanguageModel m = LanguageModel.open(SparkKilnGenerateTest.model())) {
            assertThat(sampled).hasSize(16).allSatisfy(r -> assertThat(r.getString(1)).as(r.getString(0)).isEqualTo(m.generate(r.getString(0),
                    GenerationOptions.defaults().withMaxTokens(4).withSampling(SamplingOptions.defaults().withTemperature(1.5).withTopP(0.9)
                            .withSeed(SparkKilnGenerateTest.rowSeed(42, r.getString(0))))).text()));
        }
        Map<String, Integer> opens = new HashMap<>();
        for (int attempt = 0; attempt < 5 && opens.size() < 2; attempt++) {
            for (String line : JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(IntStream.range(0, 16).boxed().toList(), 16)
                    .map(i -> SparkEnv.get().executorId() + " " + ExecutorLanguageModels.opens()).collect()) {
                opens.put(line.split(" ")[0], Integer.parseInt(line.split(" ")[1]));
            }
        }
        // 8 tasks over two executors: each opened the model once, or never if the other ran every task
        assertThat(opens).hasSize(2);
        assertThat(opens.values()).allSatisfy(n -> assertThat(n).isBetween(0, 1));
        assertThat(opens.values().stream().mapToInt(Integer::intValue).sum()).isBetween(1, 2);
    }

    @Test
    void everyEndpointIsOnLoopback() {
        assertThat(spark.sparkContext().conf().get("spark.driver.host")).isEqualTo("127.0.0.1");
        SparkExecutorInfo[] all = spark.sparkContext().statusTracker().getExecutorInfos();
        assertThat(all).hasSize(3); // the driver and two executors
        assertThat(Arrays.stream(all).map(SparkExecutorInfo::host)).allSatisfy(h -> assertThat(h).isEqualTo("127.0.0.1"));
        assertThat(CollectionConverters.asJava(spark.sparkContext().getExecutorMemoryStatus().keySet())).allSatisfy(hostPort -> assertThat(hostPort).startsWith("127.0.0.1:"));
    }
}
