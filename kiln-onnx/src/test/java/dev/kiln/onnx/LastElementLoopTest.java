package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxTestModels.value;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Loop whose body reads the last element of the tensor it grows by Concat (a greedy decoder's {@code tokens[-1]}, as
 * TorchScript exports it: a Slice from -1 to INT64_MAX, or a Gather of -1) is one body plan, in a prepared plan and under
 * run: the last element is carried as a one-long tail beside the loop's states ({@link GrownTensors#lastReadProblem}). So
 * is a body that reads all of it (a sum of the tokens so far: {@link GrownTensors.Whole}), or its last two elements where
 * it starts with two; from a start of one, {@code tokens[-2:]} holds one or two, a length its shape cannot hold: built per
 * iteration under run, saying why, and refused in a prepared plan. Models built in Java, checked against Java.
 */
class LastElementLoopTest {
    private static final int INT64 = TensorProto.DataType.INT64_VALUE, BOOL = TensorProto.DataType.BOOL_VALUE;

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(List.of(attrs)).build();
    }

    private static TensorProto longs(String name, long[] dims, long... v) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(INT64);
        for (long d : dims) t.addDims(d);
        for (long x : v) t.addInt64Data(x);
        return t.build();
    }

    /** How the body reads the last token. */
    enum Read { SLICE, GATHER, SECOND_TO_LAST, SUM }

    /**
     * tokens starts as the input {@code start} and grows by next = (3 * last + 1) mod 11 per iteration while next is not 0
     * and fewer than M (an input) ran: a TorchScript {@code while} with a break, reading {@code tokens[-1]} as {@code read} says.
     */
    private static ModelProto decoder(Read read) { return decoder(read, 1); }

    /** The decoder of a start of {@code startLength} tokens. */
    private static ModelProto decoder(Read read, int startLength) {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(OnnxTestModels.anyShape("tokens_in", INT64))
                .addInitializer(longs("three", new long[0], 3)).addInitializer(longs("one", new long[0], 1))
                .addInitializer(longs("eleven", new long[0], 11)).addInitializer(longs("zero", new long[0], 0))
                .addInitializer(longs("minus1", new long[] {1}, -1)).addInitializer(longs("minus2", new long[] {1}, -2))
                .addInitializer(longs("end", new long[] {1}, Long.MAX_VALUE)).addInitializer(longs("axis0", new long[] {1}, 0))
                .addInitializer(longs("gather_at", new long[0], -1));
        switch (read) {
            case SLICE -> body.addNode(node("Slice", "last", List.of("tokens_in", "minus1", "end", "axis0"), List.of("last")));
            case GATHER -> body.addNode(node("Gather", "last_at", List.of("tokens_in", "gather_at"), List.of("last0")))
                    .addNode(node("Unsqueeze", "last", List.of("last0", "axis0"), List.of("last")));
            case SECOND_TO_LAST -> body.addNode(node("Slice", "last", List.of("tokens_in", "minus2", "end", "axis0"), List.of("last_two")))
                    .addNode(node("ReduceMax", "latest", List.of("last_two"), List.of("last"),
                            AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(1).build()));
            case SUM -> body.addNode(node("ReduceSum", "last", List.of("tokens_in"), List.of("last")));
        }
        body.addNode(node("Mul", "times3", List.of("last", "three"), List.of("m3")))
                .addNode(node("Add", "plus1", List.of("m3", "one"), List.of("p1")))
                .addNode(node("Mod", "mod11", List.of("p1", "eleven"), List.of("next")))
                .addNode(node("Concat", "append", List.of("tokens_in", "next"), List.of("tokens_out"),
                        AttributeProto.newBuilder().setName("axis").setType(AttributeProto.AttributeType.INT).setI(0).build()))
                .addNode(node("ReduceMax", "next0", List.of("next"), List.of("n0"),
                        AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(0).build()))
                .addNode(node("Equal", "eos", List.of("n0", "zero"), List.of("stop")))
                .addNode(node("Not", "go_on", List.of("stop"), List.of("cond_out")))
                .addOutput(value("cond_out", BOOL)).addOutput(OnnxTestModels.anyShape("tokens_out", INT64));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("start", INT64, startLength)).addInput(value("m", INT64))
                .addNode(node("Loop", "decode", List.of("m", "", "start"), List.of("tokens"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()))
                .addOutput(OnnxTestModels.anyShape("tokens", INT64));
        return OnnxTestModels.model(17, g);
    }

    /** The decode in Java: the start, then each next token until 0 (kept) or M tokens were added. */
    private static long[] decoded(long start, long m) {
        List<Long> out = new ArrayList<>(List.of(start));
        for (long t = 0; t < m; t++) {
            long next = (3 * out.getLast() + 1) % 11;
            out.add(next);
            if (next == 0) break;
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    /** The decode of {@link Read#SUM} in Java: the next token from the sum of all so far, (3 * sum + 1) mod 11. */
    private static long[] decodedFromSums(long start, long m) {
        List<Long> out = new ArrayList<>(List.of(start));
        long sum = start;
        for (long t = 0; t < m; t++) {
            long next = (3 * sum + 1) % 11;
            out.add(next);
            sum += next;
            if (next == 0) break;
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static Map<String, Tensor> inputs(Device d, long start, long m) { return inputs(d, new long[] {start}, m); }

    private static Map<String, Tensor> inputs(Device d, long[] start, long m) {
        return Map.of("start", Tensor.of(start, start.length).to(d).realize(), "m", Tensor.scalar(m, DType.I64).to(d).realize());
    }

    /**
     * Read by Slice and by Gather, in one prepared plan per model, on several starts and M (0 to past the plan's first rows,
     * where the plan grows): each run equals the decode in Java. Start 1 reaches 0 after four tokens (1, 4, 2, 7, 0); 5, 3 and 10
     * never do.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void theLastElementIsReadInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        for (Read read : new Read[] {Read.SLICE, Read.GATHER}) {
            try (OnnxPlan plan = OnnxModel.fromProto(decoder(read), "last.onnx").prepare(d, Map.of())) {
                long[][] runs = {{1, 3}, {5, 200}, {1, 0}, {3, 20}, {10, 1}};
                for (long[] r : runs) {
                    List<Tensor> out = plan.run(inputs(d, r[0], r[1]));
                    assertThat(out.getFirst().toLongArray()).as("%s start %d M %d", read, r[0], r[1]).containsExactly(decoded(r[0], r[1]));
                }
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plans' memory is freed").isEqualTo(baseline);
    }

    /** Under run, the same loop is one body plan too: {@value LoopUnrolling#MAX_ITERATIONS} + 1,000 tokens, nothing unrolled. */
    @Test
    void theLastElementIsReadUnderRun() {
        var d = DeviceRegistry.get("CPU");
        long m = LoopUnrolling.MAX_ITERATIONS + 1000;
        assertThat(decoded(5, m)).hasSize((int) m + 1); // 5 never reaches 0
        List<Tensor> out = OnnxModel.fromProto(decoder(Read.SLICE), "last_run.onnx").run(inputs(d, 5, m));
        assertThat(out.getFirst().toLongArray()).containsExactly(decoded(5, m));
        assertThat(LoopUnrolling.said()).noneMatch(s -> s.startsWith("last_run.onnx"));
    }

    /**
     * A body that reads the whole of the tensor it grows (the sum of all the tokens so far) is one body plan in a prepared
     * plan: the tokens carried at the most the loop's rows let them grow to, their length bound before each iteration. Runs
     * of 0 to 200 tokens in one plan (past the 64 rows it first reserves: it grows), each equal to the decode in Java.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void theWholeTensorSoFarIsReadInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = OnnxModel.fromProto(decoder(Read.SUM), "sum.onnx").prepare(d, Map.of())) {
            long[][] runs = {{2, 5}, {2, 200}, {1, 0}, {3, 70}, {2, 1}};
            for (long[] r : runs) {
                long[] want = decodedFromSums(r[0], r[1]);
                assertThat(want.length).as("start %d M %d runs to M", r[0], r[1]).isEqualTo(r[1] + 1);
                List<Tensor> out = plan.run(inputs(d, r[0], r[1]));
                assertThat(out.getFirst().toLongArray()).as("start %d M %d", r[0], r[1]).containsExactly(want);
            }
            // a start whose sums reach 0: the loop breaks early
            long[] early = decodedFromSums(7, 50);
            assertThat(early.length).isLessThan(51);
            assertThat(plan.run(inputs(d, 7, 50)).getFirst().toLongArray()).containsExactly(early);
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /** Under run too: more iterations than the loop first reserves rows for (it runs again with more), nothing unrolled. */
    @Test
    void theWholeTensorSoFarIsReadUnderRun() {
        var d = DeviceRegistry.get("CPU");
        long m = LoopOp.FIRST_CAPACITY + 300;
        long[] want = decodedFromSums(2, m);
        assertThat(want).hasSize((int) m + 1);
        List<Tensor> out = OnnxModel.fromProto(decoder(Read.SUM), "sum_run.onnx").run(inputs(d, 2, m));
        assertThat(out.getFirst().toLongArray()).containsExactly(want);
        assertThat(LoopUnrolling.said()).noneMatch(s -> s.startsWith("sum_run.onnx"));
    }

    /**
     * {@code tokens[-2:]} is more than the last element, and a Slice from the end of an axis whose length is known only when
     * the loop runs does not build: built per iteration under run (saying why), refused in a prepared plan.
     */
    @Test
    void readingMoreThanTheLastElementIsNotOneBodyPlan() {
        var d = DeviceRegistry.get("INTERP");
        ModelProto proto = decoder(Read.SECOND_TO_LAST);
        assertThat(OnnxModel.fromProto(proto, "second.onnx").run(inputs(d, 4, 6)).getFirst().toLongArray()).containsExactly(decodedFromLastTwo(new long[] {4}, 6));
        assertThat(LoopUnrolling.said()).filteredOn(s -> s.startsWith("second.onnx: Loop node 'decode'")).singleElement().asString()
                .contains("at node 'last'").contains("is in [1, 7]");
        assertThatThrownBy(() -> OnnxModel.fromProto(proto, "second.onnx").prepare(d, Map.of())).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("'decode'").hasMessageContaining("at node 'last'").hasMessageContaining("a part of a constant length within its smallest size");
    }

    /**
     * From a start of two tokens, {@code tokens[-2:]} always holds two: the body reads them from the tokens so far, at
     * indices computed from their length when it runs, one body plan in a prepared plan (past its first rows: it grows).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void theLastTwoElementsOfALongEnoughTensorAreReadInAPreparedPlan(String device) {
        var d = DeviceRegistry.get(device);
        try (OnnxPlan plan = OnnxModel.fromProto(decoder(Read.SECOND_TO_LAST, 2), "two.onnx").prepare(d, Map.of())) {
            for (long[] r : new long[][] {{4, 6, 6}, {5, 2, 100}, {1, 2, 0}, {9, 3, 70}}) {
                long[] start = {r[0], r[1]};
                assertThat(plan.run(inputs(d, start, r[2])).getFirst().toLongArray()).as("start %d %d M %d", r[0], r[1], r[2])
                        .containsExactly(decodedFromLastTwo(start, r[2]));
            }
        }
    }

    /** The decode of {@link Read#SECOND_TO_LAST} in Java: the next token from the larger of the last two, (3 * max + 1) mod 11. */
    private static long[] decodedFromLastTwo(long[] start, long m) {
        List<Long> out = new ArrayList<>();
        for (long s : start) out.add(s);
        for (long t = 0; t < m; t++) {
            long last = out.size() == 1 ? out.getLast() : Math.max(out.getLast(), out.get(out.size() - 2));
            long next = (3 * last + 1) % 11;
            out.add(next);
            if (next == 0) break;
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }
}
