package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Lowerer;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Measures (does not assert) how long one compiler task takes for the ~50 kernels of a small
 * transformer, cold (the first compilation in the JVM) and warm. Run it alone, in a fresh JVM:
 * {@code ./mvnw -pl kiln-core test -Dtest=JavaKernelCompileBenchmark -Dkiln.bench=true}.
 */
@EnabledIfSystemProperty(named = "kiln.bench", matches = "true")
class JavaKernelCompileBenchmark {
    /** Three pre-norm transformer blocks over a [16, 64] sequence, 4 heads. */
    static Tensor transformer() {
        int seq = 16, d = 64, heads = 4, hidden = 128;
        Tensor x = TestGraphs.data(1, seq, d);
        for (int layer = 0; layer < 3; layer++) {
            int s = 10 * layer;
            Tensor h = x.layerNorm(new int[] {d}, TestGraphs.data(s + 2, d), TestGraphs.data(s + 3, d), 1e-5);
            Tensor q = h.linear(TestGraphs.data(s + 4, d, d), null).reshape(seq, heads, d / heads).transpose(0, 1);
            Tensor k = h.linear(TestGraphs.data(s + 5, d, d), null).reshape(seq, heads, d / heads).transpose(0, 1);
            Tensor v = h.linear(TestGraphs.data(s + 6, d, d), null).reshape(seq, heads, d / heads).transpose(0, 1);
            Tensor a = Tensor.scaledDotProductAttention(q, k, v, null, true, null).transpose(0, 1).reshape(seq, d);
            x = x.add(a.linear(TestGraphs.data(s + 7, d, d), TestGraphs.data(s + 8, d)));
            Tensor m = x.layerNorm(new int[] {d}, null, null, 1e-5).linear(TestGraphs.data(s + 9, hidden, d), null).gelu();
            x = x.add(m.linear(TestGraphs.data(s + 10, d, hidden), null));
        }
        return x.softmax(-1);
    }

    @Test
    void compileABatchOfATransformersKernels() {
        long t0 = System.nanoTime();
        List<KernelProgram> programs = new ArrayList<>();
        for (ScheduleItem item : Scheduler.schedule(List.of(transformer().uop())).items()) {
            if (item instanceof ScheduleItem.Kernel k) programs.add(Lowerer.lower(k.output(), k.inputs(), "k" + programs.size()));
        }
        long t1 = System.nanoTime();
        int runs = 12;
        double[] compileMs = new double[runs], totalMs = new double[runs];
        int bytes = 0, chars = 0;
        for (int r = 0; r < runs; r++) {
            long a = System.nanoTime();
            List<JavaKernelCompiler.Source> sources = new ArrayList<>();
            for (int i = 0; i < programs.size(); i++) sources.add(new JavaKernelCompiler.Source("K" + i, JavaRenderer.render(programs.get(i), "K" + i)));
            JavaKernelCompiler.Batch batch = JavaKernelCompiler.compile(sources);
            totalMs[r] = (System.nanoTime() - a) / 1e6;
            compileMs[r] = batch.compileNanos() / 1e6;
            bytes = batch.classes().stream().mapToInt(c -> c.classBytes().length).sum();
            chars = sources.stream().mapToInt(s -> s.code().length()).sum();
        }
        double[] warm = Arrays.copyOfRange(compileMs, runs / 2, runs);
        Arrays.sort(warm);
        System.out.printf("JavaKernelCompileBenchmark: %d kernels (%d chars of source, %d bytes of classes); schedule+lower %.0f ms%n",
                programs.size(), chars, bytes, (t1 - t0) / 1e6);
        System.out.printf("  cold: javac %.0f ms, render+javac+define %.0f ms; later runs javac %s ms; warm median %.0f ms (%.1f ms per kernel)%n",
                compileMs[0], totalMs[0], Arrays.toString(Arrays.stream(compileMs).mapToLong(Math::round).toArray()),
                warm[warm.length / 2], warm[warm.length / 2] / programs.size());
        assertThat(programs).isNotEmpty();
    }
}
