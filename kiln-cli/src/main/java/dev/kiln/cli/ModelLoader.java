package dev.kiln.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/** Resolves a command's MODEL argument: a built-in model's name or the path of a model file. */
final class ModelLoader {
    private ModelLoader() {}

    /**
     * The model {@code arg} names: a built-in model ({@link BuiltinModels#NAMES}) or a model file.
     *
     * @throws IllegalArgumentException if it is neither a built-in name nor an existing file
     */
    static Model loadModel(String arg) {
        var builtin = BuiltinModels.find(arg);
        if (builtin.isPresent()) return builtin.get();
        Path file = Path.of(arg);
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("MODEL: expected a built-in model " + BuiltinModels.NAMES
                    + " or the path of an .onnx file, got '" + arg + "'" + (Files.isDirectory(file) ? " (a directory)" : " (no such file)"));
        }
        return loadFile(file);
    }

    /**
     * The model in {@code file}. Extension point for the ONNX importer: load the file and adapt it to
     * {@link Model} (name: the file name without extension; inputs from its signature with symbolic
     * dimensions as {@link TensorSpec#ANY}; output names from its signature; apply: its run function).
     * The importer's format errors reach the user as one line with exit code 2 when they extend
     * {@link IllegalArgumentException}.
     */
    private static Model loadFile(Path file) {
        throw new UnsupportedOperationException("cannot load " + file + ": this build has no ONNX importer (kiln-onnx) yet");
    }
}
