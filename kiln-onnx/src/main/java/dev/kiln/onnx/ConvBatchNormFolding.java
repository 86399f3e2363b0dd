package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.onnxspec.NumericsPolicy;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.WorkerPool;
import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Finds the {@code Conv -> BatchNormalization} pairs of a model that fold into one Conv: the batch norm's
 * per-channel scale {@code s = scale / sqrt(var + eps)} multiplies the weights, and its shift becomes the bias
 * ({@code (b - mean) s + bias}), computed once when the graph is built. What runs is then a convolution whose
 * epilogue adds a bias, instead of one that subtracts, divides by a square root, multiplies and adds per element.
 *
 * <p>A pair folds only when the result is the same function: the Conv's output is read by the batch norm alone
 * (and is no graph output), the batch norm is in inference mode with a single output, the weights, the Conv's
 * bias and the four batch-norm parameters are constants, all f32, with one parameter per output channel. The
 * product then rounds differently from the unfolded form ({@code (x W) s} against {@code x (W s)}): the freedom
 * that reorderable float reductions allow ({@link NumericsPolicy#mayReorderReductions()}, the default); with
 * {@code kiln.reductions=exact} nothing folds.
 */
final class ConvBatchNormFolding {
    private ConvBatchNormFolding() {}

    /** Weights are scaled this many at a time, through one array. */
    private static final int CHUNK = 1 << 14;

    /**
     * The batch-norm node that may fold into each Conv, by the Conv's index: the pairs of the right form. Whether
     * the operands are constants is known only when the Conv is reached (a model may compute its weights from
     * constants, as ConstantOfShape does): see {@link #operandsConstant}.
     */
    static Map<Integer, Node> pairs(List<Node> nodes, List<String> outputs, long opset) {
        Map<Integer, Node> pairs = new HashMap<>();
        if (!NumericsPolicy.mayReorderReductions()) return pairs;
        Map<String, Integer> reads = new HashMap<>();
        Map<String, Node> readBy = new HashMap<>();
        for (Node n : nodes) {
            for (String in : n.inputs()) {
                if (in.isEmpty()) continue;
                reads.merge(in, 1, Integer::sum);
                readBy.put(in, n);
            }
        }
        for (String o : outputs) reads.merge(o, 2, Integer::sum);
        for (Node conv : nodes) {
            if (!conv.opType().equals("Conv") || !conv.domain().isEmpty() || conv.outputs().size() != 1 || conv.inputs().size() < 2) continue;
            String y = conv.outputs().getFirst();
            Node bn = readBy.get(y);
            if (bn == null || reads.getOrDefault(y, 0) != 1 || !bn.opType().equals("BatchNormalization") || !bn.domain().isEmpty()) continue;
            if (bn.inputs().size() != 5 || !bn.inputs().getFirst().equals(y) || bn.outputs().stream().skip(1).anyMatch(o -> !o.isEmpty())) continue;
            if (opset >= 14 && bn.attrs().b("training_mode", false) || opset < 9 && !bn.attrs().b("spatial", true)) continue;
            pairs.put(conv.index(), bn);
        }
        return pairs;
    }

    /**
     * The weights among {@code pairs}' Convs that the fold may scale in place, in the storage they already have: those a
     * ConstantOfShape node of this graph makes (a buffer of its own, made while this graph is built; never an
     * initializer, which the model keeps for its next run) and only their Conv reads (once, not a graph output), in a
     * graph without subgraphs (which could read any name). A model that builds its weights this way (ResNet-50 light's
     * 100 MB) then needs no second copy of them.
     */
    static Set<String> weightsScaledInPlace(List<Node> nodes, List<String> outputs, Map<Integer, Node> pairs) {
        Set<String> out = new HashSet<>();
        if (pairs.isEmpty()) return out;
        Map<String, Integer> reads = new HashMap<>();
        Set<String> filled = new HashSet<>();
        for (Node n : nodes) {
            if (!n.attrs().graphs().isEmpty()) return Set.of();
            for (String in : n.inputs()) if (!in.isEmpty()) reads.merge(in, 1, Integer::sum);
            if (n.opType().equals("ConstantOfShape") && n.domain().isEmpty() && n.outputs().size() == 1) filled.add(n.outputs().getFirst());
        }
        for (String o : outputs) reads.merge(o, 2, Integer::sum);
        for (Node n : nodes) {
            if (!pairs.containsKey(n.index())) continue;
            String w = n.inputs().get(1);
            if (filled.contains(w) && reads.getOrDefault(w, 0) == 1) out.add(w);
        }
        return out;
    }

    /** Whether the weights, the Conv's bias (if any) and the batch norm's four parameters are all constants. */
    static boolean operandsConstant(Node conv, Node bn, Predicate<String> constant) {
        boolean all = constant.test(conv.inputs().get(1)) && (conv.inputs().size() < 3 || conv.inputs().get(2).isEmpty()
                || constant.test(conv.inputs().get(2)));
        for (int k = 1; k < 5; k++) all &= constant.test(bn.inputs().get(k));
        return all;
    }

    /**
     * The folded weights and bias of {@code conv} followed by {@code bn}, or null when the operands' dtypes or
     * shapes are not the plain f32, one-per-output-channel ones (the pair is then built unfolded, and any error
     * is the operators' own).
     *
     * @param w       the Conv's weights, b its bias (or null), then the batch norm's parameters, all realised constants (read on the host)
     * @param inPlace whether {@code w}'s storage may be overwritten ({@link #weightsScaledInPlace}): the folded weights
     *                are then {@code w} itself, where its buffer is writable host memory holding exactly its elements
     */
    static Tensor[] fold(Tensor w, Tensor b, Tensor scale, Tensor bias, Tensor mean, Tensor var, double eps, boolean inPlace) {
        if (w.ndim() < 3 || w.shape().isSymbolic()) return null;
        int channels = w.dim(0);
        if (channels == 0 || w.numel() == 0) return null;
        for (Tensor t : b == null ? new Tensor[] {w, scale, bias, mean, var} : new Tensor[] {w, b, scale, bias, mean, var}) {
            if (t.dtype() != DType.F32) return null;
            if (t != w && (t.ndim() != 1 || t.shape().isSymbolic() || t.dim(0) != channels)) return null;
        }
        // on the host, in double, rounded once: the interpreter took a quarter of ResNet-50's prepare for this
        float[] sc = scale.toFloatArray(), bi = bias.toFloatArray(), mu = mean.toFloatArray(), va = var.toFloatArray();
        float[] bv = b == null ? null : b.toFloatArray();
        int per = (int) (w.numel() / channels);
        float[] shift = new float[channels];
        double[] s = new double[channels];
        for (int c = 0; c < channels; c++) {
            s[c] = sc[c] / Math.sqrt(va[c] + eps);
            shift[c] = (float) (((bv == null ? 0.0 : bv[c]) - mu[c]) * s[c] + bi[c]);
        }
        // the scaled weights written straight into the new tensor's storage (or back into the old one's), a chunk at a
        // time (no whole-tensor arrays: for 100 MB of weights those were two more copies and most of the build's garbage)
        Buffer wb = w.buffer();
        MemorySegment src = wb.toHost().segment();
        if (inPlace && wb.isHostMemory() && !wb.isImmutable() && !src.isReadOnly() && wb.count() == w.numel()) {
            scale(src, src, channels, per, s);
            return new Tensor[] {w, Tensor.fromSegment(MemorySegment.ofArray(shift), DType.F32, channels)};
        }
        Tensor folded = Tensor.fromWriter(DType.F32, w.dims(), out -> scale(src, out, channels, per, s));
        // fromSegment copies in bulk (Tensor.of writes element by element)
        Tensor shiftTensor = Tensor.fromSegment(MemorySegment.ofArray(shift), DType.F32, channels);
        return new Tensor[] {folded, shiftTensor};
    }

    /**
     * {@code out} = {@code src} with channel c's {@code per} elements times {@code s[c]}, rounded once; the two may be one
     * segment. Large weights are scaled by channels side by side on the workers (each element is computed the same
     * wherever it is): ResNet-50 light's 100 MB took 40 ms of its build on one thread.
     */
    private static void scale(MemorySegment src, MemorySegment out, int channels, int per, double[] s) {
        int shares = (long) channels * per < PARALLEL_MIN ? 1 : WorkerPool.balancedShares(channels);
        WorkerPool.forRanges(channels, shares, (from, to) -> scale(src, out, (int) from, (int) to, per, s));
    }

    /** Below this many elements the weights are scaled on the calling thread. */
    private static final long PARALLEL_MIN = 1L << 16;

    /** {@link #scale(MemorySegment, MemorySegment, int, int, double[])} of channels {@code [from, to)}. */
    private static void scale(MemorySegment src, MemorySegment out, int from, int to, int per, double[] s) {
        float[] chunk = new float[Math.min(per, CHUNK)];
        for (int c = from; c < to; c++) {
            double sc1 = s[c];
            for (int at = 0; at < per; at += CHUNK) {
                int len = Math.min(CHUNK, per - at);
                long offset = 4L * ((long) c * per + at);
                MemorySegment.copy(src, ValueLayout.JAVA_FLOAT_UNALIGNED, offset, chunk, 0, len);
                scaleRun(chunk, len, sc1);
                MemorySegment.copy(chunk, 0, out, ValueLayout.JAVA_FLOAT_UNALIGNED, offset, len);
            }
        }
    }

    /**
     * {@code chunk[0, len)} times {@code s}. A method of its own, small and called per run: the JIT compiles it (and C2
     * picks it first, being the hottest) within a few thousand calls, where the loop inside {@link #scale} waited for an
     * on-stack replacement behind the cold JVM's queue of compilations (0 to 200 ms of ResNet-50's build, run to run).
     */
    private static void scaleRun(float[] chunk, int len, double s) {
        for (int k = 0; k < len; k++) chunk[k] = (float) (chunk[k] * s);
    }
}
