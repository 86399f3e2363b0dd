package dev.kiln.spark;

import org.apache.spark.SparkConf;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The JVM options that every JVM running Kiln needs on JDK 25, the driver and each executor, so that no user has to
 * discover them: {@value #JAVA_OPTIONS}. Kiln's kernels use the Vector API, an incubator module that a JVM on the class
 * path (as Spark runs) does not resolve unless asked; Kiln's memory uses the foreign-function API's restricted methods,
 * which JDK 25 allows with a warning, or refuses under {@code --illegal-native-access=deny}, unless native access is
 * enabled.
 *
 * <pre>{@code
 * SparkSession.builder().config("spark.executor.extraJavaOptions", KilnJvmOptions.executorJavaOptions(conf))...
 * spark-submit --driver-java-options "--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED" \
 *              --conf "spark.executor.extraJavaOptions=--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"
 * }</pre>
 *
 * A JVM that lacks the Vector API fails the first task that needs a model with an {@link IllegalStateException} naming
 * these options and where they go, rather than a {@link NoClassDefFoundError} from inside a kernel; a driver whose
 * {@code spark.executor.extraJavaOptions} does not name the module logs a warning when a model is first used.
 */
public final class KilnJvmOptions {
    /** The options, for {@code spark.executor.extraJavaOptions} and the driver's java options. */
    public static final String JAVA_OPTIONS = "--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED";

    static final String EXECUTOR_OPTIONS_KEY = "spark.executor.extraJavaOptions";
    private static final String VECTOR_MODULE = "jdk.incubator.vector";
    private static final System.Logger LOG = System.getLogger(KilnJvmOptions.class.getName());
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private KilnJvmOptions() {}

    /**
     * {@code conf}'s {@code spark.executor.extraJavaOptions} with {@link #JAVA_OPTIONS} appended (kept as they are where
     * they already name the Vector API module), for a session not started yet.
     */
    public static String executorJavaOptions(SparkConf conf) {
        String existing = conf.get(EXECUTOR_OPTIONS_KEY, "").strip();
        if (existing.contains(VECTOR_MODULE)) return existing;
        return existing.isEmpty() ? JAVA_OPTIONS : existing + " " + JAVA_OPTIONS;
    }

    /**
     * Fails unless this JVM resolved the Vector API module (an executor's first model calls it before compiling).
     *
     * @throws IllegalStateException naming the options and where they go
     */
    static void requireInThisJvm() {
        if (ModuleLayer.boot().findModule(VECTOR_MODULE).isEmpty()) {
            throw new IllegalStateException("this JVM runs without the module " + VECTOR_MODULE + ", which Kiln's kernels need: start the driver with"
                    + " the java options \"" + JAVA_OPTIONS + "\" and set " + EXECUTOR_OPTIONS_KEY + " to them for the executors"
                    + " (KilnJvmOptions.executorJavaOptions)");
        }
    }

    /** Logs once per SparkContext application a warning if the executors' java options do not name the Vector API module. */
    static void warnIfExecutorsLackThem(SparkConf conf) {
        String master = conf.get("spark.master", "");
        if (master.startsWith("local[") || master.equals("local")) return; // the executor is this JVM, which requireInThisJvm checks
        if (conf.get(EXECUTOR_OPTIONS_KEY, "").contains(VECTOR_MODULE)) return;
        if (WARNED.add(conf.get("spark.app.id", ""))) {
            LOG.log(System.Logger.Level.WARNING, EXECUTOR_OPTIONS_KEY + " does not add the module " + VECTOR_MODULE + ": Kiln's tasks fail on executors"
                    + " started without it (unless JAVA_TOOL_OPTIONS adds it there); set it to \"" + JAVA_OPTIONS + "\"");
        }
    }
}
