package dev.kiln.cpu;

/** The Java types values of generated kernels are held in, with their keywords: primitives, vectors and masks. */
enum JType {
    BOOLEAN("boolean"), INT("int"), LONG("long"), FLOAT("float"), DOUBLE("double"),
    // vector lanes (jdk.incubator.vector) of the four element types with vector forms, and their masks
    INT_VECTOR("IntVector"), LONG_VECTOR("LongVector"), FLOAT_VECTOR("FloatVector"), DOUBLE_VECTOR("DoubleVector"),
    INT_MASK("VectorMask<Integer>"), LONG_MASK("VectorMask<Long>"), FLOAT_MASK("VectorMask<Float>"), DOUBLE_MASK("VectorMask<Double>");

    final String name;

    JType(String name) { this.name = name; }

    boolean isVector() { return ordinal() >= INT_VECTOR.ordinal(); }

    boolean isMask() { return ordinal() >= INT_MASK.ordinal(); }

    /** The lane type of a vector or mask (BOOLEAN for a mask: its lanes are bits), a scalar's own type. */
    JType lane() {
        return switch (this) {
            case INT_VECTOR -> INT;
            case LONG_VECTOR -> LONG;
            case FLOAT_VECTOR -> FLOAT;
            case DOUBLE_VECTOR -> DOUBLE;
            case INT_MASK, LONG_MASK, FLOAT_MASK, DOUBLE_MASK -> BOOLEAN;
            default -> this;
        };
    }

    /** The element type a vector or mask belongs to (a mask's is the vector type it selects lanes of). */
    JType element() {
        return switch (this) {
            case INT_VECTOR, INT_MASK -> INT;
            case LONG_VECTOR, LONG_MASK -> LONG;
            case FLOAT_VECTOR, FLOAT_MASK -> FLOAT;
            case DOUBLE_VECTOR, DOUBLE_MASK -> DOUBLE;
            default -> this;
        };
    }

    JType vector() {
        return switch (element()) {
            case INT -> INT_VECTOR;
            case LONG -> LONG_VECTOR;
            case FLOAT -> FLOAT_VECTOR;
            case DOUBLE -> DOUBLE_VECTOR;
            default -> throw new IllegalStateException("no vector of " + this);
        };
    }

    JType mask() {
        return switch (element()) {
            case INT -> INT_MASK;
            case LONG -> LONG_MASK;
            case FLOAT -> FLOAT_MASK;
            case DOUBLE -> DOUBLE_MASK;
            default -> throw new IllegalStateException("no mask of " + this);
        };
    }
}

