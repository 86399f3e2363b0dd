package dev.kiln.schedule;

import dev.kiln.Tensor;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.Lowerer;
import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.ir.Elements;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the random multi-output schedules of {@link ScheduleOrderTest} as a runtime would, with
 * {@code ASSIGN} kernels writing in place into their target, and compares every output with INTERP bit
 * for bit: the cut must not change a value, in particular not through an in-place hazard (rule 5).
 */
class ScheduleExecutionTest {
    static LongStream seeds() { return LongStream.range(0, 200); }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void scheduledGraphsComputeWhatInterpComputes(long seed) {
        List<Tensor> roots = ScheduleOrderTest.randomGraph(seed);
        List<UOp> uops = roots.stream().map(Tensor::uop).toList();
        Map<Buffer, byte[]> before = new IdentityHashMap<>(); // in-place writes are undone before INTERP runs
        for (UOp r : uops) {
            for (UOp u : r.toposort()) {
                if (u.op() == Op.BUFFER) before.put((Buffer) u.arg(), ((Buffer) u.arg()).segment().toArray(ValueLayout.JAVA_BYTE));
            }
        }
        Schedule s = Scheduler.schedule(uops);
        Map<UOp, Buffer> buffers = run(s);
        List<double[]> got = uops.stream().map(r -> values(buffers.get(r), r)).toList();
        for (int i = 0; i < roots.size(); i++) {
            before.forEach((b, bytes) -> b.segment().copyFrom(MemorySegment.ofArray(bytes)));
            assertThat(got.get(i)).as("output %d\n%s", i, KernelCountTest.describe(s)).usingComparatorWithPrecision(0.0)
                    .containsExactly(roots.get(i).to("INTERP").toDoubleArray());
        }
        before.forEach((b, bytes) -> b.segment().copyFrom(MemorySegment.ofArray(bytes)));
    }

    /** Executes the items in order; an ASSIGN kernel's output is its target's buffer. */
    private static Map<UOp, Buffer> run(Schedule s) {
        Map<UOp, Buffer> buffers = new IdentityHashMap<>();
        int n = 0;
        for (ScheduleItem item : s.items()) {
            for (UOp in : item.inputs()) if (in.op() == Op.BUFFER) buffers.put(in, (Buffer) in.arg());
            UOp o = item.output();
            List<MemorySegment> in = item.inputs().stream().map(u -> buffers.get(u).segment()).toList();
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    Buffer out = o.op() == Op.ASSIGN ? target(o) : fresh(o);
                    List<MemorySegment> segs = new ArrayList<>(List.of(out.segment()));
                    segs.addAll(in);
                    KernelEvaluator.run(Lowerer.lower(k.output(), k.inputs(), "k" + n++), segs, Map.of());
                    buffers.put(o, out);
                }
                case ScheduleItem.View v -> buffers.put(o, buffers.get(v.inputs().getFirst()));
                case ScheduleItem.Join join -> buffers.put(o, dev.kiln.testing.TestGraphs.join(join, buffers));
                case ScheduleItem.Copy c -> {
                    Buffer out = fresh(o);
                    out.segment().copyFrom(in.getFirst());
                    buffers.put(o, out);
                }
                case ScheduleItem.Custom c -> {
                    Buffer out = fresh(o);
                    ((CustomFunction) o.arg()).body().apply(in, out.segment());
                    buffers.put(o, out);
                }
            }
        }
        return buffers;
    }

    private static Buffer target(UOp assign) {
        UOp t = assign.src(0);
        while (t.op() == Op.RESHAPE) t = t.src(0);
        return (Buffer) t.arg();
    }

    private static Buffer fresh(UOp u) { return Buffer.allocateHeap("TEST", u.dtype(), u.shape().numel()); }

    private static double[] values(Buffer b, UOp u) {
        double[] d = new double[Math.toIntExact(u.shape().numel())];
        for (int i = 0; i < d.length; i++) d[i] = Elements.getAsDouble(b.segment(), u.dtype(), i);
        return d;
    }
}
