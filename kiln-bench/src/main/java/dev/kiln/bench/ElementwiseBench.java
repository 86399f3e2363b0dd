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
 * Elementwise add of two 16M-float tensors and a ResNet-sized max pooling, beside the machine's streaming
 * bandwidth measured in the same run by a hand-written Vector API add over the same amount of memory (3 streams:
 * 2 reads, 1 write), on one thread and on every worker of the pool. GB/s: an add moves 12 bytes per element;
 * the pooling reads its input once and writes a quarter of it ({@link #POOL_BYTES}).
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

    /** The pooling's input: ResNet-50's first max pooling, 64 channels of 112x112, 3x3 window, stride 2, pad 1. */
    private static final int[] POOL_INPUT = {1, 64, 112, 112};
    /** Bytes the pooling must move at least: its input read once and its 56x56 output written once. */
    public static final long POOL_BYTES = 4L * 64 * 112 * 112 + 4L * 64 * 56 * 56;

    private ExecutionPlan plan, pool;
    private Arena arena;
    private MemorySegment a, b, c;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor x = Tensor.rand(1, n).to(device).realize(), y = Tensor.rand(2, n).to(device).realize();
        plan = x.add(y).prepare();
        pool = Tensor.rand(3, POOL_INPUT).to(device).realize().maxPool2d(new int[]{3, 3}, new int[]{2, 2}, new int[]{1, 1}, null, false).prepare();
        arena = Arena.ofShared();
        a = arena.allocate(4L * n, 64);
        b = arena.allocate(4L * n, 64);
        c = arena.allocate(4L * n, 64);
    }

    @Benchmark
    public void kilnAdd() { plan.execute(); }

    @Benchmark
    public void kilnMaxPool() { pool.execute(); }

    /** The single-thread streaming add. */
    @Benchmark
    public void vectorApiAdd() { add(0, 4L * n); }

    /** The streaming add on every worker of the pool, each over its share: the machine's bandwidth for this pattern. */
    @Benchmark
    public void vectorApiAddAllCores() {
        long vectors = 4L * n / S.vectorByteSize();
        dev.kiln.runtime.WorkerPool.forRanges(vectors, dev.kiln.runtime.WorkerPool.size(),
                (start, end) -> add(start * S.vectorByteSize(), end * S.vectorByteSize()));
    }

    private void add(long from, long to) {
        long step = S.vectorByteSize();
        for (long o = from; o < to; o += step) {
            FloatVector.fromMemorySegment(S, a, o, ByteOrder.nativeOrder())
                    .add(FloatVector.fromMemorySegment(S, b, o, ByteOrder.nativeOrder()))
                    .intoMemorySegment(c, o, ByteOrder.nativeOrder());
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        plan.close();
        pool.close();
        arena.close();
    }
}
