package dev.kiln.runtime;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The ExecutionPlan contract: prepare once, execute many times, variables, profiling, ownership. */
class ExecutionPlanTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private static float[] floats(Buffer b) {
        float[] out = new float[(int) b.count()];
        for (int i = 0; i < out.length; i++) out[i] = b.segment().getAtIndex(F, i);
        return out;
    }

    @Test
    void aPlanComputesWhatTheTensorComputes() {
        Tensor x = Tensor.randn(1, 4, 8).realize();
        Tensor y = x.softmax(-1).mul(x.sum(1, 0)).relu();
        try (ExecutionPlan plan = y.prepare()) {
            plan.execute();
            assertThat(floats(plan.outputBuffer())).containsExactly(y.toFloatArray());
            assertThat(plan.numOutputs()).isEqualTo(1);
        }
    }

    @Test
    void replayingWithChangedInputsGivesFreshResults() {
        Tensor x = Tensor.zeros(3, 5).contiguous().realize();
        Tensor y = x.mul(2).add(x.max(new int[] {1}, true));
        MemorySegment in = x.buffer().segment();
        try (ExecutionPlan plan = y.prepare()) {
            for (int run = 0; run < 100; run++) {
                float[] data = new float[15];
                for (int i = 0; i < 15; i++) data[i] = (float) Math.sin(run * 15 + i);
                MemorySegment.copy(data, 0, in, F, 0, 15);
                plan.execute();
                float[] expected = Tensor.of(data, 3, 5).mul(2).add(Tensor.of(data, 3, 5).max(new int[] {1}, true)).toFloatArray();
                assertThat(floats(plan.outputBuffer())).as("run " + run).containsExactly(expected);
            }
        }
    }

    @Test
    void variablesAreCheckedBeforeAnythingRuns() {
        Variable n = new Variable("n", 1, 8);
        Tensor len = Tensor.variable(n);
        // positions past n are masked: a running length without recompiling
        Tensor masked = Tensor.where(Tensor.arange(8).lt(len), Tensor.ones(8), Tensor.zeros(8)).sum().mul(len.cast(DType.F32));
        try (ExecutionPlan plan = masked.prepare()) {
            assertThat(plan.variables()).containsExactly(n);
            for (long v = n.min(); v <= n.max(); v++) {
                plan.executeWithVars(Map.of("n", v));
                assertThat(floats(plan.outputBuffer())[0]).as("n = " + v).isEqualTo((float) (v * v));
            }
            float before = floats(plan.outputBuffer())[0];
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("n", 9L)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'n'").hasMessageContaining("9").hasMessageContaining("[1, 8]");
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("n", 0L))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("m", 3L)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no variable 'm'").hasMessageContaining("n[1, 8]");
            assertThat(floats(plan.outputBuffer())[0]).as("nothing ran").isEqualTo(before);
        }
    }

    @Test
    void everyKindOfPreparedOpAppears() {
        Tensor x = Tensor.randn(2, 2, 3).realize();
        Tensor viaCustom = Tensor.custom("negate", DType.F32, new int[] {6}, (ins, out) -> {
            for (int i = 0; i < 6; i++) out.setAtIndex(F, i, -ins.getFirst().getAtIndex(F, i));
        }, x.exp());
        Tensor copied = viaCustom.to("INTERP:1").add(1);
        try (ExecutionPlan plan = Tensor.prepare(copied, x.reshape(3, 2))) {
            plan.execute();
            List<Class<?>> kinds = plan.preparedOps().stream().<Class<?>>map(Object::getClass).toList();
            assertThat(kinds).contains(PreparedKernel.class, PreparedCopy.class, PreparedCustomFunction.class, PreparedBufferView.class);
            float[] e = x.exp().toFloatArray();
            float[] out = floats(plan.outputBuffer(0));
            for (int i = 0; i < 6; i++) assertThat(out[i]).isEqualTo(-e[i] + 1);
            assertThat(floats(plan.outputBuffer(1))).containsExactly(x.toFloatArray());
            for (int i = 0; i < plan.preparedOps().size(); i++) {
                if (!(plan.preparedOps().get(i) instanceof PreparedKernel k)) continue;
                // each kernel is compiled by its own device: INTERP shows loop pseudo-code, CPU Java source
                String kind = plan.deviceOf(i).spec().kind();
                assertThat(k.source()).as(k.name() + " on " + kind).contains(kind.equals("INTERP") ? "kernel " + k.name() : "final class K");
            }
        }
    }

    @Test
    void independentBranchesRunAtTheSameTime() {
        CountDownLatch aStarted = new CountDownLatch(1), bStarted = new CountDownLatch(1);
        Tensor x = Tensor.ones(4).contiguous().realize(), y = Tensor.ones(4).contiguous().realize();
        // each branch waits (bounded) until the other has started: they finish only if they overlap
        Tensor a = Tensor.custom("a", DType.F32, new int[] {4}, (ins, out) -> meet(aStarted, bStarted, out, 1), x);
        Tensor b = Tensor.custom("b", DType.F32, new int[] {4}, (ins, out) -> meet(bStarted, aStarted, out, 2), y);
        Assumptions.assumeMultiCore();
        try (ExecutionPlan plan = Tensor.prepare(a.add(b))) {
            long start = System.nanoTime();
            plan.execute();
            assertThat(floats(plan.outputBuffer())).containsExactly(3f, 3f, 3f, 3f);
            assertThat(aStarted.getCount() + bStarted.getCount()).isZero();
            assertThat(System.nanoTime() - start).as("both branches met").isLessThan(TimeUnit.SECONDS.toNanos(4));
        }
    }

    private static void meet(CountDownLatch mine, CountDownLatch other, MemorySegment out, float value) {
        mine.countDown();
        try {
            if (!other.await(5, TimeUnit.SECONDS)) throw new AssertionError("branches did not overlap");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (int i = 0; i < 4; i++) out.setAtIndex(F, i, value);
    }

    @Test
    void profilingTimesEveryStepAndWritesATrace(@TempDir Path dir) throws Exception {
        Tensor x = Tensor.randn(3, 16, 16).realize();
        try (ExecutionPlan plan = x.matmul(x).softmax(-1).prepare()) {
            List<KernelProfile> profiles = plan.executeProfiled(dir.resolve("t.json"));
            assertThat(profiles).hasSize(plan.preparedOps().size());
            assertThat(profiles).allSatisfy(p -> assertThat(p.elapsedNanos()).isPositive());
            assertThat(profiles.getFirst().flops()).as("16x16x16 multiply-adds").isGreaterThanOrEqualTo(2L * 16 * 16 * 16);
            assertThat(Files.readString(dir.resolve("t.json"))).contains("traceEvents").contains(profiles.getFirst().name());
        }
    }

    @Test
    void closeReturnsMemoryToItsBaselineAndForbidsUse() {
        long baseline = MemoryStats.liveBytes();
        Tensor x = Tensor.randn(4, 64, 64).realize();
        ExecutionPlan plan = x.exp().sum(0).mul(x.max(new int[] {0}, true)).prepare();
        plan.execute();
        assertThat(MemoryStats.liveBytes()).isGreaterThan(baseline);
        plan.releaseIntermediateBuffers();
        plan.execute(); // reallocates
        plan.close();
        assertThat(MemoryStats.liveBytes()).isEqualTo(baseline);
        assertThatThrownBy(plan::execute).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> plan.outputBuffer(0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void buffersAreAddressedById() {
        Tensor x = Tensor.randn(5, 8, 8).realize();
        Tensor s = x.softmax(-1);
        try (ExecutionPlan plan = s.prepare()) {
            plan.execute();
            PreparedOp first = plan.preparedOps().getFirst();
            Buffer rowStat = plan.buffer(first.output());
            assertThat(rowStat.count()).isEqualTo(8);
            // the same node evaluated by the interpreter
            var node = plan.schedule().items().getFirst().output();
            assertThat(floats(rowStat)).containsExactly(floats(DeviceRegistry.get("INTERP").realize(node, Map.of())));
            assertThatThrownBy(() -> plan.buffer(999)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("999");
            assertThatThrownBy(() -> plan.outputBuffer(1)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    /** Overlap needs two workers. */
    static final class Assumptions {
        static void assumeMultiCore() {
            org.junit.jupiter.api.Assumptions.assumeTrue(WorkerPool.size() > 1, "needs at least 2 cores for two branches to overlap");
        }
    }
}
