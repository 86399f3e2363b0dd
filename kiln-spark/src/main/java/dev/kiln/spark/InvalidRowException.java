package dev.kiln.spark;

/** A row that cannot be fed to the model (a null, a wrong array length); the message names the column and the model input. */
final class InvalidRowException extends IllegalArgumentException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    InvalidRowException(String message) { super(message); }
}
