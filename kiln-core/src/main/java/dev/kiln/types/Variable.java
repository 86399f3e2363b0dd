package dev.kiln.types;

import java.util.Objects;

/**
 * A named symbolic integer with inclusive bounds {@code [min, max]}, used for symbolic sizes and
 * index math. Equal variables (same name and bounds) are the same IR node ({@code UOp.variable}).
 */
public record Variable(String name, long min, long max) {
    public Variable {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) throw new IllegalArgumentException("variable name must not be blank");
        if (min > max) {
            throw new IllegalArgumentException("variable '" + name + "' has min " + min + " > max " + max);
        }
    }

    /** A value for this variable, checked against its bounds. */
    public Bound bind(long value) {
        if (value < min || value > max) {
            throw new IllegalArgumentException("variable '" + name + "' bound to " + value
                    + ", outside its range [" + min + ", " + max + "]");
        }
        return new Bound(this, value);
    }

    /** A variable with a value that lies within its bounds. */
    public record Bound(Variable variable, long value) {}
}
