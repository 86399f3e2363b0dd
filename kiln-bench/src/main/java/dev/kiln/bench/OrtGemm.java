package dev.kiln.bench;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;

import java.nio.FloatBuffer;
import java.util.Map;

/**
 * ONNX Runtime's side of {@link GemmPeerBench}: a one-node {@code MatMul} model with both operands as
 * graph inputs (not initialisers, so that ORT cannot pre-pack B and get a head start Kiln's plan does not
 * have), CPU execution provider, all graph optimisations, a fixed number of intra-op threads. Only
 * {@code session.run} is timed; the input tensors are created once.
 */
final class OrtGemm {
    static final String PEER = "ONNX Runtime";

    private OrtGemm() {}

    /** Times the product of the row-major n x n matrices {@code a} and {@code b}; a failure gives {@link GemmRun.Unavailable}. */
    static GemmRun run(float[] a, float[] b, int n, int threads, GemmRun.Timing timing) {
        try {
            OrtEnvironment env = OrtEnvironment.getEnvironment();
            try (OrtSession.SessionOptions opts = new OrtSession.SessionOptions()) {
                opts.setIntraOpNumThreads(threads);
                opts.setInterOpNumThreads(1);
                opts.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
                long[] shape = {n, n};
                try (OrtSession session = env.createSession(model(n).toByteArray(), opts);
                     OnnxTensor ta = OnnxTensor.createTensor(env, FloatBuffer.wrap(a), shape);
                     OnnxTensor tb = OnnxTensor.createTensor(env, FloatBuffer.wrap(b), shape)) {
                    Map<String, OnnxTensor> feed = Map.of("A", ta, "B", tb);
                    double[] ms = GemmRun.time(() -> {
                        try (OrtSession.Result r = session.run(feed)) {
                            if (r.size() != 1) throw new IllegalStateException("MatMul gave " + r.size() + " outputs");
                        } catch (OrtException e) {
                            throw new IllegalStateException(e);
                        }
                    }, timing);
                    float[] product = new float[n * n];
                    try (OrtSession.Result r = session.run(feed)) {
                        ((OnnxTensor) r.get(0)).getFloatBuffer().get(product);
                    }
                    return new GemmRun.Timed(PEER, ms, product, ms.length + " runs, intra-op threads " + threads);
                }
            }
        } catch (OrtException | RuntimeException | UnsatisfiedLinkError e) {
            return new GemmRun.Unavailable(PEER, GemmRun.reason(e));
        }
    }

    /** Y[n, n] = MatMul(A[n, n], B[n, n]), f32, opset 13. */
    static ModelProto model(int n) {
        GraphProto g = GraphProto.newBuilder().setName("gemm" + n)
                .addNode(NodeProto.newBuilder().setOpType("MatMul").setName("matmul").addInput("A").addInput("B").addOutput("Y"))
                .addInput(square("A", n)).addInput(square("B", n)).addOutput(square("Y", n)).build();
        return ModelProto.newBuilder().setIrVersion(8).setProducerName("kiln-bench")
                .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(13)).setGraph(g).build();
    }

    private static ValueInfoProto square(String name, int n) {
        TensorShapeProto.Dimension d = TensorShapeProto.Dimension.newBuilder().setDimValue(n).build();
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder()
                .setElemType(TensorProto.DataType.FLOAT_VALUE).setShape(TensorShapeProto.newBuilder().addDim(d).addDim(d)))).build();
    }
}
