package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.IndexOutOfRangeException;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Gather, GatherElements, GatherND, ScatterElements and ScatterND of the ONNX conformance data, whose index tensors are
 * graph inputs (known only when the model runs): an index out of range fails the run with an
 * {@link IndexOutOfRangeException} naming the node, the index, the axis and the valid range, on every device; in-range
 * negative indices give the reference outputs (computed by NumPy for the ONNX test suite).
 */
class RuntimeIndexCheckTest {
    static final Path NODE = Path.of("../../shared/conformance/onnx-node").toAbsolutePath().normalize();
    static final List<String> DEVICES = List.of("INTERP", "CPU", "CLANG");

    /**
     * A conformance case whose index input {@code input} has element {@code replaced} replaced: it indexes axis
     * {@code axis} of size {@code n} of node {@code node}'s data.
     */
    record Case(String dir, String node, int input, int replaced, int axis, int n) {
        @Override
        public String toString() { return dir + "[" + replaced + "]"; }
    }

    static final List<Case> CASES = List.of(
            new Case("test_gather_0", "Gather node 'y'", 1, 2, 0, 5),
            new Case("test_gather_1", "Gather node 'y'", 1, 0, 1, 4),
            new Case("test_gather_elements_0", "GatherElements node 'y'", 1, 2, 1, 2),
            new Case("test_gathernd_example_int32", "GatherND node 'output'", 1, 2, 0, 2),
            new Case("test_gathernd_example_int32", "GatherND node 'output'", 1, 3, 1, 2),
            new Case("test_gathernd_example_int32_batch_dim1", "GatherND node 'output'", 1, 1, 1, 2),
            new Case("test_scatter_elements_with_axis", "ScatterElements node 'y'", 1, 1, 1, 5),
            new Case("test_scatter_elements_without_axis", "ScatterElements node 'y'", 1, 4, 0, 3),
            new Case("test_scatternd", "ScatterND node 'y'", 1, 1, 0, 4));

    static Stream<Arguments> badIndices() {
        List<Arguments> out = new ArrayList<>();
        for (String device : DEVICES) {
            for (Case c : CASES) for (long bad : new long[] {c.n, -c.n - 1, 100_000_000L}) out.add(Arguments.of(device, c, bad));
        }
        return out.stream();
    }

    /** Skips, saying why, on a device this machine cannot provide (CLANG without a C compiler). */
    static void assumeDevice(String device) {
        Optional<String> unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
    }

    /** The case's inputs on {@code device}, by name, index input {@code input} changed by {@code change}. */
    static Map<String, Tensor> inputs(OnnxModel m, String dir, String device, int input, java.util.function.UnaryOperator<long[]> change) {
        Map<String, Tensor> in = new HashMap<>();
        for (int i = 0; i < m.inputs().size(); i++) {
            Tensor t = TensorProtos.read(NODE.resolve(dir).resolve("test_data_set_0/input_" + i + ".pb"));
            if (i == input) t = Tensor.of(change.apply(t.toLongArray()), t.dims()).cast(t.dtype());
            in.put(m.inputs().get(i).name(), t.to(device));
        }
        return in;
    }

    @ParameterizedTest(name = "{0} {1} index {2}")
    @MethodSource("badIndices")
    void anIndexOutOfRangeFailsTheRunNamingTheNode(String device, Case c, long bad) {
        assumeDevice(device);
        OnnxModel m = OnnxModel.load(NODE.resolve(c.dir).resolve("model.onnx"));
        Map<String, Tensor> in = inputs(m, c.dir, device, c.input, ids -> {
            ids[c.replaced] = bad;
            return ids;
        });
        IndexOutOfRangeException e = catchThrowableOfType(IndexOutOfRangeException.class, () -> m.run(in).getFirst().realize());
        assertThat(e).as("%s on %s with index %d", c, device, bad).isNotNull();
        assertThat(e).hasMessage(c.node + ": index " + bad + " is out of range for axis " + c.axis + " of size " + c.n
                + "; valid are " + -c.n + " to " + (c.n - 1));
    }

    /**
     * The reference outputs from negative indices: the two cases written with them, and every other case with each
     * index replaced by its negative form (the same elements, so the same reference output).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void inRangeNegativeIndicesGiveTheReferenceOutputs(String device) {
        assumeDevice(device);
        Map<String, int[]> axisSizes = new HashMap<>(); // per case, the size each index element's axis has, in C order
        axisSizes.put("test_gather_negative_indices", null);
        axisSizes.put("test_gather_elements_negative_indices", null);
        axisSizes.put("test_gather_0", new int[] {5, 5, 5});
        axisSizes.put("test_gather_elements_0", new int[] {2, 2, 2, 2});
        axisSizes.put("test_gathernd_example_int32", new int[] {2, 2, 2, 2});
        axisSizes.put("test_gathernd_example_int32_batch_dim1", new int[] {2, 2});
        axisSizes.put("test_scatter_elements_without_axis", new int[] {3, 3, 3, 3, 3, 3});
        axisSizes.put("test_scatternd", new int[] {4, 4});
        for (var e : axisSizes.entrySet()) {
            String dir = e.getKey();
            OnnxModel m = OnnxModel.load(NODE.resolve(dir).resolve("model.onnx"));
            Map<String, Tensor> in = inputs(m, dir, device, 1, ids -> {
                if (e.getValue() == null) return ids;
                for (int k = 0; k < ids.length; k++) ids[k] -= e.getValue()[k];
                return ids;
            });
            if (e.getValue() != null) assertThat(java.util.Arrays.stream(in.get(m.inputs().get(1).name()).toLongArray()).max().orElseThrow()).as(dir).isNegative();
            Tensor want = TensorProtos.read(NODE.resolve(dir).resolve("test_data_set_0/output_0.pb"));
            Tensor got = m.run(in).getFirst();
            assertThat(got.dtype()).isEqualTo(want.dtype());
            assertThat(got.cast(DType.F64).toDoubleArray()).as("%s on %s", dir, device).containsExactly(want.cast(DType.F64).toDoubleArray());
        }
    }

    /** One plan prepared once: good indices run, bad ones written into the same input fail it, good ones run again. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void aPreparedModelChecksEveryRun(String device) {
        assumeDevice(device);
        OnnxModel m = OnnxModel.load(NODE.resolve("test_gather_negative_indices/model.onnx"));
        Tensor want = TensorProtos.read(NODE.resolve("test_gather_negative_indices/test_data_set_0/output_0.pb"));
        try (OnnxPlan plan = m.prepare(DeviceRegistry.get(device), Map.of())) {
            Map<String, Tensor> good = inputs(m, "test_gather_negative_indices", device, 1, ids -> ids);
            assertThat(plan.run(good).getFirst().toFloatArray()).containsExactly(want.toFloatArray());
            Map<String, Tensor> bad = inputs(m, "test_gather_negative_indices", device, 1, ids -> new long[] {0, -9, -11});
            IndexOutOfRangeException e = catchThrowableOfType(IndexOutOfRangeException.class, () -> plan.run(bad));
            assertThat(e).hasMessage("Gather node 'y': index -11 is out of range for axis 0 of size 10; valid are -10 to 9");
            assertThat(plan.run(good).getFirst().toFloatArray()).containsExactly(want.toFloatArray());
        }
    }
}
