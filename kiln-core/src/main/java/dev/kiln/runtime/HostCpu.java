package dev.kiln.runtime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What names this machine's CPU for the facts kept about it on disk ({@link MachinePeakCache}, the C compiler's
 * features): its model and its feature flags as Linux reports them in {@code /proc/cpuinfo}, or the architecture where
 * that file cannot be read. Two virtual machines with one model name can offer different features (AVX-512 hidden on
 * one), so a fact that depends on the features keys on both.
 */
public final class HostCpu {
    private static final List<String> CPUINFO = readCpuinfo();

    private HostCpu() {}

    /** The CPU's model name, else the architecture. */
    public static String model() { return field("model name").orElse(System.getProperty("os.arch")); }

    /** The CPU's feature flags as one line, else the architecture. */
    public static String features() { return field("flags").orElse(System.getProperty("os.arch")); }

    private static Optional<String> field(String name) {
        return CPUINFO.stream().filter(l -> l.startsWith(name) && l.contains(":")).map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst();
    }

    private static List<String> readCpuinfo() {
        try {
            // the first processor's lines are enough: every core of a machine reports the same model and flags
            return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().takeWhile(l -> !l.isBlank()).toList();
        } catch (IOException | RuntimeException e) { // not Linux, or not readable: the architecture is the best key left
            return List.of();
        }
    }
}
