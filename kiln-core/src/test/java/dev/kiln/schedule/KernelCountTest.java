package dev.kiln.schedule;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The kernel cut is a tested contract: for each graph, the exact number of kernels and the kinds of
 * the schedule's items, in order. Each case says why, in terms of the numbered rules of
 * {@link Scheduler}'s Javadoc (1 outputs, 2 CONTIGUOUS/COPY/ASSIGN/CUSTOM, 3 broadcast point,
 * 4 shared reduction, 5 in-place hazard, 6 padded reduction, 7 contraction alone, 8 bounded recomputation); anything no
 * rule cuts fuses.
 */
class KernelCountTest {
    /**
     * One graph: its roots (tensors that are not realised), the expected kernel count and item kinds,
     * why, and optionally further checks of the schedule.
     */
    record Case(String name, Supplier<List<Tensor>> roots, int kernels, String kinds, String why, Consumer<Schedule> more) {
        @Override
        public String toString() { return name; }
    }

    // realised inputs; every graph below reads only these (and constants)
    static final Tensor X = data(1, 3, 4), V = data(2, 3, 4), SQ = data(3, 4, 4), Y = data(4, 2, 4, 5);
    static final Tensor ROW = data(5, 1, 4), COL = data(6, 3, 1);
    static final Tensor W45 = data(7, 4, 5), B5 = data(8, 5), W48 = data(9, 4, 8), B8 = data(10, 8), W82 = data(11, 8, 2), B2 = data(12, 2);
    static final Tensor IMG = data(13, 2, 2, 6, 6), KER = data(14, 5, 2, 3, 3), KER5 = data(19, 4, 5, 3, 3), KER2 = data(20, 5, 2, 3, 3);
    static final Tensor C2A = data(15, 2), C2B = data(16, 2), C2C = data(17, 2), VAR2 = data(18, 2).abs().realize();
    static final Tensor TOKENS = Tensor.of(new int[] {0, 2, 1, 2}, 4), IDX = Tensor.of(new long[] {0, 3, 1, 2, 2, 0}, 3, 2);
    static final Tensor INTS = Tensor.of(new int[] {7, -3, 12, 5, 0, -9, 4, 1, 8, 2, -6, 3}, 3, 4);
    static final Tensor H = data(19, 4, 16), WQ = data(20, 16, 16), WK = data(21, 16, 16), WV = data(22, 16, 16), WO = data(23, 16, 16);
    static final Tensor G16 = data(24, 16), W1 = data(25, 16, 32), W3 = data(26, 16, 32), W2 = data(27, 32, 16);

