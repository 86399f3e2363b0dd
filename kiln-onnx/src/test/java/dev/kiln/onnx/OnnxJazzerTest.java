package dev.kiln.onnx;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.kiln.fuzz.FuzzCampaign;
import dev.kiln.runtime.MemoryBudget;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.util.Map;
import java.util.TreeMap;

/**
 * Coverage-guided fuzzing of the ONNX loader and graph builder with Jazzer (issue 13): the target of {@link OnnxFuzzTest}
 * ({@link OnnxFuzzTest#loadAndBuild}: bytes parsed with {@link OnnxModel#parse}, built on INTERP with inputs of ones),
 * under the same memory budget ({@value OnnxFuzzTest#BUDGET}, {@code kiln.fuzz.budget}); the exceptions of
 * {@link OnnxFuzzTest#ALLOWED} are typed outcomes, any other throwable is a finding.
 *
 * <p>In the default test run Jazzer replays its inputs directory ({@code OnnxJazzerTestInputs/loadAndBuild} on the test
 * class path, which the build fills from {@code fuzz/onnx/seeds} and {@code fuzz/onnx/crashers}); with
 * {@code JAZZER_FUZZ=1} in the environment it fuzzes, with coverage, for {@code maxDuration}
 * ({@code -Djazzer.max_duration} and {@code -Djazzer.max_executions} override it). See RELIABILITY.md.
 */
class OnnxJazzerTest {
    private static String savedBudget;
    /** Executions by outcome ("ok" or the exception's simple name), printed at the end: the long runs' counts. */
    private static final Map<String, Long> OUTCOMES = new TreeMap<>();
    /** The memory budget of one fuzz input under Jazzer. */
    static final String JAZZER_BUDGET = "64m";

    @BeforeAll
    static void budget() {
        savedBudget = System.getProperty(MemoryBudget.PROPERTY);
        // a sixteenth of OnnxFuzzTest's budget: under Jazzer's coverage instrumentation host work runs several times
        // slower, and a Resize to 33 million values within 1 GiB took 16 s on CI's two cores (a "slow input" finding;
        // the input is in fuzz/onnx/crashers); 64 MiB bounds such host loops to a few seconds
        System.setProperty(MemoryBudget.PROPERTY, System.getProperty("kiln.fuzz.budget", JAZZER_BUDGET));
    }

    @AfterAll
    static void restoreBudget() {
        System.out.println("OnnxJazzerTest outcomes: " + OUTCOMES);
        if (savedBudget == null) System.clearProperty(MemoryBudget.PROPERTY);
        else System.setProperty(MemoryBudget.PROPERTY, savedBudget);
    }

    @FuzzTest(maxDuration = "30s")
    void loadAndBuild(byte[] bytes) {
        long t0 = System.nanoTime();
        String outcome = "ok";
        try {
            OnnxFuzzTest.loadAndBuild(bytes);
        } catch (Throwable e) {
            if (!OnnxFuzzTest.ALLOWED.contains(e.getClass())) throw e;
            outcome = e.getClass().getSimpleName();
        }
        OUTCOMES.merge(outcome, 1L, Long::sum);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        // as FuzzCampaign: an input slower than 10 s is a finding (a JUnit @Timeout would bound the whole fuzzing run)
        if (ms > FuzzCampaign.SLOW_MILLIS) throw new AssertionError("slow input: " + ms + " ms (" + outcome + ")");
    }
}
