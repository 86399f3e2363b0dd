package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.lang.foreign.MemorySegment;

/**
 * A folded ConstantOfShape: its one value repeated over the shape, written in bulk into the storage of a realised
 * tensor. The lazy form ({@code value.expand(shape)}) realised on INTERP held every element as a double, then
 * converted each into a second array on the Java heap: the weights of ResNet-50's light model (about 100 MB, all
 * ConstantOfShape) took a third of its build and most of its garbage.
 */
final class ConstantFill {
    private ConstantFill() {}

    /**
     * A realised tensor of {@code shape} on the default device whose every element is {@code value}'s single
     * element, in its dtype.
     */
    static Tensor of(Tensor value, int[] shape) {
        MemorySegment one = value.buffer().toHost().segment();
        int item = value.dtype().itemSize();
        return Tensor.fromWriter(value.dtype(), shape, out -> {
            long total = value.dtype().byteSize(numel(shape));
            if (total == 0) return;
            MemorySegment.copy(one, 0, out, 0, item);
            // doubling copies: the filled prefix copied onto what follows, so the work is a few bulk copies
            for (long done = item; done < total; ) {
                long n = Math.min(done, total - done);
                MemorySegment.copy(out, 0, out, done, n);
                done += n;
            }
        });
    }

    private static long numel(int[] shape) {
        long n = 1;
        for (int d : shape) n *= d;
        return n;
    }
}
