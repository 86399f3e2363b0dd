package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

/**
 * Elementwise add of two 16M-float tensors, beside the machine's streaming bandwidth measured in the
 * same run by a hand-written Vector API add over the same amount of memory (3 streams: 2 reads, 1 write).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class ElementwiseBench {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    @Param("CPU")
    public String device;

    @Param("16777216")
    public int n;

    private ExecutionPlan plan;
    private Arena arena;
    private MemorySegment a, b, c;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor x = Tensor.rand(1, n).to(device).realize(), y = Tensor.rand(2, n).to(device).realize();
        plan = x.add(y).prepare();
        arena = Arena.ofShared();
        a = arena.allocate(4L * n, 64);
        b = arena.allocate(4L * n, 64);
        c = arena.allocate(4L * n, 64);
    }

    @Benchmark
    public void kilnAdd() { plan.execute(); }

    /** The reference: one thread per core would be fairer; this is the single-thread streaming add. */
    @Benchmark
    public void vectorApiAdd() {
        long bytes = 4L * n;
        long step = S.vectorByteSize();
        for (long o = 0; o < bytes; o += step) {
            FloatVector.fromMemorySegment(S, a, o, ByteOrder.nativeOrder())
                    .add(FloatVector.fromMemorySegment(S, b, o, ByteOrder.nativeOrder()))
                    .intoMemorySegment(c, o, ByteOrder.nativeOrder());
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        plan.close();
        arena.close();
    }
}
