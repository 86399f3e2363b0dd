package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.models.SmallModels;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The binary form of kernel structures and programs that the program cache keeps on disk. */
class ProgramCodecTest {
    private static final CpuInfo CPU = new CpuInfo(4, 32);

    private static List<ScheduleItem.Kernel> kernels(Tensor... outputs) {
        List<ScheduleItem.Kernel> out = new ArrayList<>();
        for (ScheduleItem item : Scheduler.schedule(Arrays.stream(outputs).map(Tensor::uop).toList()).items()) {
            if (item instanceof ScheduleItem.Kernel k) out.add(k);
        }
        return out;
    }

    /** Graphs whose kernels hold every kind of node and argument: reductions, pads, flips, symbolic sizes, odd dtypes. */
    private static List<ScheduleItem.Kernel> variedKernels() {
        Tensor x = Tensor.randn(7, 1, 16, 64).realize();
        Tensor block = SmallModels.transformerBlock(x, 4, 3);
        Tensor img = Tensor.rand(8, 1, 3, 9, 9).realize();
        Tensor conv = img.conv2d(Tensor.rand(9, 4, 3, 3, 3).realize(), null).maxPool2d(2).flip(1);
        Tensor padded = Tensor.rand(10, 5, 6).realize().pad(new int[][] {{1, 2}, {0, 3}}).cumsum(1);
        Variable n = new Variable("n", 1, 8);
        Tensor masked = Tensor.where(Tensor.arange(8).lt(Tensor.variable(n)), Tensor.ones(8), Tensor.zeros(8)).sum();
        Tensor ints = Tensor.arange(12).cast(DType.U8).mul(200).cast(DType.I64).max(0);
        Tensor halves = Tensor.rand(11, 4, 4).realize().cast(DType.F16).exp().cast(DType.F64).add(-0.0).mul(Double.NaN);
        Variable seq = new Variable("seq", 1, 16);
        Tensor symbolic = SmallModels.transformerBlock(x.withSymbolicDim(1, seq), 4, 3); // loops with limits
        Tensor ids = Tensor.of(new long[] {3, -1, 0, 2}, 2, 2).realize();
        Tensor gathered = Tensor.rand(12, 4, 5).realize().gatherElements(0, ids.expand(2, 2)).pad(new int[][] {{1, 0}, {0, 1}}); // gated checks
        return kernels(block, conv, padded, masked, ints, halves, symbolic, gathered);
    }

    @Test
    void programsRoundTripToTheSameInternedNodes() {
        int checked = 0;
        for (ScheduleItem.Kernel k : variedKernels()) {
            KernelProgram lowered = KernelLowering.lower(k.output(), k.inputs(), "k" + checked);
            for (KernelProgram p : List.of(lowered, Heuristics.optimize(lowered, CPU))) {
                KernelProgram back = ProgramCodec.decode(ProgramCodec.encode(p));
                assertThat(back).isEqualTo(p);
                // interned: the decoded statements hold the very nodes of the original
                List<Object> a = new ArrayList<>(), b = new ArrayList<>();
                Optimizer.walk(p.body(), s -> a.addAll(Optimizer.expressions(s)));
                Optimizer.walk(back.body(), s -> b.addAll(Optimizer.expressions(s)));
                for (int i = 0; i < a.size(); i++) assertThat(b.get(i)).isSameAs(a.get(i));
                checked++;
            }
        }
        assertThat(checked).isGreaterThan(20);
        assertThat(variedKernels().stream().map(k -> Heuristics.optimize(KernelLowering.lower(k.output(), k.inputs(), "k"), CPU).opts()).flatMap(List::stream)
                .map(Opt::kind).distinct().toList()).as("optimised programs with actions were round-tripped").isNotEmpty();
    }

    @Test
    void equalStructuresEncodeEquallyAndAnyDifferenceShows() {
        Tensor a = Tensor.rand(1, 4, 8).realize(), b = Tensor.rand(2, 4, 8).realize();
        byte[] ab = key(a.exp().sum(1));
        assertThat(key(b.exp().sum(1))).as("other buffers, same structure").isEqualTo(ab);
        assertThat(key(a.exp().sum(0))).as("other axis").isNotEqualTo(ab);
        assertThat(key(a.sin().sum(1))).as("other op").isNotEqualTo(ab);
        assertThat(key(Tensor.rand(3, 4, 9).realize().exp().sum(1))).as("other shape").isNotEqualTo(ab);
        assertThat(key(a.cast(DType.F64).realize().exp().sum(1))).as("other dtype").isNotEqualTo(ab);
        assertThat(key(a.add(0.0))).as("the bits of a constant").isNotEqualTo(key(a.add(-0.0)));
        Variable n = new Variable("n", 1, 8), m = new Variable("n", 1, 9);
        assertThat(key(a.mul(Tensor.variable(n).cast(DType.F32)))).as("a variable's bounds")
                .isNotEqualTo(key(a.mul(Tensor.variable(m).cast(DType.F32))));
        Variable s = new Variable("s", 1, 4);
        assertThat(key(a.withSymbolicDim(0, s).exp().sum(1))).as("a symbolic axis of the same size").isNotEqualTo(ab);
        assertThat(key(a.withSymbolicDim(0, s).exp().sum(1))).as("another variable on that axis")
                .isNotEqualTo(key(a.withSymbolicDim(0, new Variable("t", 1, 4)).exp().sum(1)));
    }

