/**
 * Kiln ONNX: loads ONNX models ({@link dev.kiln.onnx.OnnxModel}) into lazy {@link dev.kiln.Tensor} graphs and runs
 * the ONNX backend conformance cases ({@link dev.kiln.onnx.ConformanceRunner}).
 */
module dev.kiln.onnx {
    requires transitive dev.kiln.core;
    requires com.google.protobuf;

    exports dev.kiln.onnx;
}
