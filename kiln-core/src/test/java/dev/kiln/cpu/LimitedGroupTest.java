package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.codegen.IndexCheckFailure;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Lowerer;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.ProgramCodec;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * GROUP of a reduce loop over a symbolic size: the lanes of the last group past the size read no memory and check
 * no index. A gathered sum {@code sum(table[ids[i]] for i < n)} whose ids past {@code n} are out of the table's
 * range: a lane past the size that loaded its id and checked it would fail the run. Run by the evaluator and by
 * generated Java at the machine's vector width and with none. (The float lanes' masked loads are tested by
 * {@code SymbolicLanesTest}, whose rows past the size are NaN.)
 */
class LimitedGroupTest {
    private static final int MAX = 64, LANES = 8;
    private static final float[] TABLE = {1, 2, 4, 8, 16, 32, 64, 128};

    private static KernelProgram onlyKernel(Tensor t, List<UOp> inputs) {
        KernelProgram p = null;
        for (ScheduleItem item : Scheduler.schedule(List.of(t.uop())).items()) {
            if (item instanceof ScheduleItem.Kernel k) {
                p = Lowerer.lower(k.output(), k.inputs(), "k");
                inputs.clear();
                inputs.addAll(k.inputs());
            }
        }
        return p;
    }

    @Test
    void lanesPastTheSizeNeitherReadNorCheckTheirIndices() {
        Variable n = new Variable("n", 0, MAX);
        Tensor table = Tensor.of(TABLE, TABLE.length).contiguous().realize();
        Tensor ids = Tensor.zeros(DType.I64, MAX).contiguous().realize();
        List<UOp> inputs = new ArrayList<>();
        KernelProgram p = onlyKernel(table.indexSelect(0, ids.withSymbolicDim(0, n)).sum(0), inputs);
        int axis = -1;
        List<Stmt.Loop> axes = Optimizer.axes(p);
        for (int k = 0; k < axes.size(); k++) if (axes.get(k).kind() == Stmt.LoopKind.REDUCE && n.equals(axes.get(k).limit())) axis = k;
        assertThat(axis).as("the reduce loop over n in\n" + p).isNotNegative();
        KernelProgram q = Optimizer.apply(p, List.of(new Opt.Group(axis, LANES)));
        assertThat(ProgramCodec.decode(ProgramCodec.encode(q))).as("the codec keeps the limit's step").isEqualTo(q);
        assertThat(q.toString()).contains("limitStep=" + LANES, "CHECK");

        // the machine's vectors (the i64 ids have no vector form below 512 bits: interleaved copies, the live gate per copy) and none
        List<JavaKernelCompiler.Source> sources = List.of(new JavaKernelCompiler.Source("Preferred", JavaRenderer.render(q, "Preferred")),
                new JavaKernelCompiler.Source("Copies", JavaRenderer.render(q, "Copies", 0)));
        List<JavaKernelCompiler.Compiled> compiled = JavaKernelCompiler.compile(sources).classes();
        List<CpuKernel> kernels = new ArrayList<>();
        for (int i = 0; i < compiled.size(); i++) {
            kernels.add(new CpuKernel("k", sources.get(i).code(), compiled.get(i).classBytes(), compiled.get(i).run(), q.outerExtent()));
        }

        MemorySegment idSegment = Buffer.of(inputs.stream().filter(u -> u.dtype() == DType.I64).findFirst().orElseThrow()).segment();
        for (long size : new long[] {0, 1, LANES - 1, LANES, LANES + 1, 2 * LANES + 3, MAX - 1, MAX}) {
            long[] values = new long[MAX];
            float want = 0;
            for (int i = 0; i < MAX; i++) {
                values[i] = i < size ? (i * 5L) % TABLE.length : 1000; // past the size: out of range
                if (i < size) want += TABLE[(int) values[i]];
            }
            MemorySegment.copy(values, 0, idSegment, ValueLayout.JAVA_LONG, 0, MAX);
            Buffer out = Buffer.allocateHeap("TEST", DType.F32, 1);
            List<MemorySegment> bufs = new ArrayList<>(List.of(out.segment()));
            for (UOp in : inputs) bufs.add(Buffer.of(in).segment());
            KernelEvaluator.run(q, bufs, Map.of(n, size));
            assertThat(out.getDouble(0)).as("evaluator, n %d", size).isEqualTo((double) want);
            for (CpuKernel k : kernels) {
                out.segment().fill((byte) 0);
                k.run(bufs.toArray(MemorySegment[]::new), new long[] {size});
                assertThat(out.getDouble(0)).as("%s, n %d", k.source().contains("in vector lanes") ? "lanes" : "copies", size).isEqualTo((double) want);
            }
            if (size == 0) continue;
            // the last live lane still checks its index
            values[(int) size - 1] = 1000;
            MemorySegment.copy(values, 0, idSegment, ValueLayout.JAVA_LONG, 0, MAX);
            assertThatThrownBy(() -> KernelEvaluator.run(q, bufs, Map.of(n, size))).isInstanceOf(IndexCheckFailure.class);
            for (CpuKernel k : kernels) {
                assertThatThrownBy(() -> k.run(bufs.toArray(MemorySegment[]::new), new long[] {size})).isInstanceOf(IndexCheckFailure.class);
            }
        }
    }

    @Test
    void loopsOverASymbolicSizeAreSplitOnlyInWholeGroupsAndOnce() {
        Variable n = new Variable("n", 1, MAX);
        Tensor x = Tensor.zeros(4, MAX).contiguous().realize().withSymbolicDim(1, n);
        KernelProgram sum = onlyKernel(x.sum(1), new ArrayList<>());
        KernelProgram grouped = Optimizer.apply(sum, List.of(new Opt.Group(1, LANES)));
        // the loop of groups is split already: no second GROUP of it, no UNROLL
        assertThatThrownBy(() -> Optimizer.apply(grouped, List.of(new Opt.Group(1, 2)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("in groups of " + LANES);
        assertThatThrownBy(() -> Optimizer.apply(sum, List.of(new Opt.Unroll(1, 2)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("symbolic size n");
        // an output loop over n: whole vectors (its stores gated), no remainder loop, no tile
        KernelProgram scale = onlyKernel(x.mul(2), new ArrayList<>());
        KernelProgram upcast = Optimizer.apply(scale, List.of(new Opt.Upcast(1, LANES)));
        assertThat(upcast.toString()).contains("gate=CMPLT", "limitStep=" + LANES);
        assertThat(ProgramCodec.decode(ProgramCodec.encode(upcast))).as("the codec keeps the store's gate").isEqualTo(upcast);
        assertThatThrownBy(() -> Optimizer.apply(scale, List.of(new Opt.UpcastOverlap(1, 3)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("symbolic size n");
        assertThatThrownBy(() -> Optimizer.apply(scale, List.of(new Opt.Tile(1, LANES)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("symbolic size n");
    }
}
