package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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

    @Option(names = "--dim", paramLabel = "NAME=MAX", converter = DimArg.Converter.class,
            description = "Maximum size of the ONNX model's symbolic input dimension NAME (repeatable): the model is prepared once for"
                    + " every size up to MAX, and the inputs' shapes give the sizes. Without it, the plan is built for the inputs' sizes.")
    List<DimArg> dimArgs = new ArrayList<>();

    /** One {@code --dim NAME=MAX}. */
    record DimArg(String name, int max) {
        private static final Pattern SYNTAX = Pattern.compile("([^=]+)=(.*)");

        /** Parses {@code NAME=MAX}: the syntax and that MAX is an int; its range is the plan's to check, naming the dimension. */
        static final class Converter implements CommandLine.ITypeConverter<DimArg> {
            @Override
            public DimArg convert(String value) {
                Matcher m = SYNTAX.matcher(value);
                if (!m.matches()) throw new CommandLine.TypeConversionException("expected NAME=MAX, got '" + value + "'");
                try {
                    return new DimArg(m.group(1), Integer.parseInt(m.group(2).strip()));
                } catch (NumberFormatException e) {
                    throw new CommandLine.TypeConversionException("expected NAME=MAX with MAX a whole number up to " + Integer.MAX_VALUE
                            + ", got '" + value + "'");
                }
            }
        }
    }

    /**
     * The maxima of {@code --dim}, by name.
     *
     * @throws IllegalArgumentException if a name is given twice: which of two maxima was meant is not ours to guess
     */
    Map<String, Integer> dims() {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (DimArg a : dimArgs) {
            Integer earlier = out.putIfAbsent(a.name(), a.max());
            if (earlier != null) {
                throw new IllegalArgumentException("--dim " + a.name() + ": given twice (" + earlier + " and " + a.max() + ")");
            }
        }
        return out;
    }

    /**
     * Resolves the device, loads the model, reads or generates its inputs and prepares the plan, showing
     * progress while that takes long; fails with bad input before any execution.
     */
    PreparedModel prepare() {
        Map<String, Integer> dims = dims();
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
