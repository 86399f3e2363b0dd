package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.ValueInfo;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * An ONNX model file as a {@link Model}: its inputs with symbolic or unknown dimensions open
 * ({@link TensorSpec#ANY}), and {@link OnnxModel#run} as its function.
 */
record OnnxFileModel(String name, OnnxModel onnx) implements Model {
    /** Loads {@code file}; format and support errors are {@link IllegalArgumentException}s naming the file. */
    static OnnxFileModel load(Path file) {
        String base = file.getFileName().toString().replaceFirst("\\.onnx$", "");
        // conformance cases all call their file model.onnx: the folder names the model
        if (base.equals("model") && file.toAbsolutePath().getParent() != null && file.toAbsolutePath().getParent().getFileName() != null) {
            base = file.toAbsolutePath().getParent().getFileName().toString();
        }
        OnnxModel model = OnnxModel.load(file);
        // sequences, optionals and strings have no .npy form: refused with the value's name, before any input is read
        for (ValueInfo v : java.util.stream.Stream.concat(model.inputs().stream(), model.outputs().stream()).toList()) {
            if (!v.isTensor()) {
                model.close();
                throw new IllegalArgumentException(file + ": '" + v.name() + "' is " + v + "; the command line reads and writes tensors only");
            }
        }
        return new OnnxFileModel(base, model);
    }

    @Override
    public List<TensorSpec> inputs() {
        return onnx.inputs().stream().map(OnnxFileModel::spec).toList();
    }

    private static TensorSpec spec(ValueInfo v) {
        if (v.dims() == null) return new TensorSpec(v.name(), v.dtype(), null);
        int[] dims = v.dims().stream().mapToInt(d -> d.isFixed() ? Math.toIntExact(d.size()) : TensorSpec.ANY).toArray();
        return new TensorSpec(v.name(), v.dtype(), dims);
    }

    @Override
    public List<String> outputNames() { return onnx.outputs().stream().map(ValueInfo::name).toList(); }

    @Override
    public List<Tensor> apply(Map<String, Tensor> inputs) { return onnx.run(inputs); }

    @Override
    public void close() { onnx.close(); }
}
