package dev.kiln;

import dev.kiln.types.DType;
import java.util.Arrays;

/**
 * ONNX Resize, GridSample and RoiAlign. Resize's source positions are compile-time constants, so each resized
 * axis becomes a host-built (out, in) weight matrix applied by a masked sum (exact selection for
 * nearest, which keeps any dtype). GridSample's positions come from the grid tensor, so its taps are
 * computed in the graph and gathered by comparing flattened positions.
 */
final class Resampling {
    private Resampling() {}

    // =====================================================================================================
    // Resize

    // =====================================================================================================
    // GridSample

    /**
     * ONNX GridSample (opset 16, 4-D; the opset 20 mode names {@code linear} and {@code cubic} are
     * accepted too) with PyTorch's {@code grid_sample} semantics: x (N, C, H, W) sampled at grid
     * (N, Ho, Wo, 2) of normalised (x, y) positions.
     */
    static Tensor gridSample(Tensor x, Tensor grid, String mode, String paddingMode, boolean alignCorners) {
        String op = "gridSample";
        if (x.ndim() != 4) throw new IllegalArgumentException(op + ": input must be 4-D (N, C, H, W), got " + x.shape());
        if (grid.ndim() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2) {
            throw new IllegalArgumentException(op + ": grid " + grid.shape() + " must be (N, Ho, Wo, 2) with N = " + x.dim(0) + " of input " + x.shape());
        }
        String m = mode == null ? "" : switch (mode) {
            case "linear" -> "bilinear";
            case "cubic" -> "bicubic";
            default -> mode;
        };
        if (!(m.equals("bilinear") || m.equals("nearest") || m.equals("bicubic"))) {
            throw new IllegalArgumentException(op + ": unknown mode " + quote(mode) + "; valid are 'bilinear' ('linear'), 'nearest', 'bicubic' ('cubic')");
        }
        if (paddingMode == null || !(paddingMode.equals("zeros") || paddingMode.equals("border") || paddingMode.equals("reflection"))) {
            throw new IllegalArgumentException(op + ": unknown padding mode " + quote(paddingMode) + "; valid are 'zeros', 'border', 'reflection'");
        }
        if (!grid.dtype().isFloat()) throw new IllegalArgumentException(op + ": grid must be a float tensor, got " + grid.dtype());
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), ho = grid.dim(1), wo = grid.dim(2), p = ho * wo;
        DType dt = x.dtype(), ct = Normalization.computeType(dt.isFloat() ? dt : DType.F32);
        Tensor g = grid.to(x.device()).cast(ct).reshape(n, p, 2);
        Tensor gx = unnormalize(g.shrinkAxis(2, 0, 1).reshape(n, p), w, alignCorners);
        Tensor gy = unnormalize(g.shrinkAxis(2, 1, 2).reshape(n, p), h, alignCorners);
        Sampler s = new Sampler(x.reshape(n, c, h * w), h, w, paddingMode, alignCorners);
        Tensor out;
        if (m.equals("nearest")) {
            Tensor ix = s.pad(gx, w).round(), iy = s.pad(gy, h).round();
            out = s.tap(iy, ix, false);
        } else if (m.equals("bilinear")) {
            Tensor ix = s.pad(gx, w), iy = s.pad(gy, h);
            Tensor x0 = ix.floor(), y0 = iy.floor(), x1 = x0.add(1.0), y1 = y0.add(1.0);
            Tensor wx1 = ix.sub(x0), wx0 = x1.sub(ix), wy1 = iy.sub(y0), wy0 = y1.sub(iy);
            out = s.tap(y0, x0, true).mul(wy0.mul(wx0).unsqueeze(1))
                    .add(s.tap(y0, x1, true).mul(wy0.mul(wx1).unsqueeze(1)))
                    .add(s.tap(y1, x0, true).mul(wy1.mul(wx0).unsqueeze(1)))
                    .add(s.tap(y1, x1, true).mul(wy1.mul(wx1).unsqueeze(1)));
        } else {
            Tensor x0 = gx.floor(), y0 = gy.floor();
            Tensor[] cx = cubic(gx.sub(x0)), cy = cubic(gy.sub(y0));
            out = null;
            for (int i = 0; i < 4; i++) {
                Tensor yi = s.pad(y0.add(i - 1.0), h);
                for (int j = 0; j < 4; j++) {
                    Tensor v = s.tap(yi, s.pad(x0.add(j - 1.0), w), true).mul(cy[i].mul(cx[j]).unsqueeze(1));
                    out = out == null ? v : out.add(v);
                }
            }
        }
        return out.reshape(n, c, ho, wo).cast(dt);
    }

    /** A normalised coordinate in [-1, 1] as a pixel position on an axis of {@code size}. */
    private static Tensor unnormalize(Tensor g, int size, boolean alignCorners) {
        return alignCorners ? g.add(1.0).mul((size - 1) / 2.0) : g.add(1.0).mul(size).sub(1.0).div(2.0);
    }

    /** PyTorch's bicubic convolution weights (A = -0.75) of the four taps around a fraction t. */
    private static Tensor[] cubic(Tensor t) {
        double a = -0.75;
        Tensor u = t.add(1.0), v = t.rsub(1.0), z = t.rsub(2.0);
        return new Tensor[] {
                u.mul(a).sub(5 * a).mul(u).add(8 * a).mul(u).sub(4 * a),
                t.mul(a + 2).sub(a + 3).mul(t).mul(t).add(1.0),
                v.mul(a + 2).sub(a + 3).mul(v).mul(v).add(1.0),
                z.mul(a).sub(5 * a).mul(z).add(8 * a).mul(z).sub(4 * a)};
    }

    /** Reads taps of the flattened input (N, C, H*W) at pixel positions, applying the padding mode. */
    private record Sampler(Tensor flat, int h, int w, String padding, boolean alignCorners) {
        /** A coordinate moved inside the axis by the border or reflection padding; unchanged for zeros. */
        Tensor pad(Tensor coord, int size) {
            return switch (padding) {
                case "border" -> coord.clamp(0.0, (double) (size - 1));
                case "reflection" -> {
                    Tensor r = alignCorners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
                    yield r.clamp(0.0, (double) (size - 1));
                }
                default -> coord;
            };
        }

        /** PyTorch's reflect_coordinates: folds a coordinate into [twiceLow/2, twiceHigh/2]. */
        private static Tensor reflect(Tensor coord, int twiceLow, int twiceHigh) {
            if (twiceLow == twiceHigh) return coord.zerosLike();
            double min = twiceLow / 2.0, span = (twiceHigh - twiceLow) / 2.0;
            Tensor in = coord.sub(min).abs();
            Tensor extra = in.fmod(span), flips = in.div(span).floor();
            return Tensor.where(flips.mod(2.0).eq(0.0), extra.add(min), extra.rsub(span).add(min));
        }

        /**
         * The input at integral positions (iy, ix), each (N, P), as (N, C, P); a position outside the
         * image reads 0. {@code truncate}: positions are truncated to integers first (they are already
         * integral otherwise).
         */
        Tensor tap(Tensor iy, Tensor ix, boolean truncate) {
            Tensor yi = (truncate ? iy.floor() : iy).cast(DType.I64), xi = (truncate ? ix.floor() : ix).cast(DType.I64);
            Tensor inside = yi.ge(0L).logicalAnd(yi.lt((long) h)).logicalAnd(xi.ge(0L)).logicalAnd(xi.lt((long) w));
            Tensor pos = Tensor.where(inside, yi.mul((long) w).add(xi), -1L); // (N, P)
            Tensor hit = pos.unsqueeze(1).unsqueeze(-1).eq(ElementIndexing.positions(h * w, 4, 3, flat.device())); // (N, 1, P, HW)
            DType dt = flat.dtype();
            Tensor v = Tensor.where(hit, flat.unsqueeze(2), Tensor.scalar(dt.isFloat() ? -0.0 : 0, dt)).sum(new int[] {-1}, false).cast(dt);
            return v.dtype().isFloat() ? v : v.cast(DType.F32);
        }
    }

    // =====================================================================================================
    // RoiAlign

    /**
     * ONNX RoiAlign (opset 16) with ONNX Runtime's sampling: per region of interest (x1, y1, x2, y2) of
     * x's image {@code batchIndices[r]}, each of the (outH, outW) bins averages (or, mode max, takes the
     * largest weighted corner of) {@code samplingRatio^2} bilinear samples. The bilinear weights are
     * separable, so the samples are {@code Wy @ image @ Wx^T} with per-region weight matrices built in the
     * graph from the region coordinates.
     */
    static Tensor roiAlign(Tensor x, Tensor rois, Tensor batchIndices, String mode, int outH, int outW, int samplingRatio, double spatialScale,
                           String transform) {
        String op = "roiAlign";
        if (x.ndim() != 4) throw new IllegalArgumentException(op + ": input must be 4-D (N, C, H, W), got " + x.shape());
        if (rois.ndim() != 2 || rois.dim(1) != 4) throw new IllegalArgumentException(op + ": rois must be (R, 4) of (x1, y1, x2, y2), got " + rois.shape());
        if (!rois.dtype().isFloat()) throw new IllegalArgumentException(op + ": rois must be a float tensor, got " + rois.dtype());
        if (!batchIndices.dtype().isInt() || batchIndices.ndim() != 1 || batchIndices.dim(0) != rois.dim(0)) {
            throw new IllegalArgumentException(op + ": batchIndices " + batchIndices.dtype() + batchIndices.shape() + " must be 1-D integers, one per roi of "
                    + rois.shape());
        }
        if (!"avg".equals(mode) && !"max".equals(mode)) throw new IllegalArgumentException(op + ": unknown mode " + quote(mode) + "; valid are 'avg', 'max'");
        if (!"half_pixel".equals(transform) && !"output_half_pixel".equals(transform)) {
            throw new IllegalArgumentException(op + ": unknown coordinate transformation mode " + quote(transform) + "; valid are 'half_pixel', 'output_half_pixel'");
        }
        if (outH <= 0 || outW <= 0) throw new IllegalArgumentException(op + ": output size " + outH + "x" + outW + " must be positive");
        if (samplingRatio < 0) throw new IllegalArgumentException(op + ": samplingRatio must be >= 0, got " + samplingRatio);
        if (samplingRatio == 0) {
            throw new UnsupportedOperationException(op + ": samplingRatio 0 (adaptive) makes the number of samples depend on the roi values; "
                    + "Kiln needs static shapes, give a positive samplingRatio");
        }
        int r = rois.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), g = samplingRatio;
        DType dt = x.dtype(), ct = Normalization.computeType(dt.isFloat() ? dt : DType.F32);
        Tensor box = rois.to(x.device()).cast(ct).mul(spatialScale).sub(transform.equals("half_pixel") ? 0.5 : 0.0);
        Tensor x1 = box.shrinkAxis(1, 0, 1), y1 = box.shrinkAxis(1, 1, 2), x2 = box.shrinkAxis(1, 2, 3), y2 = box.shrinkAxis(1, 3, 4); // (R, 1)
        Tensor rw = x2.sub(x1), rh = y2.sub(y1);
        if (transform.equals("output_half_pixel")) {
            rw = rw.maximum(1.0);
            rh = rh.maximum(1.0);
        }
        Tensor[] wy = axisWeights(y1, rh.div((double) outH), outH, g, h, ct), wx = axisWeights(x1, rw.div((double) outW), outW, g, w, ct);
        Tensor batch = Indexing.checked(batchIndices.to(x.device()).cast(DType.I64), op, x, 0, false);
        Tensor img = Indexing.take(x.cast(ct), 0, batch.reshape(r, 1, 1, 1)); // (R, C, H, W)
        Tensor samples;
        if (mode.equals("avg")) {
            samples = wy[0].add(wy[1]).unsqueeze(1).matmul(img).matmul(wx[0].add(wx[1]).unsqueeze(1).mT());
            return samples.reshape(r, c, outH, g, outW, g).mean(new int[] {3, 5}, false).cast(dt);
        }
        samples = null;
        for (Tensor a : wy) {
            for (Tensor b : wx) {
                Tensor term = a.unsqueeze(1).matmul(img).matmul(b.unsqueeze(1).mT());
                samples = samples == null ? term : samples.maximum(term);
            }
        }
        return samples.reshape(r, c, outH, g, outW, g).max(new int[] {3, 5}, false).cast(dt);
    }

    /**
     * The two weighted one-hot matrices (R, bins*g, size) of the low and high bilinear taps of the sample
     * coordinates {@code start + bin * (p + (i + 0.5) / g)} on an axis of {@code size}; zero rows for
     * samples outside {@code [-1, size]}.
     */
    private static Tensor[] axisWeights(Tensor start, Tensor bin, int bins, int g, int size, DType ct) {
        double[] offsets = new double[bins * g];
        for (int p = 0; p < bins; p++) for (int i = 0; i < g; i++) offsets[p * g + i] = p + (i + 0.5) / g;
        Tensor coord = start.add(bin.mul(Tensor.of(ct, offsets, bins * g).to(start.device()))); // (R, bins*g)
        Tensor valid = coord.ge(-1.0).logicalAnd(coord.le((double) size));
        Tensor y = coord.maximum(0.0);
        Tensor low = y.floor().minimum((double) (size - 1));
        Tensor atEdge = low.ge((double) (size - 1));
        Tensor high = Tensor.where(atEdge, low, low.add(1.0));
        Tensor frac = Tensor.where(atEdge, y.zerosLike(), y.sub(low));
        Tensor positions = ElementIndexing.positions(size, 3, 2, start.device());
        Tensor lowW = Tensor.where(valid, frac.rsub(1.0), 0.0).unsqueeze(-1), highW = Tensor.where(valid, frac, 0.0).unsqueeze(-1);
        Tensor zero = Tensor.scalar(0.0, ct);
        return new Tensor[] {
                Tensor.where(low.cast(DType.I64).unsqueeze(-1).eq(positions), lowW, zero),
                Tensor.where(high.cast(DType.I64).unsqueeze(-1).eq(positions), highW, zero)};
    }

    private static String quote(String s) { return s == null ? "null" : "'" + s + "'"; }
}
