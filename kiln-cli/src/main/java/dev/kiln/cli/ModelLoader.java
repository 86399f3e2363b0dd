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
     * The ONNX model in {@code file}: parsed and checked (every operator supported) before anything runs.
     *
     * @throws IllegalArgumentException (an {@link dev.kiln.onnx.OnnxFormatException} or
     *                                  {@link dev.kiln.onnx.UnsupportedOnnxOpException}) naming the file and what is wrong
     */
    private static Model loadFile(Path file) {
        return OnnxFileModel.load(file);
    }
}
