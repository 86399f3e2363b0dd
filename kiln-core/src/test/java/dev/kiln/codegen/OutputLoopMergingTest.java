package dev.kiln.codegen;

import dev.kiln.Tensor;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Merged output loops compute what the nest computed, merge only where no division remains, and leave the rest. */
class OutputLoopMergingTest {
    private static KernelProgram lowered(Tensor t) { return OutputLoopFlatteningTest.lowered(t); }

    private static float[] evaluate(KernelProgram p, Tensor... inputs) { return OutputLoopFlatteningTest.evaluate(p, inputs); }

    private static List<Stmt.Loop> outputNest(KernelProgram p) {
        List<Stmt.Loop> nest = new ArrayList<>();
        Stmt.Block b = p.body();
        while (b.body().size() == 1 && b.body().getFirst() instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.REDUCE) {
            nest.add(l);
            b = l.body();
        }
        return nest;
    }

    private static boolean divides(KernelProgram p) {
        boolean[] found = {false};
        Optimizer.walk(p.body(), s -> {
            for (UOp e : Optimizer.expressions(s)) for (UOp u : e.toposort()) found[0] |= u.op() == Op.MOD || u.op() == Op.DIV;
        });
        return found[0];
    }

    @Test
    void aPerChannelEpilogueMergesItsPixelsIntoOneRun() {
        // y[c, h, w] = x[c, h, w] * s[c] + t[c]: h and w are one run; c is read alone (s, t) and stays
        Tensor x = Tensor.randn(1, 1, 8, 7, 7).realize(), s = Tensor.randn(2, 1, 8, 1, 1).realize(), t = Tensor.randn(3, 1, 8, 1, 1).realize();
        KernelProgram nest = lowered(x.mul(s).add(t));
        KernelProgram merged = OutputLoopMerging.merge(nest);
        List<Long> extents = outputNest(merged).stream().map(Stmt.Loop::extent).toList();
        assertThat(extents).as("1 x 8 x 7 x 7 -> 8 x 49").containsExactly(8L, 49L);
        assertThat(divides(merged)).isFalse();
        assertThat(evaluate(merged, x, s, t)).containsExactly(evaluate(nest, x, s, t));
        assertThat(OutputLoopMerging.merge(merged)).as("idempotent").isSameAs(merged);
    }

    @Test
    void aTransposeOrAStridedWindowKeepsItsLoops() {
        Tensor x = Tensor.randn(4, 6, 10).realize();
        KernelProgram transposed = lowered(x.permute(1, 0).exp());
        assertThat(OutputLoopMerging.merge(transposed)).isSameAs(transposed);
        Tensor img = Tensor.randn(5, 1, 2, 8, 8).realize();
        KernelProgram pooled = lowered(img.maxPool2d(new int[] {3, 3}, new int[] {2, 2}, new int[] {1, 1}, null, false));
        KernelProgram merged = OutputLoopMerging.merge(pooled);
        assertThat(divides(merged)).as("no merge that needs a division").isFalse();
        assertThat(evaluate(merged, img)).containsExactly(evaluate(pooled, img));
    }

    @Test
    void aPaddedConvolutionCountsTwoFlopsPerMultiplyAddNotItsGates() {
        Tensor x = Tensor.randn(6, 1, 3, 9, 9).realize(), w = Tensor.randn(7, 4, 3, 3, 3).realize();
        KernelProgram conv = lowered(x.conv2d(w, null, new int[] {1, 1}, new int[] {1, 1}, null, 1));
        assertThat(ProgramCost.flops(conv)).isEqualTo(2L * 4 * 9 * 9 * 3 * 3 * 3);
    }
}
