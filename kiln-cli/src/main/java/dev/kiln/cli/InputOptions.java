package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.runtime.Device;
import picocli.CommandLine;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The model inputs: {@code --input NAME=FILE.npy} (repeatable) and {@code --random-inputs --seed S} for
 * every input not given as a file.
 */
final class InputOptions {
    @Option(names = "--input", paramLabel = "NAME=FILE.npy", converter = InputArg.Converter.class,
            description = "Feed the model input NAME from a .npy file; repeat for several inputs.")
    List<InputArg> files = new ArrayList<>();

    @Option(names = "--random-inputs",
            description = "Generate every input not given with --input: floats from a standard normal, integers in [0, 10), bools fair;"
                    + " open dimensions are 1.")
    boolean random;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "0", description = "Seed of --random-inputs (default: ${DEFAULT-VALUE}).")
    long seed;

    /** One {@code --input NAME=FILE}. */
    record InputArg(String name, Path file) {
        private static final Pattern SYNTAX = Pattern.compile("([^=]+)=(.+)");

        /** Parses and checks {@code NAME=FILE}: the syntax, and that the file exists. */
        static final class Converter implements CommandLine.ITypeConverter<InputArg> {
            @Override
            public InputArg convert(String value) {
                Matcher m = SYNTAX.matcher(value);
                if (!m.matches()) throw new CommandLine.TypeConversionException("expected NAME=FILE.npy, got '" + value + "'");
                Path file = Path.of(m.group(2));
                if (!Files.isRegularFile(file)) {
                    throw new CommandLine.TypeConversionException("input '" + m.group(1) + "': " + (Files.isDirectory(file)
                            ? "expected a .npy file, got the directory " : "no such file ") + file);
                }
                return new InputArg(m.group(1), file);
            }
        }
    }

    /**
     * One realised tensor on {@code device} per input of {@code inputs}, in their order: read from the
     * given files (checked against the spec before the data is read) or generated.
     *
     * @throws IllegalArgumentException for an unknown or repeated input name, a file whose dtype or shape
     *                                  does not fit, a malformed file, or an input neither given nor generated
     */
    Map<String, Tensor> resolve(List<TensorSpec> inputs, Device device) {
        Map<String, TensorSpec> byName = new LinkedHashMap<>();
        for (TensorSpec s : inputs) byName.put(s.name(), s);
        Map<String, Path> given = new LinkedHashMap<>();
        for (InputArg a : files) {
            if (!byName.containsKey(a.name())) {
                throw new IllegalArgumentException("--input " + a.name() + "=" + a.file() + ": the model has no input '" + a.name()
                        + "'; its inputs are " + inputs);
            }
            if (given.put(a.name(), a.file()) != null) {
                throw new IllegalArgumentException("--input " + a.name() + ": given twice (" + given.get(a.name()) + " and earlier)");
            }
        }
        List<String> missing = inputs.stream().filter(s -> !given.containsKey(s.name())).map(TensorSpec::toString).toList();
        if (!random && !missing.isEmpty()) {
            throw new IllegalArgumentException("missing model input" + (missing.size() > 1 ? "s " : " ") + missing
                    + ": give each with --input NAME=FILE.npy, or use --random-inputs");
        }
        // check every file's header first, so no data is read when any input is wrong
        for (var e : given.entrySet()) {
            TensorSpec s = byName.get(e.getKey());
            Npy.Header h = Npy.readHeader(e.getValue());
            if (!s.accepts(h.dtype(), h.shape())) {
                throw new IllegalArgumentException("input '" + s.name() + "': expected " + s.describe() + ", " + e.getValue() + " holds " + h);
            }
        }
        Map<String, Tensor> out = new LinkedHashMap<>();
        int index = 0;
        for (TensorSpec s : inputs) {
            Path file = given.get(s.name());
            out.put(s.name(), file != null ? Npy.read(file, device) : generate(s, seed + index, device));
            index++;
        }
        return out;
    }

    private static Tensor generate(TensorSpec s, long seed, Device device) {
        int[] dims = s.concreteDims();
        Tensor t;
        if (s.dtype().isFloat()) t = Tensor.randn(seed, dims).cast(s.dtype());
        else if (s.dtype().isBool()) t = Tensor.bernoulli(seed, 0.5, dims);
        else if (s.dtype().isPacked()) throw new IllegalArgumentException("input '" + s.name() + "': cannot generate packed " + s.dtype() + " values");
        else t = Tensor.randint(seed, 0, 10, s.dtype(), dims);
        return t.to(device).realize();
    }
}
