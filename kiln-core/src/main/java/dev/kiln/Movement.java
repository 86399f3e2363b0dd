package dev.kiln;

import dev.kiln.ir.Ints;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Movement ops: reshapes, permutations, expansion, squeezing, slicing with steps, padding (constant, reflect,
 * edge, circular), concatenation, stacking, splitting, repetition, triangles, and block rearrangements
 * between the channels and the spatial axes of (N, C, H, W) tensors.
 */
final class Movement {
    private Movement() {}

    /** ONNX DepthToSpace of (N, C, H, W): mode {@code "DCR"} (depth-column-row) or {@code "CRD"}. */
    static Tensor depthToSpace(Tensor x, int blockSize, String mode) {
        String op = "depthToSpace";
        int b = blockSize;
        check4d(op, x, b);
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
        if (c % (b * b) != 0) {
            throw new IllegalArgumentException(op + ": channels " + c + " of input " + x.shape() + " are not divisible by blockSize^2 = " + b * b);
        }
        int oc = c / (b * b);
        Tensor y = switch (mode == null ? "" : mode) {
            case "DCR" -> x.reshape(n, b, b, oc, h, w).permute(0, 3, 4, 1, 5, 2);
            case "CRD" -> x.reshape(n, oc, b, b, h, w).permute(0, 1, 4, 2, 5, 3);
            default -> throw new IllegalArgumentException(op + ": unknown mode " + (mode == null ? "null" : "'" + mode + "'") + "; valid are 'DCR', 'CRD'");
        };
        return y.reshape(n, oc, h * b, w * b);
    }

    /** ONNX SpaceToDepth of (N, C, H, W): each b-by-b block becomes b*b channels, block row major. */
    static Tensor spaceToDepth(Tensor x, int blockSize) {
        String op = "spaceToDepth";
        int b = blockSize;
        check4d(op, x, b);
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
        if (h % b != 0 || w % b != 0) {
            throw new IllegalArgumentException(op + ": spatial size " + h + "x" + w + " of input " + x.shape() + " is not divisible by blockSize " + b);
        }
        return x.reshape(n, c, h / b, b, w / b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h / b, w / b);
    }

    private static void check4d(String op, Tensor x, int b) {
        if (x.ndim() != 4) throw new IllegalArgumentException(op + ": input must be 4-D (N, C, H, W), got " + x.shape());
        if (b <= 0) throw new IllegalArgumentException(op + ": blockSize must be > 0, got " + b);
    }

    static Tensor reshape(Tensor t, int... shape) {
        int[] s = shape.clone();
        int infer = -1;
        long known = 1;
        for (int i = 0; i < s.length; i++) {
            if (s[i] == -1) {
                if (infer >= 0) throw new IllegalArgumentException("reshape: more than one -1 in " + Arrays.toString(shape));
                infer = i;
            } else if (s[i] < 0) {
                throw new IllegalArgumentException("reshape: negative dimension " + s[i] + " in " + Arrays.toString(shape));
            } else known = s[i] != 0 && known > Long.MAX_VALUE / s[i] ? Long.MAX_VALUE : known * s[i]; // saturates, never wraps
        }
        if (infer >= 0) {
            if (known == 0 || known > t.numel() || t.numel() % known != 0) {
                throw new IllegalArgumentException("reshape: cannot infer -1 in " + Arrays.toString(shape) + " for shape " + t.shape() + " (" + t.numel() + " elements)");
            }
            s[infer] = Shape.dimension("reshape of " + t.shape() + " to " + Arrays.toString(shape), infer, t.numel() / known);
        }
        Shape target = Shape.of(s);
        if (target.numel() != t.numel()) {
            throw new IllegalArgumentException("reshape: cannot reshape " + t.shape() + " (" + t.numel() + " elements) to " + target
                    + " (" + target.numel() + " elements)");
        }
        return t.reshapeTo(t.shape().reshaped(s));
    }

    static Tensor withSymbolicDim(Tensor t, int axis, Variable size) {
        int a = t.axis(axis, "withSymbolicDim");
        Variable had = t.shape().variable(a);
        if (had != null && !had.equals(size)) {
            throw new IllegalArgumentException("withSymbolicDim: axis " + axis + " of " + t.shape() + " is already symbolic ("
                    + had.name() + ")");
        }
        return t.reshapeTo(t.shape().withVariable(a, size));
    }

