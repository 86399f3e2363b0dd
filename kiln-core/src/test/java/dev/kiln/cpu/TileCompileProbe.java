package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.testing.TestGraphs;
import dev.kiln.runtime.ExecutionPlan;

import java.util.List;

/**
 * Run in a fresh JVM by {@link TileCompileTest} (with {@code -XX:+PrintCompilation} and every convolution reading a
 * padded image): plans that reach every register tile of {@link GemmMicroKernel} (full, edge and narrow tiles, packed
 * and from an image, unit and strided, stored from the registers with a bias and with a residual), each run often
 * enough for the JIT's first tiers to compile the tiles.
 */
public final class TileCompileProbe {
    private TileCompileProbe() {}

    public static void main(String[] args) {
        Tensor x1 = TestGraphs.data(1, 1, 16, 32, 33), w1 = TestGraphs.data(2, 36, 16, 1, 1);
        List<Tensor> outs = List.of(
                // 100 rows = 8 x 12 + 4 (a quarter tile), 70 columns = 2 x 32 + 6 (a narrow tile), one K block
                TestGraphs.data(3, 100, 300).matmul(TestGraphs.data(4, 300, 70)),
                // two K blocks: the tiles' sums through the scratch; 104 rows = 8 x 12 + 8 (an edge tile)
                TestGraphs.data(5, 104, 600).matmul(TestGraphs.data(6, 600, 70)),
                // a 1 x 1 convolution + bias + residual + ReLU: full tiles stored with their residual
                x1.conv2d(w1, null, null, null, null, 1).add(TestGraphs.data(7, 36).reshape(36, 1, 1))
                        .add(TestGraphs.data(8, 1, 36, 32, 33)).relu(),
                // + bias only: full tiles stored from the registers
                x1.conv2d(w1, null, null, null, null, 1).add(TestGraphs.data(9, 36).reshape(36, 1, 1)).relu(),
                // 3 x 3 from a padded image: 20 rows = 12 + 8, 13 x 13 (a last tile of one vector)
                TestGraphs.data(10, 1, 16, 13, 13).conv2d(TestGraphs.data(11, 20, 16, 3, 3), null, null, new int[] {1, 1}, null, 1).relu(),
                // 16 rows = 12 + 4: a quarter tile from the image
                TestGraphs.data(14, 1, 8, 13, 13).conv2d(TestGraphs.data(15, 16, 8, 3, 3), null, null, new int[] {1, 1}, null, 1),
                // strided, from an image in stride phases
                TestGraphs.data(12, 1, 8, 15, 13).conv2d(TestGraphs.data(13, 24, 8, 3, 3), null, new int[] {2, 2}, new int[] {1, 1}, null, 1));
        for (Tensor out : outs) {
            try (ExecutionPlan plan = out.to("CPU").prepare()) {
                for (int i = 0; i < 300; i++) plan.execute();
            }
        }
        System.out.println("done");
    }
}
