package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every conformance model, broken in the ways issue 13's fuzzing found (a node's last input dropped, an input left empty,
 * an attribute removed, an INTS or FLOATS attribute one value short, a graph input declared with rank 0, 1 or 2), is loaded
 * and built on INTERP: each either builds or fails with {@link OnnxFormatException} or {@link UnsupportedOnnxOpException},
 * never with a raw exception. The outputs are not computed (that takes a minute; done once by hand, with no raw exception).
 */
class MutatedModelsTest {
    @Test
    void brokenConformanceModelsFailTyped() throws IOException {
        Path root = ConformanceTest.data();
        Assumptions.assumeTrue(Files.isDirectory(root), () -> "ONNX conformance data not found at " + root);
        List<Path> models;
        try (Stream<Path> s = Files.walk(root)) {
            models = s.filter(p -> p.getFileName().toString().equals("model.onnx")).sorted().toList();
        }
        List<String> raw = new ArrayList<>();
        int tried = 0;
        for (Path p : models) {
            ModelProto m = ModelProto.parseFrom(Files.readAllBytes(p));
            String name = p.getParent().getFileName().toString();
            for (Map.Entry<String, ModelProto> e : mutants(m).entrySet()) {
                tried++;
                String problem = build(e.getValue());
                if (problem != null) raw.add(name + " (" + e.getKey() + "): " + problem);
            }
        }
        System.out.println("MutatedModelsTest: " + tried + " broken models from " + models.size() + " conformance models");
        assertThat(tried).isGreaterThan(1000);
        assertThat(raw).as("broken models that failed with a raw exception").isEmpty();
    }

    /** Null when the model builds or fails typed; otherwise the raw exception. */
    private static String build(ModelProto m) {
        try {
            OnnxModel model = OnnxModel.fromProto(m, "mutant.onnx");
            Map<String, OnnxValue> in = new HashMap<>();
            for (ValueInfo v : model.inputs()) {
                int[] d = v.dims() == null ? new int[0] : v.dims().stream().mapToInt(x -> x.isFixed() ? (int) x.size() : 1).toArray();
                if (v.kind() == ValueInfo.Kind.STRING) {
                    // a string input: empty strings, as a tensor input is zeros
                    var shape = dev.kiln.types.Shape.of(d);
                    in.put(v.name(), new OnnxValue.StringValue(java.util.Collections.nCopies((int) shape.numel(), ""), shape));
                    continue;
                }
                Tensor zeros = Tensor.zeros(v.dtype(), d).to("INTERP");
                OnnxValue.SequenceValue one = new OnnxValue.SequenceValue(List.of(zeros), v.dtype());
                // a sequence or optional input: one element of zeros, as a tensor input is zeros
                in.put(v.name(), switch (v.kind()) {
                    case TENSOR -> new OnnxValue.TensorValue(zeros);
                    case SEQUENCE -> one;
                    case OPTIONAL_TENSOR -> new OnnxValue.OptionalValue(new OnnxValue.TensorValue(zeros));
                    case OPTIONAL_SEQUENCE -> new OnnxValue.OptionalValue(one);
                    case STRING -> throw new AssertionError(v);
                });
            }
            model.runValues(in, dev.kiln.runtime.DeviceRegistry.get("INTERP"));
            return null;
        } catch (OnnxFormatException | UnsupportedOnnxOpException e) {
            return null;
        } catch (RuntimeException | StackOverflowError e) {
            StackTraceElement[] st = e.getStackTrace();
            return e + (st.length > 0 ? " at " + st[0] : "");
        }
    }

    /** The broken variants of {@code m}, by what was broken. */
    private static Map<String, ModelProto> mutants(ModelProto m) {
        GraphProto g = m.getGraph();
        Map<String, ModelProto> out = new java.util.LinkedHashMap<>();
        for (int k = 0; k < g.getInputCount(); k++) {
            for (int r = 0; r <= 2; r++) {
                ValueInfoProto v = g.getInput(k);
                TensorShapeProto.Builder sh = TensorShapeProto.newBuilder();
                for (int q = 0; q < r; q++) sh.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(2));
                ValueInfoProto ranked = v.toBuilder().setType(v.getType().toBuilder().setTensorType(v.getType().getTensorType().toBuilder().setShape(sh))).build();
                out.put("input " + k + " of rank " + r, m.toBuilder().setGraph(g.toBuilder().setInput(k, ranked)).build());
            }
        }
        for (int k = 0; k < g.getNodeCount(); k++) {
            NodeProto n = g.getNode(k);
            Map<String, NodeProto> vs = new java.util.LinkedHashMap<>();
            if (n.getInputCount() > 0) {
                vs.put("last input dropped", n.toBuilder().clearInput().addAllInput(n.getInputList().subList(0, n.getInputCount() - 1)).build());
                for (int j = 0; j < n.getInputCount(); j++) vs.put("input " + j + " empty", n.toBuilder().setInput(j, "").build());
            }
            for (int j = 0; j < n.getAttributeCount(); j++) {
                AttributeProto a = n.getAttribute(j);
                vs.put("attribute " + a.getName() + " removed", n.toBuilder().removeAttribute(j).build());
                if (a.getIntsCount() > 0) {
                    AttributeProto.Builder b = a.toBuilder().clearInts().addAllInts(a.getIntsList().subList(0, a.getIntsCount() - 1));
                    vs.put("attribute " + a.getName() + " one value short", n.toBuilder().setAttribute(j, b).build());
                }
                if (a.getFloatsCount() > 0) {
                    AttributeProto.Builder b = a.toBuilder().clearFloats().addAllFloats(a.getFloatsList().subList(0, a.getFloatsCount() - 1));
                    vs.put("attribute " + a.getName() + " one value short", n.toBuilder().setAttribute(j, b).build());
                }
            }
            int node = k;
            vs.forEach((what, v) -> out.put("node " + node + " " + n.getOpType() + ": " + what, m.toBuilder().setGraph(g.toBuilder().setNode(node, v)).build()));
        }
        return out;
    }
}