    static Tensor permute(Tensor t, int... order) {
        if (order.length != t.ndim()) {
            throw new IllegalArgumentException("permute: order " + Arrays.toString(order) + " has " + order.length + " axes, shape " + t.shape() + " has " + t.ndim());
        }
        int[] p = new int[order.length];
        boolean[] seen = new boolean[order.length];
        boolean identity = true;
        for (int i = 0; i < order.length; i++) {
            p[i] = t.axis(order[i], "permute");
            if (seen[p[i]]) throw new IllegalArgumentException("permute: axis " + order[i] + " repeated in " + Arrays.toString(order));
            seen[p[i]] = true;
            identity &= p[i] == i;
        }
        return identity ? t : t.make(UOp.of(Op.PERMUTE, t.dtype(), Ints.of(p), t.node()));
    }

    static Tensor transpose(Tensor t, int a, int b) {
        int x = t.axis(a, "transpose"), y = t.axis(b, "transpose");
        int[] p = new int[t.ndim()];
        for (int i = 0; i < p.length; i++) p[i] = i;
        p[x] = y;
        p[y] = x;
        return t.permute(p);
    }

    static Tensor mT(Tensor t) {
        if (t.ndim() < 2) throw new IllegalArgumentException("mT: needs at least 2 axes, shape is " + t.shape());
        return t.transpose(-2, -1);
    }

    static Tensor expand(Tensor t, int... shape) {
        int[] s = shape.clone();
        int off = s.length - t.ndim();
        if (off < 0) throw new IllegalArgumentException("expand: shape " + Arrays.toString(shape) + " has fewer axes than " + t.shape());
        for (int i = 0; i < s.length; i++) {
            if (s[i] == -1) {
                if (i < off) throw new IllegalArgumentException("expand: -1 not allowed for new axis " + i + " in " + Arrays.toString(shape));
                s[i] = t.dim(i - off);
            }
            if (i >= off && t.dim(i - off) != 1 && t.dim(i - off) != s[i]) {
                throw new IllegalArgumentException("expand: axis " + (i - off) + " of " + t.shape() + " has size " + t.dim(i - off)
                        + ", cannot expand to " + s[i]);
            }
        }
        return t.broadcastTo(s);
    }

    static Tensor squeeze(Tensor t, int... axes) {
        int[] d = t.dims();
        List<Integer> keep = new ArrayList<>();
        if (axes.length == 0) {
            for (int x : d) if (x != 1) keep.add(x);
        } else {
            int[] ax = t.axes(axes, "squeeze");
            for (int a : ax) {
                if (d[a] != 1) throw new IllegalArgumentException("squeeze: axis " + a + " of shape " + t.shape() + " has size " + d[a] + ", not 1");
            }
            for (int i = 0; i < d.length; i++) if (Arrays.binarySearch(ax, i) < 0) keep.add(d[i]);
        }
        return t.reshape(keep.stream().mapToInt(Integer::intValue).toArray());
    }

    static Tensor unsqueeze(Tensor t, int axis) {
        int a = Tensor.normAxis(axis, t.ndim() + 1, "unsqueeze", t.shape());
        int[] d = t.dims();
        int[] out = new int[d.length + 1];
        for (int i = 0, j = 0; i < out.length; i++) out[i] = i == a ? 1 : d[j++];
        return t.reshape(out);
    }

    static Tensor flatten(Tensor t) {
        return t.reshape(Shape.dimension("flatten of " + t.shape(), 0, t.numel()));
    }

    static Tensor flatten(Tensor t, int start, int end) {
        if (t.ndim() == 0) return t.reshape(1);
        int s = t.axis(start, "flatten"), e = t.axis(end, "flatten");
        if (s > e) throw new IllegalArgumentException("flatten: start axis " + start + " is after end axis " + end + " for shape " + t.shape());
        int[] d = t.dims();
        int[] out = new int[d.length - (e - s)];
        long merged = 1; // a long: with shapes bounded by Shape.MAX_NUMEL, the product cannot wrap
        for (int i = s; i <= e; i++) merged *= d[i];
        int m = Shape.dimension("flatten of " + t.shape() + " from axis " + s + " to " + e, s, merged);
        for (int i = 0, j = 0; i < d.length; i++) {
            if (i < s || i > e) out[j++] = d[i];
            else if (i == s) out[j++] = m;
        }
        return t.reshape(out);
    }

