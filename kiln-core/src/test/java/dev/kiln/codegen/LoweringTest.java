package dev.kiln.codegen;

import dev.kiln.DType;
import dev.kiln.Tensor;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Schedules graphs, lowers every kernel to loops, runs the loops with the {@link KernelEvaluator} and
 * compares with the INTERP device: the lowering (index math, padding masks, fused reductions) must not
 * change a single value.
 */
class LoweringTest {
    static Stream<Arguments> graphs() {
        Tensor x = data(1, 3, 4), y = data(2, 2, 4, 5), v = data(3, 3, 4);
        Tensor img = data(4, 2, 2, 6, 6), w = data(5, 5, 2, 3, 3);
        Tensor ints = Tensor.arange(12).reshape(3, 4).realize();
        Map<String, Supplier<Tensor>> g = new java.util.LinkedHashMap<>();
        g.put("elementwise chain", () -> x.add(1).mul(x).exp().relu());
        g.put("broadcast add", () -> x.add(v.sum(0)));
        g.put("permute and flip", () -> x.mT().flip(0).add(1));
        g.put("slice with step", () -> y.slice(1, 0, 5, 2).mul(2));
        g.put("pad constant of exp (f(0) != 0)", () -> x.exp().pad(new int[][] {{1, 0}, {2, 1}}));
        g.put("pad reflect", () -> x.pad(new int[][] {{1, 1}, {2, 2}}, Tensor.PadMode.REFLECT, 0));
        g.put("reshape across axes", () -> y.reshape(5, 8).sum(1).reshape(5, 1).expand(5, 3));
        g.put("two reductions one kernel", () -> ints.cast(DType.F32).sum(0).add(ints.cast(DType.F32).sum(1).sum()).relu());
        g.put("softmax", () -> y.softmax(-1));
        g.put("layernorm", () -> y.layerNorm(new int[] {5}, null, null, 1e-5));
        g.put("matmul bias relu", () -> x.matmul(y.slice(0, 0, 1, 1).reshape(4, 5)).add(1).relu());
        g.put("attention", () -> Tensor.scaledDotProductAttention(y, y, y, null, true, null));
        g.put("argmax and cumsum", () -> y.argmax(1).cast(DType.F32).add(y.cumsum(1).sum(1)));
        g.put("conv2d", () -> img.conv2d(w, null, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1));
        g.put("max pool", () -> img.maxPool2d(new int[] {2, 2}, new int[] {2, 2}, new int[] {0, 0}, new int[] {1, 1}, false));
        g.put("integer math", () -> ints.mod(5).mul(ints.floorDiv(3)).add(ints.shl(2)).bitwiseXor(7));
        g.put("sort", () -> v.sort(1, true).values());
        g.put("zero-size", () -> Tensor.zeros(0, 3).add(1));
        g.put("sum over empty axis", () -> Tensor.zeros(3, 0).sum(1));
        return g.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    /** Deterministic, irregular test data of a shape (seed varies the values). */
    static Tensor data(int seed, int... shape) {
        int n = 1;
        for (int d : shape) n *= d;
        return Tensor.arange(n).cast(DType.F32).mul(0.7 + 0.13 * seed).add(seed).sin().mul(2).reshape(shape).realize();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("graphs")
    void loweredKernelsMatchTheInterpreter(String name, Supplier<Tensor> graph) {
        Tensor t = graph.get();
        UOp root = t.uop(); // before realising: afterwards the tensor is its buffer
        assertThat(root.op()).isNotEqualTo(dev.kiln.ir.Op.BUFFER);
        double[] expected = t.toDoubleArray();
        Buffer out = runScheduled(root);
        double[] got = new double[expected.length];
        for (int i = 0; i < got.length; i++) got[i] = dev.kiln.runtime.Elements.getAsDouble(out.segment(), t.dtype(), i);
        assertThat(got).as(name).usingComparatorWithPrecision(0.0).containsExactly(expected);
    }

    /** Runs a schedule item by item: kernels through the evaluator, views alias, copies copy. */
    static Buffer runScheduled(UOp root) {
        Schedule s = Scheduler.schedule(List.of(root));
        Map<UOp, Buffer> buffers = new IdentityHashMap<>();
        int n = 0;
        for (ScheduleItem item : s.items()) {
            for (UOp in : item.inputs()) {
                if (in.op() == dev.kiln.ir.Op.BUFFER) buffers.put(in, (Buffer) in.arg());
            }
            UOp o = item.output();
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    Buffer b = Buffer.allocateHeap("TEST", o.dtype(), o.shape().numel());
                    buffers.put(o, b);
                    KernelProgram p = Lowerer.lower(k, "k" + n++);
                    List<MemorySegment> segs = new ArrayList<>();
                    segs.add(b.segment());
                    for (UOp in : k.inputs()) segs.add(buffers.get(in).segment());
                    KernelEvaluator.run(p, segs, Map.of());
                }
                case ScheduleItem.View view -> buffers.put(o, buffers.get(view.inputs().getFirst()));
                default -> throw new AssertionError("not used by these graphs: " + item);
            }
        }
        UOp r = root;
        return buffers.get(r);
    }
}
