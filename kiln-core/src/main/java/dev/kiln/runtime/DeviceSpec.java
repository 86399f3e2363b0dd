package dev.kiln.runtime;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Names one device: a kind ({@code CPU}, {@code INTERP}, {@code CLANG}, {@code CUDA}, ...) and an
 * index for kinds with several instances. Parsed case-insensitively from {@code "cuda:1"}; a missing
 * index is 0.
 */
public record DeviceSpec(String kind, int index) {
    private static final Pattern SYNTAX = Pattern.compile("([A-Za-z][A-Za-z0-9_]*)(?::(\\d{1,9}))?");

    /** The reference interpreter. */
    public static final DeviceSpec INTERP = new DeviceSpec("INTERP", 0);

    public DeviceSpec {
        kind = kind.toUpperCase(Locale.ROOT);
        if (index < 0) throw new IllegalArgumentException("device index must be >= 0, got " + index + " for " + kind);
    }

    /**
     * Parses {@code KIND} or {@code KIND:INDEX}.
     *
     * @throws IllegalArgumentException if the text is not of that form
     */
    public static DeviceSpec parse(String text) {
        Matcher m = SYNTAX.matcher(text == null ? "" : text.strip());
        if (!m.matches()) {
            throw new IllegalArgumentException("device '" + text + "' is not of the form KIND or KIND:INDEX (e.g. CPU, CUDA:1)");
        }
        return new DeviceSpec(m.group(1), m.group(2) == null ? 0 : Integer.parseInt(m.group(2)));
    }

    @Override
    public String toString() { return index == 0 ? kind : kind + ":" + index; }
}
