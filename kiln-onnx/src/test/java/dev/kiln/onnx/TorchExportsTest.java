package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Models with control flow as users export them from PyTorch ({@code tools/golden/gen_torch_exports.py}: a scripted
 * data-dependent {@code if} and {@code while}, a scripted greedy decoder that grows its output with {@code torch.cat} and
 * breaks at the end-of-sequence token, a detector head ending in NonMaxSuppression), against PyTorch's own outputs.
 */
class TorchExportsTest {

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void exportsMatchPyTorch(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        Path cases = Path.of(TorchExportsTest.class.getResource("/torch/nms_head/model.onnx").toURI()).getParent().getParent();
        ConformanceRunner.Report report = ConformanceRunner.run(List.of(cases), device, line -> {});
        assertThat(report.results()).extracting(ConformanceRunner.CaseResult::name)
                .containsExactlyInAnyOrder("greedy_attend", "greedy_attend_last", "greedy_decode", "greedy_last", "greedy_list", "nms_head", "nms_two_class_head", "script_if_sizes",
                        "script_if_while", "script_if_while_negative", "script_rnn_early_exit", "script_while_list");
        assertThat(report.results()).allSatisfy(r -> assertThat(r.status()).as(r.line()).isEqualTo(ConformanceRunner.Status.PASS));
    }

