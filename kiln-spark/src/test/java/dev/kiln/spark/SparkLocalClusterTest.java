package dev.kiln.spark;

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
 * directly, and every endpoint is on loopback.
 */
class SparkLocalClusterTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() throws InterruptedException {
        SparkHome.layOut();
        spark = SparkTestSessions.builder("local-cluster[2,1,1024]", "SparkLocalClusterTest").getOrCreate();
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
    void everyEndpointIsOnLoopback() {
        assertThat(spark.sparkContext().conf().get("spark.driver.host")).isEqualTo("127.0.0.1");
        SparkExecutorInfo[] all = spark.sparkContext().statusTracker().getExecutorInfos();
        assertThat(all).hasSize(3); // the driver and two executors
        assertThat(Arrays.stream(all).map(SparkExecutorInfo::host)).allSatisfy(h -> assertThat(h).isEqualTo("127.0.0.1"));
        assertThat(CollectionConverters.asJava(spark.sparkContext().getExecutorMemoryStatus().keySet())).allSatisfy(hostPort -> assertThat(hostPort).startsWith("127.0.0.1:"));
    }
}
