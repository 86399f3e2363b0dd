package dev.kiln;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad arguments to the operators from ONNX's catalogue fail when the op is built, naming the op, the operands and the value. */
class OnnxOpsErrorsTest {
    private final Tensor x = Tensor.zeros(2, 3);
    private final Tensor idx = Tensor.of(new long[] {0, 1, 1, 0, 0, 1}, 2, 3);

    private static void fails(Runnable r, String message) {
        assertThatThrownBy(r::run).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(message);
    }

    @Test
    void gathers() {
        fails(() -> x.gatherElements(1, Tensor.zeros(2, 3)), "gatherElements: indices must have an integer dtype, got f32");
        fails(() -> x.gatherElements(0, Tensor.of(new long[] {0}, 1)), "gatherElements: indices [1] have rank 1, input [2, 3] has rank 2");
        fails(() -> x.gatherElements(0, Tensor.zeros(DType.I64, 1, 4)), "gatherElements: indices [1, 4] are larger than input [2, 3] at axis 1");
        fails(() -> x.gatherElements(2, idx), "gatherElements: axis 2 out of range for shape [2, 3]");
        fails(() -> x.gatherND(Tensor.zeros(DType.I64, 2, 3), 0), "gatherND: indices [2, 3] address 3 axes after 0 batch axes, input [2, 3] has 2");
        fails(() -> x.gatherND(Tensor.zeros(DType.I64, 3, 1), 1), "gatherND: batch axis 0 differs between input [2, 3] and indices [3, 1]");
        fails(() -> x.gatherND(Tensor.zeros(DType.I64, 2, 1), 2), "gatherND: batchDims 2 must be in [0, 2)");
    }

    @Test
    void scatters() {
        fails(() -> x.scatterElements(0, idx, Tensor.zeros(2, 3), "sum"), "scatterElements: unknown reduction 'sum'; valid are 'none', 'add', 'mul', 'max', 'min'");
        fails(() -> x.scatterElements(0, idx, Tensor.zeros(3, 2), "none"), "scatterElements: updates [3, 2] must have the shape of indices [2, 3]");
        fails(() -> x.scatterElements(1, Tensor.zeros(DType.I64, 3, 1), Tensor.zeros(3, 1), "add"),
                "scatterElements: indices [3, 1] are larger than input [2, 3] at axis 0");
        fails(() -> x.scatterND(Tensor.zeros(DType.I64, 2, 1), Tensor.zeros(2, 2), "none"),
                "scatterND: updates [2, 2] must have shape [2, 3] for input [2, 3] and indices [2, 1]");
        fails(() -> x.scatterND(Tensor.zeros(DType.I64, 1, 3), Tensor.zeros(1), "none"), "scatterND: indices [1, 3] address 3 axes, input [2, 3] has 2");
    }

    @Test
    void oneHotHardmaxCumsum() {
        fails(() -> idx.oneHot(0, -1, Tensor.of(0f, 1f)), "oneHot: depth must be > 0, got 0");
        fails(() -> idx.oneHot(3, -1, Tensor.of(0f, 1f, 2f)), "oneHot: values must hold [off, on], got shape [3]");
        fails(() -> idx.oneHot(3, 3, Tensor.of(0f, 1f)), "oneHot: axis 3 out of range for shape [2, 3] (rank 3)");
        fails(() -> x.hardmax(-3), "hardmax: axis -3 out of range for shape [2, 3]");
        fails(() -> Tensor.zeros(0, 2).argmax(0, false, true), "argmax: axis 0 of shape [0, 2] is empty");
        fails(() -> Tensor.ones(DType.BOOL, 3).cumsum(0, true, false), "cumsum: needs a numeric tensor, got bool");
    }

