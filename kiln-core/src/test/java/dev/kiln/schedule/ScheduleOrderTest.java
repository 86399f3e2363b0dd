package dev.kiln.schedule;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The order contract of a schedule, on the graphs of {@link KernelCountTest} and on random graphs:
 * every item reads only buffers or what earlier items produced, every output is produced, no node is
 * produced twice, and each item kind produces what it should.
 */
class ScheduleOrderTest {
    static List<KernelCountTest.Case> catalog() { return KernelCountTest.cases(); }

    static LongStream seeds() { return LongStream.range(0, 300); }

    @ParameterizedTest(name = "{0}")
    @MethodSource("catalog")
    void catalogSchedulesAreOrdered(KernelCountTest.Case c) {
        checkOrder(c.roots().get().stream().map(Tensor::uop).toList());
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void randomSchedulesAreOrdered(long seed) {
        checkOrder(randomGraph(seed).stream().map(Tensor::uop).toList());
    }

    static void checkOrder(List<UOp> roots) {
        Schedule s = Scheduler.schedule(roots);
        String desc = KernelCountTest.describe(s);
        Set<UOp> produced = Collections.newSetFromMap(new IdentityHashMap<>());
        for (ScheduleItem item : s.items()) {
            for (UOp in : item.inputs()) {
                assertThat(in.op() == Op.BUFFER || produced.contains(in))
                        .as("input %s%s of %s is a buffer or produced earlier\n%s", in.op(), in.shape(), item, desc).isTrue();
            }
            UOp out = item.output();
            assertThat(produced.add(out)).as("%s%s produced once\n%s", out.op(), out.shape(), desc).isTrue();
            assertThat(out.op()).isNotEqualTo(Op.BUFFER);
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    assertThat(out.op()).isNotIn(Op.COPY, Op.CUSTOM);
                    assertThat(k.inputs()).doesNotHaveDuplicates();
                }
                case ScheduleItem.Copy cp -> assertThat(cp.inputs()).containsExactly(out.src(0));
                case ScheduleItem.Custom cu -> assertThat(cu.inputs()).isEqualTo(out.src());
                case ScheduleItem.View v -> {
                    assertThat(out.op()).isEqualTo(Op.RESHAPE);
                    assertThat(v.inputs()).singleElement().satisfies(in -> assertThat(in.shape().numel()).isEqualTo(out.shape().numel()));
                }
                case ScheduleItem.Join j -> { // the pieces fill the output's bytes, in order, without gaps
                    assertThat(out.op()).isIn(Op.ADD, Op.CONTIGUOUS);
                    long at = 0;
                    for (int i = 0; i < j.inputs().size(); i++) {
                        assertThat(j.offsets().get(i)).isEqualTo(at);
                        at += j.inputs().get(i).dtype().byteSize(j.inputs().get(i).shape().numel());
                    }
                    assertThat(at).isEqualTo(out.dtype().byteSize(out.shape().numel()));
                }
            }
        }
        assertThat(s.outputs()).isEqualTo(roots);
        for (UOp r : roots) {
            assertThat(r.op() == Op.BUFFER || produced.contains(r)).as("output %s%s is produced\n%s", r.op(), r.shape(), desc).isTrue();
        }
        assertThat(Scheduler.schedule(roots)).as("scheduling is deterministic").isEqualTo(s);
    }

    /**
     * Roots of a random graph of (3, 4) tensors mixing every scheduling situation: broadcast and shared
     * reductions, reductions of reductions, movement, padding, matmul, CONTIGUOUS, COPY, CUSTOM and
     * ASSIGN (also of a value that reads its own target).
     */
    static List<Tensor> randomGraph(long seed) {
        Random r = new Random(seed);
        List<Tensor> pool = new ArrayList<>(List.of(KernelCountTest.data(40 + (int) seed % 7, 3, 4), KernelCountTest.X));
        List<Tensor> made = new ArrayList<>();
        int steps = 3 + r.nextInt(8);
        for (int i = 0; i < steps; i++) {
            Tensor a = pool.get(r.nextInt(pool.size())), b = pool.get(r.nextInt(pool.size()));
            int ax = r.nextInt(2);
            Tensor t = switch (r.nextInt(16)) {
                case 0 -> a.mul(0.5).exp();
                case 1 -> a.add(b).relu();
                case 2 -> a.mul(b).sub(a);
                case 3 -> a.sub(a.sum(new int[] {ax}, true));
                case 4 -> a.add(a.max(ax).unsqueeze(ax)).mul(b.mean(new int[] {ax}, true));
                case 5 -> a.flip(ax).add(b);
                case 6 -> a.pad(new int[][] {{1, 1}, {0, 2}}).exp().slice(0, 1, 4, 1).slice(1, 0, 4, 1);
                case 7 -> a.reshape(4, 3).mT().add(b);
                case 8 -> a.matmul(KernelCountTest.SQ).add(b);
                case 9 -> a.contiguous().neg();
                case 10 -> a.softmax(ax);
                case 11 -> a.cumsum(ax);
                case 12 -> a.to("INTERP:1").exp().to("INTERP").add(b);
                case 13 -> Tensor.custom("negate", DType.F32, new int[] {3, 4}, ScheduleOrderTest::negate, a).add(b);
                case 14 -> a.add(a.sum(1).cumsum(0).reshape(3, 1));
                default -> {
                    Tensor target = KernelCountTest.data(50 + i, 3, 4);
                    yield target.assign(r.nextBoolean() ? a.add(target.flip(ax)) : a.mul(target));
                }
            };
            pool.add(t);
            made.add(t);
        }
        List<Tensor> roots = new ArrayList<>(List.of(made.getLast()));
        for (int extra = r.nextInt(3); extra > 0; extra--) {
            Tensor t = made.get(r.nextInt(made.size()));
            if (!roots.contains(t)) roots.add(t);
        }
        return roots;
    }

    private static void negate(List<MemorySegment> inputs, MemorySegment out) {
        IntStream.range(0, 12).forEach(i -> out.setAtIndex(ValueLayout.JAVA_FLOAT, i, -inputs.getFirst().getAtIndex(ValueLayout.JAVA_FLOAT, i)));
    }
}