    /**
     * The scripted {@code while} needs no input values while it is built: its trip count (INT64_MAX) and its condition are
     * read when the plan runs, so one prepared plan gives PyTorch's outputs for both signs of the input (the If selects).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void scriptedWhileLoopRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/script_if_while/model.onnx").toURI()).getParent();
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx")); OnnxPlan plan = model.prepare(d, Map.of())) {
            for (String c : List.of("script_if_while", "script_if_while_negative")) {
                Path data = dir.resolveSibling(c).resolve("test_data_set_0");
                List<Tensor> out = plan.run(Map.of("x", TensorProtos.read(data.resolve("input_0.pb")).to(d).realize()));
                Tensor y = TensorProtos.read(data.resolve("output_0.pb")), n = TensorProtos.read(data.resolve("output_1.pb"));
                assertThat(out.get(0).realize().toFloatArray()).as(c).containsExactly(y.toFloatArray(), within(1e-4f));
                assertThat(out.get(1).realize().toLongArray()).as(c).containsExactly(n.toLongArray());
            }
        }
    }

    /**
     * TorchScript loops that build a Python list ({@code ys.append(y)}: a Loop-carried sequence the body appends to, read by
     * ConcatFromSequence and SequenceLength after the loop) in one prepared plan per model, run on each data set in turn:
     * the list is the loop's scan output, its length bound when the plan runs. The scripted {@code while} runs 14, 84 and 1
     * iterations (84 more than the plan first reserves rows for: it grows once), the greedy decoder 1 (EOS), 100 and 1
     * tokens from its {@code max_len} input. Memory back to the baseline once the plan is closed.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void scriptedListLoopsRunInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        assertThat(runPrepared(device, "script_while_list", 3, 1)).containsExactly(14, 84, 1);
        assertThat(runPrepared(device, "greedy_list", 3, 0)).containsExactly(1, 100, 1);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plans' memory is freed").isEqualTo(baseline);
    }

    /**
     * The scripted greedy decoder that grows its tokens with {@code torch.cat([tokens, tok])} (a Loop-carried tensor whose
     * shape changes every iteration, read only by that Concat) in one prepared plan: the body is one plan, the tokens its
     * scan output joined to the start by a sized step, their length bound when the plan runs (5 and 13 tokens: EOS early, or
     * all 12 steps).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void greedyDecoderGrowingByConcatRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        assertThat(runPrepared(device, "greedy_decode", 4, 0)).containsExactly(5, 13, 5, 5);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /**
     * The scripted greedy decoder that reads its last token from the tokens it grows ({@code tok = tokens[-1:]}, a Slice of the
     * loop-carried tensor, beside {@code torch.cat([tokens, nxt])}) in one prepared plan: the body is one plan, the last token
     * carried beside the loop's states, the tokens' length bound when the plan runs (13, 5, 3 and 2 tokens). Under run the same
     * body is one plan too: nothing is logged as built per iteration.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void greedyDecoderReadingItsLastTokenRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        assertThat(runPrepared(device, "greedy_last", 4, 0)).containsExactly(13, 5, 3, 2);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/greedy_last/model.onnx").toURI()).getParent();
        var d = DeviceRegistry.get(device);
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx"))) {
            Path data = dir.resolve("test_data_set_1");
            List<Tensor> out = model.run(Map.of("start", TensorProtos.read(data.resolve("input_0.pb")).to(d).realize(),
                    "h", TensorProtos.read(data.resolve("input_1.pb")).to(d).realize()));
            assertThat(out.getFirst().toLongArray()).containsExactly(TensorProtos.read(data.resolve("output_0.pb")).toLongArray());
        }
        assertThat(LoopUnrolling.said()).noneMatch(s -> s.contains("greedy_last"));
    }

    /**
     * The scripted greedy decoder that attends over all the tokens it has made so far (the embeddings of the loop-carried
     * {@code tokens}, which {@code torch.cat} grows every iteration) in one prepared plan: the body is one plan over the
     * tokens so far, carried at the most they may grow to with their length bound before each iteration (14, 12, 9 and 5
     * tokens). The plan first reserves 12 rows (the constant trip count), so no run outgrows it. Under run the same body is
     * one plan too: nothing is logged as built per iteration.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void greedyDecoderAttendingOverItsTokensRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        assertThat(runPrepared(device, "greedy_attend", 4, 0)).containsExactly(14, 12, 9, 5);
        assertThat(runPrepared(device, "greedy_attend_last", 4, 0)).containsExactly(14, 5, 4, 3);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plans' memory is freed").isEqualTo(baseline);
        assertRunsAsOneBodyPlan(device, "greedy_attend", 0, 3);
        assertRunsAsOneBodyPlan(device, "greedy_attend_last", 0, 1);
    }

    /**
     * A scripted recurrent cell over its input's rows ({@code x[t:t + 1]}: a Slice from the iteration to it plus one, a part
     * of length 1 at an offset known when the body runs) that stops when its state passes a limit: one prepared plan and
     * one body plan (2, 7 and 1 steps); under run the same, nothing built per iteration.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void recurrentCellOverRowsWithAnEarlyExitRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        // every output against PyTorch's, the steps among them; the state has 5 columns whatever ran
        assertThat(runPrepared(device, "script_rnn_early_exit", 3, 1)).containsExactly(5, 5, 5);
        assertRunsAsOneBodyPlan(device, "script_rnn_early_exit", 0, 2);
    }

    /** Case {@code c} under {@link OnnxModel#run} on the given data sets: PyTorch's outputs, and no loop built per iteration. */
    private static void assertRunsAsOneBodyPlan(String device, String c, int... sets) throws Exception {
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/" + c + "/model.onnx").toURI()).getParent();
        var d = DeviceRegistry.get(device);
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx"))) {
            for (int set : sets) {
                Path data = dir.resolve("test_data_set_" + set);
                Map<String, Tensor> in = new java.util.LinkedHashMap<>();
                for (int k = 0; k < model.inputs().size(); k++) {
                    in.put(model.inputs().get(k).name(), TensorProtos.read(data.resolve("input_" + k + ".pb")).to(d).realize());
                }
                List<Tensor> out = model.run(in);
                for (int k = 0; k < out.size(); k++) {
                    assertThat(out.get(k).toDoubleArray()).as("%s set %d output %d", c, set, k)
                            .containsExactly(TensorProtos.read(data.resolve("output_" + k + ".pb")).toDoubleArray(), within(1e-5));
                }
            }
        }
        assertThat(LoopUnrolling.said()).noneMatch(s -> s.contains("/" + c + "/"));
    }

    /**
     * A scripted {@code if} whose branches give different sizes ({@code x[x > 0]}, a data-dependent count, or {@code x[:2] * 2})
     * in one prepared plan: the branch is chosen when the plan runs and the output comes at its size (3, 2, 4, 1 elements).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void scriptedIfOfDifferentSizesRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        assertThat(runPrepared(device, "script_if_sizes", 4, 0)).containsExactly(3, 2, 4, 1);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /**
     * Case {@code c} prepared once on {@code device} and run on its first {@code sets} data sets, each output against
     * PyTorch's (dims and values); the length of axis {@code axis} of output 0 in each run.
     */
    private static List<Integer> runPrepared(String device, String c, int sets, int axis) throws Exception {
        var d = DeviceRegistry.get(device);
        List<Integer> lengths = new java.util.ArrayList<>();
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/" + c + "/model.onnx").toURI()).getParent();
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx")); OnnxPlan plan = model.prepare(d, Map.of())) {
            for (int set = 0; set < sets; set++) {
                Path data = dir.resolve("test_data_set_" + set);
                Map<String, Tensor> in = new java.util.LinkedHashMap<>();
                for (int k = 0; k < model.inputs().size(); k++) {
                    in.put(model.inputs().get(k).name(), TensorProtos.read(data.resolve("input_" + k + ".pb")).to(d).realize());
                }
                List<Tensor> out = plan.run(in);
                for (int k = 0; k < out.size(); k++) {
                    Tensor want = TensorProtos.read(data.resolve("output_" + k + ".pb"));
                    assertThat(out.get(k).dims()).as("%s set %d output %d", c, set, k).containsExactly(want.dims());
                    assertThat(out.get(k).toDoubleArray()).as("%s set %d output %d", c, set, k).containsExactly(want.toDoubleArray(), within(1e-5));
                }
                lengths.add(out.getFirst().dims()[axis]);
            }
        }
        return lengths;
    }

    /**
     * The detector head in one prepared plan, run on its four data sets in turn: NonMaxSuppression selects when the plan
     * runs (5, 5, 0 and 3 boxes), and the gathers of the kept boxes and scores follow each run's count.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void detectorHeadRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/nms_head/model.onnx").toURI()).getParent();
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        List<Integer> counts = new java.util.ArrayList<>();
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx")); OnnxPlan plan = model.prepare(d, Map.of())) {
            for (int set = 0; set < 4; set++) {
                Path data = dir.resolve("test_data_set_" + set);
                List<Tensor> out = plan.run(Map.of("features", TensorProtos.read(data.resolve("input_0.pb")).to(d).realize()));
                for (int k = 0; k < 3; k++) {
                    Tensor want = TensorProtos.read(data.resolve("output_" + k + ".pb"));
                    assertThat(out.get(k).dims()).as("set %d output %d", set, k).containsExactly(want.dims());
                    assertThat(out.get(k).toDoubleArray()).as("set %d output %d", set, k).containsExactly(want.toDoubleArray(), within(1e-5));
                }
                counts.add(out.getFirst().dims()[0]);
            }
        }
        assertThat(counts).containsExactly(5, 5, 0, 3);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /**
     * A detector head of two classes whose kept boxes' scores are read by advanced indexing, which the exporter writes as a
     * Reshape to the Shape of the selected count (a size known only when the plan runs), before TopK keeps the best three:
     * one prepared plan, 10, 6 and 7 boxes selected.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void twoClassDetectorHeadRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        assertThat(runPrepared(device, "nms_two_class_head", 3, 0)).containsExactly(10, 6, 7);
    }
}