    static Tensor flip(Tensor t, int... axes) {
        if (axes.length == 0) return t;
        return t.make(UOp.of(Op.FLIP, t.dtype(), Ints.of(t.axes(axes, "flip")), t.node()));
    }

    static Tensor slice(Tensor t, int axis, int start, int end, int step) {
        int a = t.axis(axis, "slice");
        int n = t.dim(a);
        if (step == 0) throw new IllegalArgumentException("slice: step must not be 0 (axis " + axis + " of shape " + t.shape() + ")");
        if (step > 0) {
            int s = clampIndex(start, n, 0, n), e = clampIndex(end, n, 0, n);
            if (e < s) e = s;
            Tensor x = t.shrinkAxis(a, s, e);
            return step == 1 ? x : stride(x, a, step);
        }
        // negative step: the same elements as a positive-step slice over the flipped axis
        int s = clampIndex(start, n, -1, n - 1), e = clampIndex(end, n, -1, n - 1);
        int fs = n - 1 - s, fe = n - 1 - e; // positions in the flipped axis
        if (fe < fs) fe = fs;
        return stride(t.flip(a).shrinkAxis(a, fs, Math.min(fe, n)), a, -step);
    }

    private static int clampIndex(int i, int n, int lo, int hi) {
        long v = i < 0 && i != Integer.MIN_VALUE ? (long) i + n : i;
        if (i == Integer.MIN_VALUE) v = lo;
        return (int) Math.max(lo, Math.min(hi, v));
    }

    /** Elements {@code [start, end)} along an axis. */
    static Tensor shrinkAxis(Tensor t, int a, int start, int end) {
        if (start == 0 && end == t.dim(a)) return t;
        int[] b = new int[2 * t.ndim()];
        for (int i = 0; i < t.ndim(); i++) {
            b[2 * i] = i == a ? start : 0;
            b[2 * i + 1] = i == a ? end : t.dim(i);
        }
        return t.make(UOp.of(Op.SHRINK, t.dtype(), Ints.of(b), t.node()));
    }

    /** Every {@code step}-th element along an axis, from a pad-reshape-shrink (no gather). */
    private static Tensor stride(Tensor t, int a, int step) {
        int n = t.dim(a);
        int out = (n + step - 1) / step;
        Tensor x = padAxis(t, a, 0, out * step - n);
        int[] d = x.dims();
        int[] split = new int[d.length + 1];
        for (int i = 0, j = 0; i < d.length; i++) {
            if (i == a) {
                split[j++] = out;
                split[j++] = step;
            } else split[j++] = d[i];
        }
        return x.reshape(split).shrinkAxis(a + 1, 0, 1).squeeze(a + 1);
    }

    private static Tensor padAxis(Tensor t, int a, int before, int after) {
        if (before == 0 && after == 0) return t;
        int[] b = new int[2 * t.ndim()];
        b[2 * a] = before;
        b[2 * a + 1] = after;
        return t.make(UOp.of(Op.PAD, t.dtype(), Ints.of(b), t.node()));
    }

    static Tensor pad(Tensor t, int[][] pads) {
        return t.pad(pads, Tensor.PadMode.CONSTANT, 0);
    }

