package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * ONNX {@code NonMaxSuppression} (opset 10 and 11), a {@link DataDependentOps data-dependent} operator: the number of
 * selected boxes decides the output shape. Where the boxes, scores and limits are known while the graph is built
 * (constants, or the realised graph inputs they come from, as NonZero reads its input) the selection becomes an int64
 * constant {@code [num_selected, 3]} of (batch, class, box) rows, batch by batch, class by class, best score first; in a
 * prepared plan the same {@link #select selection} is a sized host step ({@link SizedSteps}) run with the plan, its rows
 * laid out at the most it can select and its count the output's extent.
 *
 * <p>Per batch and class: the boxes whose score exceeds {@code score_threshold} (all when it is absent), by score
 * descending (the lower box index first among equal scores), are kept greedily while fewer than
 * {@code max_output_boxes_per_class} are kept, unless their intersection over union with a kept box exceeds
 * {@code iou_threshold}. A box of zero area suppresses nothing and is suppressed by nothing (its IoU is 0), as
 * onnxruntime does. Boxes are corners {@code [y1, x1, y2, x2]} of either diagonal ({@code center_point_box = 0}) or
 * {@code [x_center, y_center, width, height]} ({@code center_point_box = 1}). Absent or empty optional inputs take
 * ONNX's defaults (no boxes, IoU threshold 0, no score threshold); a negative {@code max_output_boxes_per_class}, an
 * {@code iou_threshold} outside [0, 1] (onnxruntime refuses it too) or a NaN {@code score_threshold} is an
 * {@link OnnxFormatException} naming the node and the value, where onnxruntime would read a negative maximum as 0.
 */
final class NonMaxSuppression {
    private NonMaxSuppression() {}

    /** A box as its sorted corners. */
    record Box(double yMin, double xMin, double yMax, double xMax) {
        double area() { return (yMax - yMin) * (xMax - xMin); }

        /** Box {@code b} of a {@code [..., 4]} value array, in the given format. */
        static Box of(double[] v, int b, boolean centerPoint) {
            double p = v[4 * b], q = v[4 * b + 1], r = v[4 * b + 2], s = v[4 * b + 3];
            if (centerPoint) return new Box(q - s / 2, p - r / 2, q + s / 2, p + r / 2); // x_center, y_center, width, height
            return new Box(Math.min(p, r), Math.min(q, s), Math.max(p, r), Math.max(q, s));
        }
    }

    /** Intersection over union; 0 when either box has no area. */
    static double iou(Box a, Box b) {
        double areaA = a.area(), areaB = b.area();
        if (!(areaA > 0) || !(areaB > 0)) return 0;
        double h = Math.min(a.yMax(), b.yMax()) - Math.max(a.yMin(), b.yMin()), w = Math.min(a.xMax(), b.xMax()) - Math.max(a.xMin(), b.xMin());
        if (h <= 0 || w <= 0) return 0;
        double inter = h * w;
        return inter / (areaA + areaB - inter);
    }

    /** One selection: {@code (batch, class, box)}. */
    record Selected(long batch, long cls, long box) {}

    static List<Tensor> apply(OpContext c) {
        Tensor boxes = c.ranked(0, 3, 3), scores = c.ranked(1, 3, 3);
        if (!boxes.dtype().isFloat() || !scores.dtype().isFloat()) {
            throw c.bad("boxes and scores must be float tensors, got " + boxes.dtype() + " and " + scores.dtype());
        }
        int batches = boxes.dim(0), n = boxes.dim(1);
        if (boxes.dim(2) != 4) throw c.bad("boxes must have shape [batches, boxes, 4], got " + boxes.shape());
        if (scores.dim(0) != batches || scores.dim(2) != n) {
            throw c.bad("scores must have shape [" + batches + ", classes, " + n + "] to match boxes " + boxes.shape() + ", got " + scores.shape());
        }
        long centerPoint = c.a.i("center_point_box", 0);
        if (centerPoint != 0 && centerPoint != 1) throw c.bad("center_point_box must be 0 or 1, got " + centerPoint);
        int classes = scores.dim(1);
        if (SizedSteps.knownNow(c, 0, 1, 2, 3, 4)) {
            // an optional input may be absent, or present and empty: both mean its default
            Limits limits = Limits.of(given(c, 2) ? c.scalarLong(2) : 0, given(c, 3) ? c.scalar(3) : 0, given(c, 4) ? c.scalar(4) : null, c::bad);
            List<Selected> out = select(c.doubles(0), c.doubles(1), batches, classes, n, centerPoint == 1, limits);
            long[] v = rows(out);
            return OnnxOps.one(c.constant(DType.I64, v, out.size(), 3));
        }
        return OnnxOps.one(planned(c, boxes, scores, batches, classes, n, centerPoint == 1));
    }

    /**
     * The selection made when the plan runs: a sized host step over the boxes, the scores and whichever limits are not
     * constants, laid out for every box of every batch and class ({@code batches * classes * min(max, boxes)} rows when
     * the maximum is a constant), its count the selection's size.
     */
    private static Tensor planned(OpContext c, Tensor boxes, Tensor scores, int batches, int classes, int n, boolean centerPoint) {
        List<Tensor> inputs = new ArrayList<>(List.of(boxes, scores));
        // each limit (max, iou, score): read when the plan runs from the step input at its index, or known now (null: absent or
        // empty, its default)
        int maxAt = runTimeInput(c, 2, inputs), iouAt = runTimeInput(c, 3, inputs), scoreAt = runTimeInput(c, 4, inputs);
        Long maxNow = maxAt < 0 && given(c, 2) ? c.scalarLong(2) : null;
        Double iouNow = iouAt < 0 && given(c, 3) ? c.scalar(3) : null, scoreNow = scoreAt < 0 && given(c, 4) ? c.scalar(4) : null;
        String name = SizedSteps.name(c);
        // the limits known now are checked now, as the build-time path checks them (the others, 0 and absent here, when it runs)
        Limits.of(maxNow != null ? maxNow : 0, iouNow != null ? iouNow : 0, scoreNow, c::bad);
        long perClass = maxNow != null ? Math.min(maxNow, n) : maxAt < 0 ? 0 : n;
        int capacity = Math.toIntExact(Math.multiplyExact(Math.multiplyExact((long) batches, classes), perClass));
        if (capacity == 0) return c.constant(DType.I64, new long[0], 0, 3); // nothing can be selected
        DType boxType = boxes.dtype(), scoreType = scores.dtype();
        DType[] types = inputs.stream().map(Tensor::dtype).toArray(DType[]::new);
        return SizedSteps.step(c, DType.I64, new int[] {capacity, 3}, 0, (in, dims, out) -> {
            // the boxes and scores at their sizes in this run (a symbolic number of boxes at its value)
            int b = dims.get(0)[0], boxesNow = dims.get(0)[1], classesNow = dims.get(1)[1];
            long max = maxAt >= 0 ? SizedSteps.longValue(in.get(maxAt), types[maxAt]) : maxNow != null ? maxNow : 0;
            double iou = iouAt >= 0 ? SizedSteps.doubles(in.get(iouAt), types[iouAt], 1)[0] : iouNow != null ? iouNow : 0;
            Double score = scoreAt >= 0 ? (Double) SizedSteps.doubles(in.get(scoreAt), types[scoreAt], 1)[0] : scoreNow;
            Limits limits = Limits.of(max, iou, score, problem -> new IllegalArgumentException(name + ": " + problem));
            if (dims.get(1)[0] != b || dims.get(1)[2] != boxesNow) {
                throw new IllegalArgumentException(name + ": scores " + java.util.Arrays.toString(dims.get(1)) + " do not match boxes "
                        + java.util.Arrays.toString(dims.get(0)) + " in this run");
            }
            List<Selected> sel = select(SizedSteps.doubles(in.get(0), boxType, b * boxesNow * 4), SizedSteps.doubles(in.get(1), scoreType, b * classesNow * boxesNow),
                    b, classesNow, boxesNow, centerPoint, limits);
            SizedSteps.writeLongs(out, rows(sel), 3 * sel.size());
            return sel.size();
        }, inputs.toArray(Tensor[]::new));
    }

    /** The selections as {@code [count, 3]} int64 rows. */
    private static long[] rows(List<Selected> out) {
        long[] v = new long[3 * out.size()];
        for (int k = 0; k < out.size(); k++) {
            v[3 * k] = out.get(k).batch();
            v[3 * k + 1] = out.get(k).cls();
            v[3 * k + 2] = out.get(k).box();
        }
        return v;
    }

    /**
     * The limits of one selection, checked: read while the graph is built (an error is the model's, {@code bad} an
     * {@link OnnxFormatException}) or when the plan runs (an error names the node).
     */
    record Limits(long maxPerClass, double iouThreshold, Double scoreThreshold) {
        static Limits of(long maxPerClass, double iouThreshold, Double scoreThreshold, java.util.function.Function<String, RuntimeException> bad) {
            if (maxPerClass < 0) throw bad.apply("max_output_boxes_per_class must be at least 0, got " + maxPerClass);
            if (!(iouThreshold >= 0 && iouThreshold <= 1)) throw bad.apply("iou_threshold must lie in [0, 1], got " + iouThreshold);
            if (scoreThreshold != null && Double.isNaN(scoreThreshold)) throw bad.apply("score_threshold is NaN");
            return new Limits(maxPerClass, iouThreshold, scoreThreshold);
        }
    }

    private static boolean given(OpContext c, int i) { return c.has(i) && c.in(i).numel() > 0; }

    /**
     * Where limit input {@code i} is given and not a constant, adds it to the step's {@code inputs} and returns its index
     * there (it is read when the plan runs); else -1.
     */
    private static int runTimeInput(OpContext c, int i, List<Tensor> inputs) {
        if (!given(c, i) || c.isConstant(i)) return -1;
        if (c.in(i).numel() != 1) throw c.bad("input " + i + " must hold one value, it has shape " + c.in(i).shape());
        inputs.add(c.in(i));
        return inputs.size() - 1;
    }

    /** The selections for boxes {@code [batches, n, 4]} and scores {@code [batches, classes, n]} (C order values). */
    static List<Selected> select(double[] boxes, double[] scores, int batches, int classes, int n, boolean centerPoint, Limits limits) {
        long maxPerClass = limits.maxPerClass();
        double iouThreshold = limits.iouThreshold();
        Double scoreThreshold = limits.scoreThreshold();
        List<Selected> out = new ArrayList<>();
        if (maxPerClass == 0) return out;
        for (int b = 0; b < batches; b++) {
            Box[] bs = new Box[n];
            for (int i = 0; i < n; i++) bs[i] = Box.of(boxes, b * n + i, centerPoint);
            for (int cl = 0; cl < classes; cl++) {
                int base = (b * classes + cl) * n;
                List<Integer> candidates = new ArrayList<>();
                for (int i = 0; i < n; i++) if (scoreThreshold == null || scores[base + i] > scoreThreshold) candidates.add(i);
                // by score, best first; a stable sort keeps the lower index first among equal scores
                candidates.sort(Comparator.comparingDouble((Integer i) -> scores[base + i]).reversed());
                List<Integer> kept = new ArrayList<>();
                for (int i : candidates) {
                    if (kept.size() >= maxPerClass) break;
                    boolean suppressed = false;
                    for (int k : kept) {
                        if (iou(bs[i], bs[k]) > iouThreshold) {
                            suppressed = true;
                            break;
                        }
                    }
                    if (!suppressed) {
                        kept.add(i);
                        out.add(new Selected(b, cl, i));
                    }
                }
            }
        }
        return out;
    }
}
