package dev.kiln.spark;

import org.apache.spark.sql.SparkSession;

/**
 * The Spark sessions of the tests: loopback only (the driver binds and advertises 127.0.0.1, executors inherit
 * SPARK_LOCAL_IP=127.0.0.1 from the test JVM's environment, which the pom sets), no UI, few shuffle partitions. One per
 * test class; each class stops its own.
 */
final class SparkTestSessions {
    private SparkTestSessions() {}

    /** The flags Kiln's executors need (the same set a cluster's spark.executor.extraJavaOptions needs). */
    static final String EXECUTOR_JAVA_OPTIONS = KilnJvmOptions.JAVA_OPTIONS;

    static SparkSession.Builder builder(String master, String app) {
        SparkSession.getActiveSession().foreach(s -> { s.stop(); return null; });
        return SparkSession.builder()
                .master(master)
                .appName(app)
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "4")
                .config("spark.executor.extraJavaOptions", EXECUTOR_JAVA_OPTIONS);
    }

    /** A {@code local[2]} session. */
    static SparkSession local(String app) { return builder("local[2]", app).getOrCreate(); }
}