    static Tensor pad(Tensor t, int[][] pads, Tensor.PadMode mode, double value) {
        if (pads.length != t.ndim()) {
            throw new IllegalArgumentException("pad: " + pads.length + " (before, after) pairs for shape " + t.shape() + " of rank " + t.ndim());
        }
        Tensor x = t;
        for (int a = 0; a < pads.length; a++) {
            if (pads[a].length != 2) throw new IllegalArgumentException("pad: axis " + a + " needs a (before, after) pair, got " + Arrays.toString(pads[a]));
            int before = pads[a][0], after = pads[a][1];
            long cropped = (long) Math.max(0, -before) + Math.max(0, -after);
            if (cropped > x.dim(a)) { // the crop below would fail in the IR, naming a shrink the caller never asked for
                throw new IllegalArgumentException("pad: negative pads (" + before + ", " + after + ") remove " + cropped
                        + " elements from axis " + a + " of " + t.shape() + ", which has " + x.dim(a));
            }
            // crop first, so modes see the cropped data
            x = x.shrinkAxis(a, Math.max(0, -before), x.dim(a) - Math.max(0, -after));
            before = Math.max(0, before);
            after = Math.max(0, after);
            if (before == 0 && after == 0) continue;
            int n = x.dim(a);
            x = switch (mode) {
                case CONSTANT -> {
                    Tensor padded = padAxis(x, a, before, after);
                    if (value == 0) yield padded;
                    Tensor inside = padAxis(x.onesLike().cast(DType.BOOL), a, before, after);
                    yield Tensor.where(inside, padded, padded.fullLike(value));
                }
                case REFLECT -> {
                    if (before >= n || after >= n) {
                        throw new IllegalArgumentException("pad: reflect padding (" + before + ", " + after + ") needs less than the axis size " + n
                                + " (axis " + a + " of " + t.shape() + ")");
                    }
                    // the after-part ends just before index n - 2 - after, which is -1 (open) for after = n - 1
                    int afterEnd = n - 2 - after < 0 ? Integer.MIN_VALUE : n - 2 - after;
                    yield Tensor.cat(a, x.slice(a, before, 0, -1), x, x.slice(a, n - 2, afterEnd, -1));
                }
                case EDGE -> {
                    if (n == 0) throw new IllegalArgumentException("pad: edge padding of empty axis " + a + " of " + t.shape());
                    Tensor first = x.shrinkAxis(a, 0, 1), last = x.shrinkAxis(a, n - 1, n);
                    yield Tensor.cat(a, repeatAxis(first, a, before), x, repeatAxis(last, a, after));
                }
                case CIRCULAR -> {
                    if (before > n || after > n) {
                        throw new IllegalArgumentException("pad: circular padding (" + before + ", " + after + ") exceeds the axis size " + n
                                + " (axis " + a + " of " + t.shape() + ")");
                    }
                    yield Tensor.cat(a, x.shrinkAxis(a, n - before, n), x, x.shrinkAxis(a, 0, after));
                }
            };
        }
        return x;
    }

    private static Tensor repeatAxis(Tensor t, int a, int times) {
        int[] r = new int[t.ndim()];
        Arrays.fill(r, 1);
        r[a] = times;
        return t.repeat(r);
    }

    static Tensor cat(int axis, Tensor... tensors) {
        if (tensors.length == 0) throw new IllegalArgumentException("cat: needs at least one tensor");
        Tensor first = tensors[0];
        int a = first.axis(axis, "cat");
        DType dt = first.dtype();
        long total = 0;
        for (Tensor t : tensors) {
            if (t.ndim() != first.ndim()) {
                throw new IllegalArgumentException("cat: shapes " + first.shape() + " and " + t.shape() + " have different ranks");
            }
            for (int i = 0; i < t.ndim(); i++) {
                if (i != a && t.dim(i) != first.dim(i)) {
                    throw new IllegalArgumentException("cat: shapes " + first.shape() + " and " + t.shape() + " differ at axis " + i + " (cat axis " + axis + ")");
                }
            }
            dt = DType.promote(dt, t.dtype());
            total += t.dim(a);
        }
        Shape.dimension("cat of " + tensors.length + " tensors like " + first.shape(), a, total);
        Tensor acc = null;
        int offset = 0;
        for (Tensor t : tensors) {
            Tensor p = padAxis(t.to(first.device()).cast(dt), a, offset, (int) total - offset - t.dim(a));
            offset += t.dim(a);
            acc = acc == null ? p : acc.add(p);
        }
        return acc;
    }

    static Tensor stack(int axis, Tensor... tensors) {
        if (tensors.length == 0) throw new IllegalArgumentException("stack: needs at least one tensor");
        Tensor[] u = new Tensor[tensors.length];
        for (int i = 0; i < tensors.length; i++) {
            if (!tensors[i].shape().equals(tensors[0].shape())) {
                throw new IllegalArgumentException("stack: shapes " + tensors[0].shape() + " and " + tensors[i].shape() + " differ");
            }
        }
        // the new axis may sit anywhere from 0 to the rank: checked here so that a bad one names stack, not unsqueeze
        int rank = tensors[0].ndim();
        if (axis < -rank - 1 || axis > rank) {
            throw new IllegalArgumentException("stack: axis " + axis + " out of range for stacking shape " + tensors[0].shape()
                    + " (expected " + (-rank - 1) + " to " + rank + ")");
        }
        for (int i = 0; i < tensors.length; i++) {
            u[i] = tensors[i].unsqueeze(axis);
        }
        return Tensor.cat(axis, u);
    }

