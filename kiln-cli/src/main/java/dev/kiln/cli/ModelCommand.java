package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The base of the commands that run a model (run, profile, bench): the MODEL argument, {@code --device}
 * and the input options, and {@link #prepare()}, which checks all of them before anything runs.
 */
abstract class ModelCommand extends KilnCommand {
    @Parameters(index = "0", paramLabel = "MODEL",
            description = "A built-in model (mlp, transformer) or the path of an .onnx file.")
    String model;

    @Mixin
    DeviceOption device;

    @Mixin
    InputOptions inputs;

    @Option(names = "--dim", paramLabel = "NAME=MAX",
            description = "Maximum size of the ONNX model's symbolic input dimension NAME (repeatable): the model is prepared once for"
                    + " every size up to MAX, and the inputs' shapes give the sizes. Without it, the plan is built for the inputs' sizes.")
    Map<String, Integer> dims = new LinkedHashMap<>();

    /**
     * Resolves the device, loads the model, reads or generates its inputs and prepares the plan, showing
     * progress while that takes long; fails with bad input before any execution.
     */
    PreparedModel prepare() {
        Device d = device.resolve();
        Model m = null;
        // the prepared model owns the model once made; until then, a failure must release it (its mapped weights)
        try {
            Map<String, Tensor> in;
            try (Progress p = progress("loading " + model)) {
                m = ModelLoader.loadModel(model);
                in = inputs.resolve(m.inputs(), d);
            }
            try (Progress p = progress("compiling " + m.name() + " for " + d.spec())) {
                if (dims.isEmpty()) return PreparedModel.prepare(m, in, d);
                if (!(m instanceof OnnxFileModel onnx)) throw new IllegalArgumentException("--dim: only an .onnx model has symbolic dimensions, " + model + " has none");
                return PreparedModel.prepareSymbolic(onnx, in, d, dims);
            }
        } catch (RuntimeException | Error e) {
            if (m != null) m.close();
            throw e;
        }
    }
}