    @Test
    void rearrangements() {
        fails(() -> Tensor.zeros(1, 8, 2).depthToSpace(2, "DCR"), "depthToSpace: input must be 4-D (N, C, H, W), got [1, 8, 2]");
        fails(() -> Tensor.zeros(1, 6, 2, 2).depthToSpace(2, "DCR"), "depthToSpace: channels 6 of input [1, 6, 2, 2] are not divisible by blockSize^2 = 4");
        fails(() -> Tensor.zeros(1, 8, 2, 2).depthToSpace(2, "RDC"), "depthToSpace: unknown mode 'RDC'; valid are 'DCR', 'CRD'");
        fails(() -> Tensor.zeros(1, 1, 3, 4).spaceToDepth(2), "spaceToDepth: spatial size 3x4 of input [1, 1, 3, 4] is not divisible by blockSize 2");
        fails(() -> x.reverseSequence(Tensor.of(new long[] {1, 2, 3}, 3), 0, 1), "reverseSequence: sequenceLens [3] must be 1-D of the batch size 2");
        fails(() -> x.reverseSequence(Tensor.of(new long[] {1, 2}, 2), 1, 1), "reverseSequence: batchAxis 1 and timeAxis 1 name the same axis of [2, 3]");
    }

    @Test
    void normalisationAndLosses() {
        fails(() -> x.lrn(3, 1e-4, 0.75, 1), "lrn: input must be (N, C, spatial...) with at least 3 axes, got [2, 3]");
        fails(() -> x.lpNormalization(0, 3), "lpNormalization: p must be 1 or 2, got 3");
        fails(() -> x.nllLoss(Tensor.zeros(DType.I64, 3), null, "mean", null), "nllLoss: target [3] must have shape [2] for input [2, 3]");
        fails(() -> x.nllLoss(Tensor.zeros(DType.I64, 2), Tensor.ones(4), "mean", null), "nllLoss: weight [4] must be 1-D of the 3 classes of input [2, 3]");
        fails(() -> x.nllLoss(Tensor.zeros(DType.I64, 2), null, "avg", null), "nllLoss: unknown reduction 'avg'; valid are 'none', 'sum', 'mean'");
        fails(() -> x.nllLoss(Tensor.zeros(2), null, "mean", null), "nllLoss: indices must have an integer dtype, got f32");
        fails(() -> Tensor.zeros(3).softmaxCrossEntropyLoss(Tensor.zeros(DType.I64, 3), null, "mean", null),
                "softmaxCrossEntropyLoss: scores must be (N, C, d...), got [3]");
    }

    @Test
    void quantisation() {
        fails(() -> x.quantizeLinear(Tensor.scalar(1.0), Tensor.scalar(0.5), 1), "quantizeLinear: zeroPoint must have an integer dtype, got f32");
        fails(() -> x.quantizeLinear(Tensor.ones(4), null, 1), "quantizeLinear: scale [4] must be a scalar or 1-D of size 3 (axis 1 of input [2, 3])");
        fails(() -> x.dequantizeLinear(Tensor.scalar(1.0), null, 1), "dequantizeLinear: input must have an integer dtype, got f32");
        fails(() -> idx.dequantizeLinear(Tensor.scalar(1.0), Tensor.scalar(0, DType.U8), 1), "dequantizeLinear: zeroPoint u8 must have the input's dtype i64");
        fails(() -> idx.dynamicQuantizeLinear(), "dynamicQuantizeLinear: input must be a float tensor, got i64");
    }

    @Test
    void detUnpoolCreation() {
        fails(() -> x.det(), "det: needs square matrices on the last two axes, got [2, 3]");
        Tensor pooled = Tensor.zeros(1, 1, 2, 2);
        fails(() -> pooled.maxUnpool(Tensor.zeros(DType.I64, 1, 1, 2, 1), new int[] {1, 1, 4, 4}), "maxUnpool: indices [1, 1, 2, 1] must have the input's shape [1, 1, 2, 2]");
        fails(() -> pooled.maxUnpool(Tensor.zeros(DType.I64, 1, 1, 2, 2), new int[] {1, 2, 4, 4}),
                "maxUnpool: outputShape [1, 2, 4, 4] must be (N, C, spatial...) of input [1, 1, 2, 2]");
        fails(() -> Tensor.zeros(2, 2, 2).eyeLike(0, null), "eyeLike: input must be 2-D, got [2, 2, 2]");
        fails(() -> Tensor.range(0, 5, 0, DType.I32), "range: delta must not be 0");
        fails(() -> Tensor.range(0.0, 1.0, Double.NaN, DType.F32), "range: delta must be finite and non-zero, got NaN");
        fails(() -> Tensor.hannWindow(-1, true, DType.F32), "hannWindow: size must be >= 0, got -1");
    }

