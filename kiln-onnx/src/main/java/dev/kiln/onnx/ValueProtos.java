package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import onnx.Onnx.OptionalProto;
import onnx.Onnx.SequenceProto;
import onnx.Onnx.TensorProto;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the test-data files of sequence, optional and string values (SequenceProto, OptionalProto, from ONNX's
 * onnx-data.proto, and TensorProto of strings) as {@link OnnxValue}s, as the model declares the value ({@link ValueInfo#kind}).
 */
final class ValueProtos {
    private ValueProtos() {}

    /**
     * The value stored in {@code file}: a TensorProto for a tensor, a SequenceProto for a sequence, an OptionalProto for
     * an optional; an empty sequence takes {@code declared}'s dtype.
     *
     * @throws OnnxFormatException if the file is not the message the kind needs
     * @throws UnsupportedOnnxOpException if it holds anything but tensors (maps, sparse tensors, nested sequences)
     */
    static OnnxValue read(Path file, ValueInfo declared) {
        String src = file.toString();
        Path dir = file.toAbsolutePath().getParent();
        ExternalData external = dir == null ? ExternalData.unavailable() : ExternalData.collected(dir);
        return switch (declared.kind()) {
            case TENSOR -> new OnnxValue.TensorValue(TensorProtos.read(file));
            case STRING -> Strings.value(ProtoFiles.parse(file, "TensorProto", "too large", TensorProto::parseFrom), src);
            case SEQUENCE -> sequence(ProtoFiles.parse(file, "SequenceProto", "too large", SequenceProto::parseFrom), src, external, declared.dtype());
            case OPTIONAL_TENSOR, OPTIONAL_SEQUENCE -> {
                OptionalProto o = ProtoFiles.parse(file, "OptionalProto", "too large", OptionalProto::parseFrom);
                if (o.hasTensorValue()) yield new OnnxValue.OptionalValue(new OnnxValue.TensorValue(TensorProtos.toTensor(o.getTensorValue(), src, external)));
                if (o.hasSequenceValue()) yield new OnnxValue.OptionalValue(sequence(o.getSequenceValue(), src, external, declared.dtype()));
                if (o.hasSparseTensorValue() || o.hasOptionalValue()) throw new UnsupportedOnnxOpException(src, "an optional of sparse tensors or optionals is not supported");
                yield new OnnxValue.OptionalValue(null);
            }
        };
    }

    private static OnnxValue.SequenceValue sequence(SequenceProto s, String src, ExternalData external, DType declared) {
        if (s.getSparseTensorValuesCount() > 0 || s.getSequenceValuesCount() > 0 || s.getOptionalValuesCount() > 0) {
            throw new UnsupportedOnnxOpException(src, "a sequence of sparse tensors, sequences or optionals is not supported");
        }
        List<Tensor> elements = new ArrayList<>();
        for (TensorProto t : s.getTensorValuesList()) elements.add(TensorProtos.toTensor(t, src + " element " + elements.size(), external));
        for (Tensor t : elements) {
            if (t.dtype() != declared) throw new OnnxFormatException(src, "element of dtype " + t.dtype() + " in a sequence declared of " + declared);
        }
        return new OnnxValue.SequenceValue(elements, declared);
    }
}
