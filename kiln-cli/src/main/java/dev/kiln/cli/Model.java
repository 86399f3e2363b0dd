package dev.kiln.cli;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;

/**
 * A model the commands can run: named inputs, named outputs, and the function from input tensors to
 * (lazy) output tensors. Built-in models implement it ({@link BuiltinModels}); an imported ONNX model
 * joins through {@link ModelLoader#loadModel(String)} with an adapter of a few lines.
 */
interface Model extends AutoCloseable {
    /** A short name, used in headings and default file names. */
    String name();

    /** The inputs, in the model's order. */
    List<TensorSpec> inputs();

    /** The output names, in the order {@link #apply} returns the outputs. */
    List<String> outputNames();

    /**
     * The outputs computed from {@code inputs} (one realised tensor per input name, all on the device to
     * run on), as lazy tensors: the caller prepares them as one plan.
     */
    List<Tensor> apply(Map<String, Tensor> inputs);

    /** Releases what the model holds (an ONNX model's mapped external data); after the plans built from it are closed. */
    @Override
    default void close() {}
}