    @Test
    void resampling() {
        Tensor img = Tensor.zeros(1, 1, 4, 4);
        fails(() -> img.gridSample(Tensor.zeros(1, 2, 2, 3), "bilinear", "zeros", false), "gridSample: grid [1, 2, 2, 3] must be (N, Ho, Wo, 2) with N = 1");
        fails(() -> img.gridSample(Tensor.zeros(1, 2, 2, 2), "area", "zeros", false), "gridSample: unknown mode 'area'");
        fails(() -> img.gridSample(Tensor.zeros(1, 2, 2, 2), "nearest", "wrap", false), "gridSample: unknown padding mode 'wrap'");
        Tensor rois = Tensor.zeros(2, 4);
        fails(() -> img.roiAlign(Tensor.zeros(2, 3), Tensor.zeros(DType.I64, 2), "avg", 2, 2, 2, 1, "half_pixel"),
                "roiAlign: rois must be (R, 4) of (x1, y1, x2, y2), got [2, 3]");
        fails(() -> img.roiAlign(rois, Tensor.zeros(DType.I64, 3), "avg", 2, 2, 2, 1, "half_pixel"),
                "roiAlign: batchIndices i64[3] must be 1-D integers, one per roi of [2, 4]");
        fails(() -> img.roiAlign(rois, Tensor.zeros(DType.I64, 2), "mean", 2, 2, 2, 1, "half_pixel"), "roiAlign: unknown mode 'mean'");
        assertThatThrownBy(() -> img.roiAlign(rois, Tensor.zeros(DType.I64, 2), "avg", 2, 2, 0, 1, "half_pixel"))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("roiAlign: samplingRatio 0 (adaptive)");
    }

    @Test
    void pooling() {
        Tensor img = Tensor.zeros(1, 1, 4, 4);
        fails(() -> img.maxPool(new int[] {2}, null, null, null, false), "maxPool: input [1, 1, 4, 4] must be (N, C, 1 spatial axes) for kernel [2]");
        fails(() -> img.maxPool(new int[] {2, 2}, new int[] {1}, null, null, false), "maxPool: strides [1] must have 2 values");
        fails(() -> img.avgPool(new int[] {2, 2}, null, new int[] {0, -1, 0, 0}, null, false, false), "avgPool: pads");
        fails(() -> img.lpPool(2, new int[] {6, 2}, null, null, null, false), "lpPool: kernel [6, 2] (dilations [1, 1]) does not fit input [1, 1, 4, 4]");
        fails(() -> img.maxPoolWithIndices(new int[] {2, 2}, null, null, null, false, 2), "maxPoolWithIndices: storageOrder must be 0 or 1, got 2");
    }

    @Test
    void recurrentAndSignal() {
        Tensor seq = Tensor.zeros(3, 2, 4);
        fails(() -> Tensor.zeros(2, 8, 3).dft(1, false, false, null), "dft: input [2, 8, 3] must end in a complex axis of size 1 (real) or 2");
        fails(() -> Tensor.zeros(2, 8, 2).dft(1, false, true, null), "dft: onesided output needs a real input and a forward transform");
        fails(() -> Tensor.zeros(2, 8, 1).dft(2, false, false, null), "dft: axis 2 must name a signal axis of [2, 8, 1]");
        fails(() -> Tensor.zeros(1, 16, 1).stft(4, Tensor.ones(8), 6, true), "stft: window [8] does not match frame length 6");
        fails(() -> Tensor.zeros(1, 16, 1).stft(4, null, null, true), "stft: needs a window or a frame length");
    }
}
