package dev.kiln.onnx;

import dev.kiln.fuzz.FuzzCampaign;
import dev.kiln.fuzz.ByteMutator;

import dev.kiln.Tensor;
import dev.kiln.runtime.MemoryBudget;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Fuzzing of the ONNX loader and graph builder (issue 13): any bytes are parsed as a model and, when that succeeds,
 * built on INTERP with inputs of ones in the declared shapes (ones, not zeros, so that a shape, step or depth input is valid). Each input either builds or fails with
 * {@link OnnxFormatException}, {@link UnsupportedOnnxOpException} or, for inputs the model rejects, a plain
 * {@link IllegalArgumentException} (a {@code LoopLimitException} among them); anything else is a finding. Inputs are given by
 * the declared kind (a sequence of one tensor of ones, an optional holding ones, strings "1"). The committed seeds ({@code fuzz/onnx/seeds}: small
 * conformance models) and crashers ({@code fuzz/onnx/crashers}) replay in every run; then a bounded, seeded mutation run
 * (2,000 inputs or 10 s by default; {@code kiln.fuzz.iterations}, {@code kiln.fuzz.seconds} and {@code kiln.fuzz.seed}
 * set it, see RELIABILITY.md). The outputs are built, not computed.
 *
 * <p>Every input runs under a memory budget of {@value #BUDGET} ({@code kiln.fuzz.budget} changes it), not the machine's:
 * a model that folds gigabytes of constants is then refused before it allocates, on every machine alike, instead of
 * taking seconds and most of the heap where the machine happens to have the memory (the former memory bombs of
 * {@code fuzz/onnx/open}, now crashers, took 17 s under a 6 GiB heap's budget).
 */
class OnnxFuzzTest {
    static final String BUDGET = "1g";
    private String savedBudget;

    @BeforeEach
    void budget() {
        savedBudget = System.getProperty(MemoryBudget.PROPERTY);
        System.setProperty(MemoryBudget.PROPERTY, System.getProperty("kiln.fuzz.budget", BUDGET));
    }

    @AfterEach
    void restoreBudget() {
        if (savedBudget == null) System.clearProperty(MemoryBudget.PROPERTY);
        else System.setProperty(MemoryBudget.PROPERTY, savedBudget);
    }

    /** Larger declared inputs are not built: the harness's own zero tensors must not be what runs out of memory. */
    private static final long MAX_INPUT_ELEMENTS = 1 << 16;
    private static final List<String> TOKENS = List.of("\u0008", "\u0012", "\u001a", "\"", "*", ":", "B", "\u00ff\u00ff\u00ff\u00ff\u000f",
            "\u0080\u0080\u0080\u0080\u0080\u0080\u0080\u0080\u0080\u0001", "Gather", "Reshape", "Slice", "Pad", "axis", "pads");

    /** The most iterations a loop of a fuzz input runs while it is built. */
    static final long LOOP_LIMIT = 10_000;

    /**
     * The typed outcomes of {@link #loadAndBuild} (the exact classes; also {@link OnnxJazzerTest}'s); a loop past
     * {@link #LOOP_LIMIT} names its node and the setting ({@link dev.kiln.LoopLimitException}).
     */
    static final Set<Class<? extends Throwable>> ALLOWED =
            Set.of(OnnxFormatException.class, UnsupportedOnnxOpException.class, IllegalArgumentException.class, dev.kiln.LoopLimitException.class);

    private static FuzzCampaign campaign() {
        return new FuzzCampaign("onnx", OnnxFuzzTest::loadAndBuild, ALLOWED);
    }

    /** The target (also {@link OnnxJazzerTest}'s): {@code bytes} parsed as a model and built on INTERP. */
    static void loadAndBuild(byte[] bytes) {
        OnnxModel model = OnnxModel.parse(bytes, "fuzz.onnx");
        Map<String, OnnxValue> in = new HashMap<>();
        for (ValueInfo v : model.inputs()) {
            int[] d = v.dims() == null ? new int[0] : new int[v.dims().size()];
            long numel = 1;
            for (int k = 0; k < d.length; k++) {
                ValueInfo.Dim dim = v.dims().get(k);
                long size = dim.isFixed() ? dim.size() : 1;
                numel *= Math.max(size, 1);
                if (size > MAX_INPUT_ELEMENTS || numel > MAX_INPUT_ELEMENTS) return;
                d[k] = (int) size;
            }
            // a string input holds "1" (a number, as ones are); a sequence one element of ones; an optional ones
            if (v.kind() == ValueInfo.Kind.STRING) {
                var shape = dev.kiln.types.Shape.of(d);
                in.put(v.name(), new OnnxValue.StringValue(java.util.Collections.nCopies((int) shape.numel(), "1"), shape));
                continue;
            }
            Tensor ones = Tensor.ones(v.dtype(), d).to("INTERP");
            in.put(v.name(), switch (v.kind()) {
                case TENSOR -> new OnnxValue.TensorValue(ones);
                case SEQUENCE -> new OnnxValue.SequenceValue(List.of(ones), v.dtype());
                case OPTIONAL_TENSOR -> new OnnxValue.OptionalValue(new OnnxValue.TensorValue(ones));
                case OPTIONAL_SEQUENCE -> new OnnxValue.OptionalValue(new OnnxValue.SequenceValue(List.of(ones), v.dtype()));
                case STRING -> throw new AssertionError(v);
            });
        }
        // a loop run while the graph is built (scan outputs of unknown length) stops within a fuzz input's time, as memory
        // stops within its budget
        dev.kiln.LoopLimit.with(LOOP_LIMIT, () -> model.runValues(in, dev.kiln.runtime.DeviceRegistry.get("INTERP")));
    }

    @Test
    void seedsAndCrashersReplayTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(OnnxFuzzTest.class, "/fuzz/onnx/seeds");
        List<byte[]> crashers = FuzzCampaign.resources(OnnxFuzzTest.class, "/fuzz/onnx/crashers");
        FuzzCampaign.Report r = campaign().replay(seeds).replay(crashers).report();
        System.out.println("OnnxFuzzTest replay: " + r);
        assertThat(seeds).hasSizeGreaterThanOrEqualTo(5);
        assertThat(r.findings()).isEmpty();
        // all but reshape_extended_dims build: its shape input of ones cannot hold its data
        assertThat(r.outcomes().get("ok")).as("seed models build").isGreaterThanOrEqualTo(seeds.size() - 1);
    }

    @Test
    void mutatedModelsFailTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(OnnxFuzzTest.class, "/fuzz/onnx/seeds");
        long seconds = FuzzCampaign.setting("kiln.fuzz.seconds", 10);
        // the campaign stops itself after its seconds; the margin catches one input that never returns (a hang)
        long iterations = FuzzCampaign.setting("kiln.fuzz.iterations", 2_000), seed = FuzzCampaign.setting("kiln.fuzz.seed", 13);
        FuzzCampaign.Report r = assertTimeoutPreemptively(Duration.ofSeconds(seconds + 120),
                () -> campaign().mutate(seeds, new ModelMutator(new ByteMutator(TOKENS)), iterations, seconds, seed).report());
        System.out.println("OnnxFuzzTest mutation: " + r);
        assertThat(r.findings()).as("models that ended outside success and the typed exceptions (saved under target/fuzz-findings/onnx)").isEmpty();
    }
}