    static List<Case> cases() {
        List<Case> c = new ArrayList<>();

        // ---- elementwise and broadcasting
        c.add(of("elementwise chain", () -> X.add(1).mul(X).exp().relu(), 1, "Kernel",
                "no rule cuts elementwise ops: the chain is the output's kernel (rule 1)"));
        c.add(of("broadcasting chain", () -> X.add(ROW).mul(COL).sub(2.5).sqrt(), 1, "Kernel",
                "EXPAND of buffers only repeats loads; rule 3 concerns broadcast reductions"));
        c.add(of("casts", () -> INTS.cast(DType.F32).mul(0.5).cast(DType.F16).cast(DType.F64), 1, "Kernel",
                "CAST is elementwise: it fuses like any other"));
        c.add(of("where", () -> Tensor.where(X.gt(0), X, V.neg()), 1, "Kernel",
                "WHERE is elementwise; the comparison feeding it fuses too"));
        c.add(of("integer and bitwise math", () -> INTS.mod(5).mul(INTS.floorDiv(3)).bitwiseXor(7).shl(1), 1, "Kernel",
                "integer ops are elementwise; INTS read twice is recomputed, not materialised"));
        c.add(of("constants only", () -> Tensor.full(2.0, DType.F32, 3, 4).add(1), 1, "Kernel",
                "an output with no buffer input is still one kernel (rule 1), with no inputs",
                s -> assertThat(s.items().getFirst().inputs()).isEmpty()));

        // ---- movement
        c.add(of("reshape of a realised buffer", () -> X.reshape(2, 6), 0, "View",
                "a reshape of a realised node aliases its storage: a View, no kernel"));
        c.add(of("reshape of a computed value", () -> X.exp().reshape(12), 1, "Kernel",
                "the reshape is index math inside the kernel that computes exp"));
        c.add(of("permute", () -> X.permute(1, 0), 1, "Kernel",
                "only reshapes are views; a permuted output is written by a kernel"));
        c.add(of("flip", () -> X.flip(0, 1).add(1), 1, "Kernel",
                "FLIP is index math in the kernel"));
        c.add(of("slice with step", () -> Y.slice(2, 0, 5, 2).mul(2), 1, "Kernel",
                "the pad-reshape-shrink of a strided slice is index math"));
        c.add(of("pad of exp", () -> X.exp().pad(new int[][] {{1, 0}, {2, 1}}), 1, "Kernel",
                "no rule for padding: lowering masks the whole padded subtree, so exp(0)=1 never leaks"));
        c.add(of("reflect pad", () -> X.pad(new int[][] {{1, 1}, {2, 2}}, Tensor.PadMode.REFLECT, 0), 1, "Kernel",
                "reflect padding is a cat of flipped slices: all movement, one kernel"));
        c.add(of("expand of a buffer", () -> COL.expand(3, 4), 1, "Kernel",
                "a broadcast output is written by a kernel; nothing reduced is replicated"));
        c.add(of("cat", () -> Tensor.cat(0, X, V, X.exp()), 1, "Kernel",
                "cat is a sum of padded inputs; padding fuses, so the whole cat is one kernel"));
        c.add(of("stack", () -> Tensor.stack(1, X, V, X.neg()), 1, "Kernel",
                "stack is a cat of unsqueezed (reshaped) inputs"));

        // ---- reductions
        c.add(of("sum with keepdim", () -> X.sum(new int[] {1}, true), 1, "Kernel",
                "a reduction that is the output is its own kernel (rule 1)",
                s -> assertThat(output(s, 0).op()).isEqualTo(Op.REDUCE)));
        c.add(of("(a.sum(0) + a.sum(1)).relu()", () -> SQ.sum(0).add(SQ.sum(1)).relu(), 1, "Kernel",
                "both reductions meet at the same index, nothing broadcasts them: they fuse into the output kernel"));
        c.add(of("column and row sums broadcast", () -> X.sum(new int[] {0}, true).add(X.sum(new int[] {1}, true)).relu(), 3,
                "Kernel Kernel Kernel", "each sum is broadcast along the other axis: two broadcast points (rule 3)"));
        c.add(of("reduction read twice at one index", () -> {
            Tensor r = X.sum(1);
            return r.add(1).mul(r);
        }, 1, "Kernel", "rule 4 does not apply: one kernel reads r at one index, and lowering computes it once"));
        c.add(of("reduction read at conflicting indices", () -> {
            Tensor r = X.sum(1);
            return r.add(r.flip(0));
        }, 2, "Kernel Kernel", "r is read at i and at 2-i: fusing would compute each sum twice (rule 4)",
                s -> assertThat(output(s, 0).op()).isEqualTo(Op.REDUCE)));
        c.add(of("reduction of a reduction", () -> Y.sum(2).max(1), 1, "Kernel",
                "only EXPAND replicates: each inner sum feeds one outer max step, so it fuses as a nested loop"));
        c.add(of("mean of a mean", () -> Y.mean(2).mean(1), 1, "Kernel",
                "as above; the divisions are elementwise between the nested reductions"));
        c.add(of("subtract the row mean", () -> X.sub(X.mean(new int[] {1}, true)), 2, "Kernel Kernel",
                "the mean is broadcast: its broadcast point is realised (rule 3), the division and negation with it",
                s -> assertThat(output(s, 0).op().isElementwise()).as("first kernel ends after the reduction's epilogue").isTrue()));
        c.add(of("sum and max broadcast together", () -> X.sub(X.sum(new int[] {1}, true).add(X.max(new int[] {1}, true))), 2,
                "Kernel Kernel", "both reductions feed one broadcast point (rule 3): one kernel computes both"));
        c.add(of("argmax", () -> Y.argmax(1), 2, "Kernel Kernel",
                "the max is broadcast to find the hits (rule 3); the index max fuses into the output"));
        c.add(of("cumsum", () -> X.cumsum(1), 1, "Kernel",
                "a masked sum over a broadcast buffer: what is replicated is a load, not a reduction"));
        c.add(of("var", () -> Y.var(2), 2, "Kernel Kernel",
                "the mean is broadcast (rule 3); the squared-deviation sum fuses into the output"));
        c.add(of("std", () -> Y.std(2), 2, "Kernel Kernel",
                "var plus an elementwise sqrt in the output kernel"));
        c.add(of("logsumexp", () -> Y.logsumexp(2), 2, "Kernel Kernel",
                "the max is broadcast and also added to the result: shared by two kernels (rules 3 and 4)"));
        c.add(of("softmax", () -> Y.softmax(-1), 3, "Kernel Kernel Kernel",
                "max broadcast (rule 3), sum of exp broadcast (rule 3), then the division"));
        c.add(of("log softmax", () -> Y.logSoftmax(-1), 3, "Kernel Kernel Kernel",
                "as softmax: the max and the log of the sum are two broadcast points"));

        // ---- linear algebra, convolution, pooling
        c.add(of("matmul + bias + relu", () -> X.matmul(W45).add(B5).relu(), 1, "Kernel",
                "the dot-product reduction is not broadcast: bias and relu fuse after it"));
        c.add(of("einsum", () -> Tensor.einsum("ij,jk->ik", X, W45), 1, "Kernel",
                "a broadcast multiply and a sum, as matmul"));
        c.add(of("mlp of 2 layers", () -> X.matmul(W48).add(B8).relu().matmul(W82).add(B2), 2, "Kernel Kernel",
                "the hidden layer is broadcast into the second matmul (rule 3); its bias and relu stay in its kernel",
                s -> assertThat(output(s, 0).op()).isEqualTo(Op.MAX)));
        c.add(of("conv2d", () -> IMG.conv2d(KER, null, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1), 1, "Kernel",
                "padded windows of the input times the weight, summed: movement and one reduction"));
        c.add(of("conv2d + bias + relu", () -> IMG.conv2d(KER, B5, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1).relu(), 1,
                "Kernel", "the epilogue is elementwise after the reduction"));
        c.add(of("max pool", () -> IMG.maxPool2d(2, 2), 1, "Kernel",
                "windows are movement; the max over them is the output"));
        c.add(of("avg pool", () -> IMG.avgPool2d(2, 2), 1, "Kernel",
                "window sums and the division fuse; the divisor is a host constant of the geometry"));

        // ---- normalisation, indexing, attention
        c.add(of("batchnorm (running statistics)", () -> IMG.batchNorm(C2A, VAR2, C2B, C2C, 1e-5), 1, "Kernel",
                "no reduction: the statistics are buffers, everything is elementwise"));
        c.add(of("batchnorm (batch statistics)", () -> IMG.batchNormTraining(C2A, C2B, 1e-5), 3, "Kernel Kernel Kernel",
                "mean broadcast (rule 3), variance's rsqrt broadcast (rule 3), then the normalised output"));
        c.add(of("layernorm", () -> Y.layerNorm(new int[] {5}, B5, B5.neg(), 1e-5), 3, "Kernel Kernel Kernel",
                "as batch statistics, over the last axis; the affine map fuses into the output"));
        c.add(of("groupnorm", () -> IMG.groupNorm(2, C2A, C2B, 1e-5), 3, "Kernel Kernel Kernel",
                "mean and rstd per (sample, group) are broadcast over the group (rule 3)"));
        c.add(of("rmsnorm", () -> Y.rmsNorm(new int[] {5}, B5, 1e-6), 2, "Kernel Kernel",
                "one broadcast point: the rsqrt of the mean square"));
        c.add(of("embedding", () -> Tensor.embedding(TOKENS, X), 1, "Kernel",
                "a one-hot select-and-sum over rows: the reduction is not broadcast"));
        c.add(of("gather", () -> V.gather(1, IDX), 1, "Kernel",
                "as embedding, along an axis"));
        c.add(of("sort", () -> V.sort(1, true).values(), 2, "Kernel Kernel",
                "each element's rank (a count) is broadcast to place it (rule 3)"));
        c.add(of("topk", () -> V.topk(2, 1, true).indices(), 2, "Kernel Kernel",
                "ranks as in sort, then the first k placed"));
        c.add(of("causal attention", () -> Tensor.scaledDotProductAttention(Y, Y, Y, null, true, null), 5,
                "Kernel Kernel Kernel Kernel Kernel", "scores shared by three kernels (rule 4, with scale and mask), max and sum "
                        + "broadcast (rule 3), the softmax (an operand that computes, rule 7), then its product with v",
                s -> assertThat(output(s, 0).op()).as("the masked, scaled scores are realised").isEqualTo(Op.WHERE)));
        c.add(of("rotary embedding", () -> {
            Tensor.RotaryTables t = Tensor.rotaryTables(4, 16, 10000);
            return H.rotaryEmbedding(t.cos(), t.sin(), false);
        }, 1, "Kernel", "x*cos + rotate_half(x)*sin: movement and elementwise"));
        c.add(of("gated feed-forward (SwiGLU)", () -> H.matmul(W1).silu().mul(H.matmul(W3)).matmul(W2), 3, "Kernel Kernel Kernel",
                "the two projections meet in the gate product: the second is realised (rule 7), the first computes the product "
                        + "in its epilogue (the broadcast point, rule 3), then the down projection",
                s -> assertThat(output(s, 1).op()).isEqualTo(Op.MUL)));
        c.add(of("attention block", () -> {
            Tensor n = H.rmsNorm(new int[] {16}, G16, 1e-6);
            Tensor q = heads(n.matmul(WQ)), k = heads(n.matmul(WK)), v = heads(n.matmul(WV));
            Tensor att = Tensor.scaledDotProductAttention(q, k, v, null, true, null).permute(1, 0, 2).reshape(4, 16);
            return H.add(att.matmul(WO));
        }, 11, "Kernel ".repeat(11).strip(), "rms stats, the normalised input (an operand of q, k and v that computes, rule 7), "
                + "q, k, v (each broadcast into a matmul, rule 3), scores (rule 4), max, sum, the softmax (rule 7), "
                + "attention output (broadcast into the projection), projection + residual"));

        c.add(of("residual stream of six pre-norm layers", () -> {
            Tensor h = H;
            // each product realised on its own (contiguous), as a quantised model's products are custom ops' outputs
            for (int layer = 0; layer < 6; layer++) h = h.add(h.rmsNorm(new int[] {16}, G16, 1e-6).matmul(layer % 2 == 0 ? WQ : WO).contiguous());
            return h;
        }, 23, "Kernel ".repeat(23).strip(), "per layer the rms statistics, the normalised input (an operand that computes, rule 7) "
                + "and the product (broadcast into its matmul, rule 3); the running sum is realised where recomputing it would "
                + "re-read more than a round trip through memory (rule 8): without that, every layer's kernels re-read every "
                + "earlier layer's product (layer 6's read 7 buffers, a 30-layer decoder's 60)",
                s -> assertThat(s.items()).allSatisfy(i -> assertThat(i.inputs().size()).as(node(i.output())).isLessThanOrEqualTo(4))));

        // ---- materialisation, side effects, devices
        c.add(of("contiguous", () -> X.exp().contiguous().add(1), 2, "Kernel Kernel",
                "CONTIGUOUS is realised (rule 2), so the add reads it",
                s -> assertThat(output(s, 0).op()).isEqualTo(Op.CONTIGUOUS)));
        c.add(of("contiguous of a reduction", () -> X.sum(1).contiguous(), 1, "Kernel",
                "the reduction fuses into the CONTIGUOUS kernel: it reaches one kernel, at one index"));
        c.add(of("assign", () -> Tensor.zeros(3, 4).realize().assign(X.add(V)), 1, "Kernel",
                "ASSIGN is realised (rule 2); its value reads other buffers, so it fuses into it",
                s -> assertThat(output(s, 0).op()).isEqualTo(Op.ASSIGN)));
        c.add(of("assign of its own flip", () -> {
            Tensor t = data(30, 3, 4);
            return t.assign(t.flip(0));
        }, 2, "Kernel Kernel", "the value reads the target at other positions than it writes: realised first (rule 5)",
                s -> assertThat(output(s, 0).op()).isEqualTo(Op.FLIP)));
        c.add(of("assign of its own increment", () -> {
            Tensor t = data(31, 3, 4);
            return t.assign(t.add(1));
        }, 1, "Kernel", "each element is read where it is written, before it is written: safe in place"));
        c.add(of("custom function", () -> Tensor.custom("twice", DType.F32, new int[] {3, 4}, (in, out) -> { }, X.exp()).add(1), 2,
                "Kernel Custom Kernel", "CUSTOM and its source are realised (rule 2): a kernel before it, a kernel after"));
        c.add(of("copy to INTERP:1", () -> X.exp().to("INTERP:1"), 1, "Kernel Copy",
                "COPY and its source are realised (rule 2): the exp kernel, then the copy"));
        c.add(of("copy of a realised buffer", () -> X.to("INTERP:1"), 0, "View Copy",
                "the source is a reshape of a buffer: a View, then the copy; nothing to compute"));

        // ---- several outputs
        c.add(many("two outputs sharing elementwise work", () -> {
            Tensor e = X.exp();
            return List.of(e.add(1), e.mul(2));
        }, 2, "Kernel Kernel", "each output is a kernel (rule 1); exp is recomputed in both rather than stored"));
        c.add(many("two outputs sharing a reduction", () -> {
            Tensor r = X.sum(1);
            return List.of(r.add(1), r.mul(2));
        }, 3, "Kernel Kernel Kernel", "r would be computed in two kernels: it is realised once (rule 4)",
                s -> assertThat(s.items().subList(1, 3)).allSatisfy(i -> assertThat(i.inputs()).containsExactly(output(s, 0)))));
        c.add(many("an output and its reduction", () -> {
            Tensor e = X.exp();
            return List.of(e, e.sum(1));
        }, 2, "Kernel Kernel", "both are outputs (rule 1); the sum reads the realised exp"));

        // ---- concatenation of reductions
        c.add(of("cat of two matmuls", () -> Tensor.cat(1, X.matmul(W45).relu(), X.matmul(W48)), 3, "Kernel Kernel Kernel",
                "each piece is padded to the whole: its reduction is realised unpadded (rule 6), then the cat adds two gated reads"));
        c.add(of("cat of a sum and an elementwise piece", () -> Tensor.cat(1, X.sum(new int[]{1}, true), X.exp()), 2, "Kernel Kernel",
                "only the piece with a reduction is realised (rule 6); the exp stays in the cat's kernel"));

        c.add(of("mean of a matmul", () -> X.matmul(W45).relu().mean(), 2, "Kernel Kernel",
                "the contraction is not fused into the mean (rule 7): the matmul with its relu, then the mean"));
        c.add(of("matmul of a max", () -> Y.max(new int[]{2}, false).matmul(W45), 2, "Kernel Kernel",
                "the max inside the contraction's operand is realised (rule 7), then the matmul reads it"));
        c.add(of("conv after conv", () -> IMG.conv2d(KER, null, null, new int[]{1, 1}, null, 1).relu()
                        .conv2d(KER5, null, null, new int[]{1, 1}, null, 1), 2, "Kernel Kernel",
                "the first conv is realised unpadded (rule 3 looks through the pad): the second reads it under gates",
                s -> assertThat(output(s, 0).shape().toArray()).containsExactly(2, 5, 6, 6)));
        c.add(of("max pooling after a conv", () -> IMG.conv2d(KER, null, null, new int[]{1, 1}, null, 1).relu()
                        .maxPool2d(new int[]{3, 3}, new int[]{2, 2}, new int[]{1, 1}, null, false), 2, "Kernel Kernel",
                "the conv is realised unpadded (rule 3 looks through the -inf padding): the pooling reads it under gates",
                s -> assertThat(output(s, 0).shape().toArray()).containsExactly(2, 5, 6, 6)));
        c.add(of("residual block", () -> IMG.conv2d(KER, null, null, new int[]{1, 1}, null, 1)
                        .add(IMG.conv2d(KER2, null, null, new int[]{1, 1}, null, 1).mul(0.5)).relu(), 2, "Kernel Kernel",
                "two convolutions meet in the add: the second branch is realised with its scale (rule 7), the first adds it"));
        c.add(of("sum of a sum", () -> Y.sum(2).sum(1), 1, "Kernel", "two plain sums still fuse (rule 7 is for contractions)"));

        // ---- zero-size tensors
        c.add(of("zero-size elementwise", () -> Tensor.zeros(0, 3).add(1), 1, "Kernel",
                "an empty output is still a kernel (rule 1); lowering gives it an empty body"));
        c.add(of("sum over an empty axis", () -> Tensor.zeros(DType.F32, 3, 0).realize().sum(1), 1, "Kernel",
                "a reduction over nothing is its identity, written by one kernel"));
        c.add(of("cat with an empty tensor", () -> Tensor.cat(0, X, Tensor.zeros(0, 4).realize()), 1, "Kernel",
                "the empty part is padding around nothing; the cat stays one kernel"));
        return c;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void kernelCount(Case c) {
        List<Tensor> roots = c.roots().get();
        List<UOp> uops = roots.stream().map(Tensor::uop).toList();
        assertThat(uops).as("roots must not be realised").noneMatch(u -> u.op() == Op.BUFFER);
        Schedule s = Scheduler.schedule(uops);
        assertThat(s.kernelCount()).as(c.name() + ": " + c.why() + "\n" + describe(s)).isEqualTo(c.kernels());
        assertThat(kinds(s)).as(c.name() + ": " + c.why() + "\n" + describe(s)).isEqualTo(Arrays.asList(c.kinds().split(" ")));
        c.more().accept(s);
    }

    // ---------------------------------------------------------------- helpers

    private static Case of(String name, Supplier<Tensor> root, int kernels, String kinds, String why) {
        return of(name, root, kernels, kinds, why, s -> { });
    }

    private static Case of(String name, Supplier<Tensor> root, int kernels, String kinds, String why, Consumer<Schedule> more) {
        return new Case(name, () -> List.of(root.get()), kernels, kinds, why, more);
    }

    private static Case many(String name, Supplier<List<Tensor>> roots, int kernels, String kinds, String why) {
        return many(name, roots, kernels, kinds, why, s -> { });
    }

    private static Case many(String name, Supplier<List<Tensor>> roots, int kernels, String kinds, String why, Consumer<Schedule> more) {
        return new Case(name, roots, kernels, kinds, why, more);
    }

    /** (4, 16) -> (2 heads, 4, 8). */
    private static Tensor heads(Tensor t) { return t.reshape(4, 2, 8).permute(1, 0, 2); }

    static UOp output(Schedule s, int item) { return s.items().get(item).output(); }

    static List<String> kinds(Schedule s) {
        return s.items().stream().map(i -> i.getClass().getSimpleName()).toList();
    }

    static String describe(Schedule s) {
        StringBuilder b = new StringBuilder();
        for (ScheduleItem i : s.items()) {
            b.append("  ").append(i.getClass().getSimpleName()).append(' ').append(node(i.output())).append(" <- ")
                    .append(i.inputs().stream().map(KernelCountTest::node).toList()).append('\n');
        }
        return b.toString();
    }

    private static String node(UOp u) { return u.op() + "" + u.shape(); }

    /** Deterministic, irregular f32 data of a shape, realised. */
    static Tensor data(int seed, int... shape) {
        int n = 1;
        for (int d : shape) n *= d;
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) (2 * Math.sin(i * (0.7 + 0.13 * seed) + seed));
        return Tensor.of(v, shape).realize();
    }
}
