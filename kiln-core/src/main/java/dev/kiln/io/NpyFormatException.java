package dev.kiln.io;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A {@code .npy} file Kiln cannot read: a bad magic string or header, truncated data, or a dtype Kiln
 * has no counterpart for (complex, object, strings, structured records). The message names the file,
 * what was expected and what was found. It is bad input, hence an {@link IllegalArgumentException}.
 */
public final class NpyFormatException extends IllegalArgumentException {
    private final transient Path file;

    /** A problem with {@code file}; {@code detail} says what was expected and what was found. */
    public NpyFormatException(Path file, String detail) {
        super(Objects.requireNonNull(file) + ": " + detail);
        this.file = file;
    }

    /** The file that could not be read. */
    public Path file() { return file; }
}