    @Test
    void indexChecksEncodeTheirRangeAndNeverTheirNames() {
        Tensor x = Tensor.rand(1, 4, 8).realize(), ids = Tensor.of(new long[] {1, 2}, 2).realize();
        byte[] plain = key(x.indexSelect(0, ids));
        assertThat(key(Tensor.withOpName("Gather node 'g'", () -> x.indexSelect(0, ids)))).as("another operation's name").isEqualTo(plain);
        assertThat(key(Tensor.rand(2, 5, 8).realize().indexSelect(0, ids))).as("another size").isNotEqualTo(plain);
        assertThat(key(x.gather(0, ids.reshape(2, 1).expand(2, 8)))).as("negative indices not counting from the end").isNotEqualTo(plain);
        List<ScheduleItem.Kernel> ks = kernels(Tensor.withOpName("Gather node 'g'", () -> x.indexSelect(0, ids)));
        KernelProgram p = KernelLowering.lower(ks.getLast().output(), ks.getLast().inputs(), "k");
        assertThat(p.indexChecks()).as("a lowered kernel holds no names").containsExactly(
                java.util.Map.entry(0, new dev.kiln.ir.IndexCheck("", -1, true, 0)));
        assertThat(KernelLowering.indexChecks(ks.getLast().output(), ks.getLast().inputs())).as("the plan step keeps them").singleElement()
                .satisfies(c -> assertThat(c.indexCheckArg()).isEqualTo(new dev.kiln.ir.IndexCheck("Gather node 'g'", 0, true, 0)));
        assertThat(ProgramCodec.decode(ProgramCodec.encode(p))).isEqualTo(p);
    }

    private static byte[] key(Tensor t) {
        List<ScheduleItem.Kernel> ks = kernels(t);
        return ProgramCodec.encodeKernel(ks.getLast().output(), ks.getLast().inputs());
    }

    @Test
    void aBufferInsideAKernelCannotBeEncoded() {
        // the scheduler makes every buffer a kernel input; a kernel that reads one as a node is malformed
        Tensor t = Tensor.rand(1, 4).realize();
        ScheduleItem.Kernel k = new ScheduleItem.Kernel(t.exp().uop(), List.of());
        assertThatThrownBy(() -> ProgramCodec.encodeKernel(k.output(), k.inputs())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("BUFFER").hasMessageContaining("Buffer");
    }

    @Test
    void aKernelsInputsArePlaceholdersOfTheirPositionDtypeAndShape() {
        Tensor a = Tensor.rand(1, 4).realize(), b = Tensor.rand(2, 4).realize(), c = Tensor.rand(3, 5).realize();
        assertThat(key(a.add(b))).isEqualTo(key(b.add(a)));
        assertThat(key(a.add(a))).as("one input read twice").isNotEqualTo(key(a.add(b)));
        assertThat(key(a.cast(DType.F64).realize().add(b))).as("an input's dtype").isNotEqualTo(key(a.add(b)));
        assertThat(key(c.slice(0, 0, 4, 1).add(b))).as("an input's shape").isNotEqualTo(key(a.add(b)));
    }

    @Test
    void damagedBytesAreRejectedOrDecodeToSomeValidProgram() {
        ScheduleItem.Kernel softmax = kernels(Tensor.rand(1, 16, 32).realize().softmax(1)).getLast();
        KernelProgram p = Heuristics.optimize(KernelLowering.lower(softmax.output(), softmax.inputs(), "k"), CPU);
        byte[] good = ProgramCodec.encode(p);
        for (int len = 0; len < good.length; len++) {
            byte[] cut = Arrays.copyOf(good, len);
            assertThatThrownBy(() -> ProgramCodec.decode(cut)).as("truncated to " + len).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("program codec");
        }
        byte[] longer = Arrays.copyOf(good, good.length + 1);
        assertThatThrownBy(() -> ProgramCodec.decode(longer)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("after the program");
        byte[] version = good.clone();
        version[3]++;
        assertThatThrownBy(() -> ProgramCodec.decode(version)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("version");
        // a flipped byte may still describe a valid program (the cache's checksum catches those); it must
        // never escape as another exception
        Random random = new Random(42);
        for (int trial = 0; trial < 2000; trial++) {
            byte[] bad = good.clone();
            bad[random.nextInt(bad.length)] ^= (byte) (1 << random.nextInt(8));
            try {
                ProgramCodec.decode(bad);
            } catch (IllegalArgumentException expected) {
                // rejected
            }
        }
    }
}
