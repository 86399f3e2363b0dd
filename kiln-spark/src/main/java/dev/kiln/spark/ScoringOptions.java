package dev.kiln.spark;

import dev.kiln.runtime.DeviceSpec;

import java.io.Serial;
import java.io.Serializable;
import java.util.Locale;
import java.util.Objects;

/**
 * How rows are scored: the device the plan is compiled for, the rows of one run, and what a bad row does.
 *
 * @param device        a Kiln device spec ({@code CPU}, {@code CLANG}, {@code INTERP})
 * @param batchSize     rows per run: the maximum of the plan's symbolic batch axis
 * @param handleInvalid {@code error} (a bad row fails its task) or {@code keep} (its outputs are null)
 */
record ScoringOptions(String device, int batchSize, String handleInvalid) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    static final String ERROR = "error", KEEP = "keep";

    ScoringOptions {
        Objects.requireNonNull(device, "device");
        DeviceSpec.parse(device); // its form is checked on the driver; whether the executors have it, where they compile
        if (batchSize < 1) throw new IllegalArgumentException("batchSize must be at least 1, got " + batchSize);
        handleInvalid = Objects.requireNonNull(handleInvalid, "handleInvalid").toLowerCase(Locale.ROOT);
        if (!handleInvalid.equals(ERROR) && !handleInvalid.equals(KEEP)) {
            throw new IllegalArgumentException("handleInvalid must be '" + ERROR + "' or '" + KEEP + "', got '" + handleInvalid + "'");
        }
    }

    boolean keepInvalid() { return handleInvalid.equals(KEEP); }
}