    static List<Tensor> split(Tensor t, int size, int axis) {
        if (size <= 0) throw new IllegalArgumentException("split: size must be > 0, got " + size);
        int a = t.axis(axis, "split");
        List<Tensor> out = new ArrayList<>();
        for (int s = 0; s < t.dim(a) || (s == 0 && t.dim(a) == 0); s += size) {
            out.add(t.shrinkAxis(a, s, Math.min(t.dim(a), s + size)));
            if (t.dim(a) == 0) break;
        }
        return out;
    }

    static List<Tensor> split(Tensor t, int[] sizes, int axis) {
        int a = t.axis(axis, "split");
        int total = Arrays.stream(sizes).sum();
        if (total != t.dim(a) || Arrays.stream(sizes).anyMatch(s -> s < 0)) {
            throw new IllegalArgumentException("split: sizes " + Arrays.toString(sizes) + " do not add up to axis " + axis + " of " + t.shape());
        }
        List<Tensor> out = new ArrayList<>();
        int s = 0;
        for (int size : sizes) {
            out.add(t.shrinkAxis(a, s, s + size));
            s += size;
        }
        return out;
    }

    static List<Tensor> chunk(Tensor t, int chunks, int axis) {
        if (chunks <= 0) throw new IllegalArgumentException("chunk: chunks must be > 0, got " + chunks);
        int n = t.dim(axis);
        return t.split(Math.max(1, (n + chunks - 1) / chunks), axis);
    }

    static Tensor repeat(Tensor t, int... repeats) {
        if (repeats.length < t.ndim()) {
            throw new IllegalArgumentException("repeat: " + repeats.length + " repeats for shape " + t.shape() + " of rank " + t.ndim());
        }
        int off = repeats.length - t.ndim();
        int[] base = new int[repeats.length];
        for (int i = 0; i < repeats.length; i++) {
            if (repeats[i] < 0) throw new IllegalArgumentException("repeat: negative count " + repeats[i]);
            base[i] = i < off ? 1 : t.dim(i - off);
        }
        // (..., d, ...) -> (..., 1, d, ...) -> (..., r, d, ...) -> (..., r*d, ...)
        int[] inter = new int[2 * repeats.length], expanded = new int[2 * repeats.length], out = new int[repeats.length];
        for (int i = 0; i < repeats.length; i++) {
            inter[2 * i] = 1;
            inter[2 * i + 1] = base[i];
            expanded[2 * i] = repeats[i];
            expanded[2 * i + 1] = base[i];
            out[i] = Shape.dimension("repeat of " + t.shape() + " by " + Arrays.toString(repeats), i, (long) repeats[i] * base[i]);
        }
        return t.reshape(inter).expand(expanded).reshape(out);
    }

    static Tensor tile(Tensor t, int... reps) {
        for (int r : reps) if (r < 0) throw new IllegalArgumentException("tile: repetitions " + Arrays.toString(reps) + " of " + t.shape() + " hold a negative count " + r);
        if (reps.length >= t.ndim()) return t.repeat(reps);
        int[] r = new int[t.ndim()];
        Arrays.fill(r, 1);
        System.arraycopy(reps, 0, r, t.ndim() - reps.length, reps.length);
        return t.repeat(r);
    }

    static Tensor triu(Tensor t, int k) {
        return triangle(t, k, true);
    }

    static Tensor tril(Tensor t, int k) {
        return triangle(t, k, false);
    }

    private static Tensor triangle(Tensor t, int k, boolean upper) {
        if (t.ndim() < 2) throw new IllegalArgumentException((upper ? "triu" : "tril") + ": needs at least 2 axes, shape is " + t.shape());
        int r = t.dim(-2), c = t.dim(-1);
        Tensor rows = Tensor.arange(r).reshape(r, 1), cols = Tensor.arange(c).reshape(1, c);
        Tensor keep = upper ? cols.sub(rows).ge(k) : cols.sub(rows).le(k);
        return Tensor.where(keep, t, t.zerosLike());
    }
}
