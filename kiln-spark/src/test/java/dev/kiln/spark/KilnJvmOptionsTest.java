package dev.kiln.spark;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The JVM options kiln-spark supplies, and the error a JVM without them gets. */
class KilnJvmOptionsTest {
    @Test
    void executorOptionsAreAppendedToWhatTheConfHolds() {
        assertThat(KilnJvmOptions.executorJavaOptions(new SparkConf(false))).isEqualTo("--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED");
        assertThat(KilnJvmOptions.executorJavaOptions(new SparkConf(false).set("spark.executor.extraJavaOptions", "-Xss8m")))
                .isEqualTo("-Xss8m --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED");
        assertThat(KilnJvmOptions.executorJavaOptions(new SparkConf(false).set("spark.executor.extraJavaOptions", "--add-modules=jdk.incubator.vector")))
                .isEqualTo("--add-modules=jdk.incubator.vector");
    }

    /** Run in a JVM started without the options. */
    public static final class Probe {
        public static void main(String[] args) { KilnJvmOptions.requireInThisJvm(); }
    }

    @Test
    void aJvmWithoutTheVectorModuleFailsNamingTheOptions() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"), Probe.class.getName())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isNotZero();
        assertThat(out).contains("IllegalStateException").contains("without the module jdk.incubator.vector")
                .contains("--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED").contains("spark.executor.extraJavaOptions");
    }
}
