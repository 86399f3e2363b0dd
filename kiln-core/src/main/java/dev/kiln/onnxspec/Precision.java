package dev.kiln.onnxspec;

import dev.kiln.types.DType;

/** The dtype ONNX's float composites compute in. */
final class Precision {
    private Precision() {}

    /** Half floats widen to f32, as in every Kiln float composite (dev.kiln's Normalization.computeType). */
    static DType computeType(DType dt) { return dt == DType.F16 || dt == DType.BF16 ? DType.F32 : dt; }
}
