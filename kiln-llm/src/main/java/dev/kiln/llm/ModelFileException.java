package dev.kiln.llm;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A language-model file (GGUF, safetensors, {@code config.json}, {@code tokenizer.json}) Kiln cannot read: truncated,
 * inconsistent (offsets, sizes, alignment, dimensions against the element type) or of a type Kiln does not support.
 * The message names the file, the tensor or field concerned, what was expected and what was found. It is bad input,
 * hence an {@link IllegalArgumentException}.
 */
public final class ModelFileException extends IllegalArgumentException {
    private final transient Path file;

    /** A problem with {@code file}; {@code detail} names the tensor or field and says what was expected and found. */
    public ModelFileException(Path file, String detail) {
        super(Objects.requireNonNull(file) + ": " + detail);
        this.file = file;
    }

    /** The same, caused by {@code cause} (an I/O error, a JSON parse error). */
    public ModelFileException(Path file, String detail, Throwable cause) {
        super(Objects.requireNonNull(file) + ": " + detail, cause);
        this.file = file;
    }

    /**
     * A file that cannot be read at all (missing, not permitted, an I/O error), said in words rather than by the Java
     * exception's class name.
     */
    public static ModelFileException unreadable(Path file, IOException e) {
        String why = switch (e) {
            case NoSuchFileException x -> "no such file";
            case AccessDeniedException x -> "permission denied";
            case FileSystemException x when x.getReason() != null -> x.getReason();
            default -> e.getMessage() == null ? "an I/O error" : e.getMessage();
        };
        return new ModelFileException(file, "cannot read the file: " + why, e);
    }

    /** The file that could not be read. */
    public Path file() { return file; }
}
