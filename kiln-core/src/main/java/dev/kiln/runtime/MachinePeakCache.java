package dev.kiln.runtime;

import dev.kiln.compile.KernelCache;
import dev.kiln.compile.KeyedEntries;
import jdk.incubator.vector.VectorShape;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;

/**
 * {@link MachinePeak} measured once per machine: kept in memory for the process and, unless the disk
 * cache is off ({@code -Dkiln.cache.dir=off}), in a small properties file under the kernel cache root
 * ({@code machine-peak/KEY.properties}).
 *
 * <p>An entry ({@link KeyedEntries}) is keyed by what decides the figures: the CPU model ({@link HostCpu}), the
 * number of cores, the Java version and the preferred vector size. A missing, unreadable, corrupt or foreign entry, or
 * one with a width timed before its loop was compiled ({@code PeakMeasurement.remeasureCold}), is measured again and
 * replaced, never reported as an error.
 */
public final class MachinePeakCache {
    static final String FOLDER = "machine-peak";
    private static final int FORMAT_VERSION = 1;
    private static final MachinePeakCache PROCESS = new MachinePeakCache(
            KernelCache.cacheRoot().map(root -> root.resolve(FOLDER)).orElse(null), thisMachine(), MachinePeak::measure);

    /**
     * The figures and where they came from.
     *
     * @param peak     the machine's figures
     * @param measured whether this lookup measured them (neither the disk nor the memory had them)
     */
    public record Lookup(MachinePeak peak, boolean measured) {}

    private final KeyedEntries entries;
    private final Map<String, String> key;
    private final Supplier<MachinePeak> measure;
    private MachinePeak known;

    /**
     * @param folder  where entries live, or null for memory only
     * @param key     what decides the figures (see {@link #thisMachine()})
     * @param measure measures the figures on a miss
     */
    MachinePeakCache(Path folder, Map<String, String> key, Supplier<MachinePeak> measure) {
        this.entries = new KeyedEntries(folder, FORMAT_VERSION);
        this.key = Map.copyOf(key);
        this.measure = measure;
    }

    /** As {@link #lookup(Runnable)} with nothing to do before measuring. */
    public static Lookup lookup() { return lookup(() -> {}); }

    /**
     * This machine's figures: from memory, else from the disk cache, else measured now (for about
     * {@link MachinePeak#DEFAULT_BUDGET}) and stored.
     *
     * @param beforeMeasuring runs just before a measurement (to tell the user why they wait)
     */
    public static Lookup lookup(Runnable beforeMeasuring) { return PROCESS.get(beforeMeasuring); }

    synchronized Lookup get(Runnable beforeMeasuring) {
        if (known != null) return new Lookup(known, false);
        Optional<MachinePeak> stored = read();
        if (stored.isPresent()) {
            known = stored.get();
            return new Lookup(known, false);
        }
        beforeMeasuring.run();
        known = measure.get();
        write(known);
        return new Lookup(known, true);
    }

    /** The entry's file, or empty with the disk cache off. */
    Optional<Path> file() { return entries.file(key); }

    private Optional<MachinePeak> read() {
        try {
            return entries.read(key).flatMap(MachinePeakCache::fromProperties);
        } catch (RuntimeException e) { // corrupt: measured again
            return Optional.empty();
        }
    }

    private void write(MachinePeak peak) { entries.write(key, toProperties(peak), "Kiln: this machine's measured peak (MachinePeak)"); }

    /** The key of this machine: CPU model, cores, Java version, preferred vector size. */
    static Map<String, String> thisMachine() {
        Map<String, String> key = new LinkedHashMap<>();
        key.put("cpu", HostCpu.model());
        key.put("cores", Integer.toString(WorkerPool.size()));
        key.put("java", Runtime.version().toString());
        key.put("vectorBits", Integer.toString(VectorShape.preferredShape().vectorBitSize()));
        return key;
    }

    /** The entry's figures in text form. */
    static Properties toProperties(MachinePeak peak) {
        Properties p = new Properties();
        p.setProperty("threads", Integer.toString(peak.threads()));
        p.setProperty("fma.bits", String.join(",", peak.fma().stream().map(v -> Integer.toString(v.bits())).toList()));
        for (MachinePeak.VectorPeak v : peak.fma()) {
            p.setProperty("fma." + v.bits() + ".oneThreadGflops", Double.toString(v.oneThreadGflops()));
            p.setProperty("fma." + v.bits() + ".allCoresGflops", Double.toString(v.allCoresGflops()));
        }
        p.setProperty("streamGBps", Double.toString(peak.streamGBps()));
        return p;
    }

    /**
     * The figures of an entry, or empty when a width looks cold.
     *
     * @throws RuntimeException when a figure is missing or malformed (the entry is corrupt)
     */
    static Optional<MachinePeak> fromProperties(Properties p) {
        List<MachinePeak.VectorPeak> fma = new ArrayList<>();
        String bits = p.getProperty("fma.bits");
        for (String b : bits.isEmpty() ? new String[0] : bits.split(",")) {
            fma.add(new MachinePeak.VectorPeak(Integer.parseInt(b), number(p, "fma." + b + ".oneThreadGflops"), number(p, "fma." + b + ".allCoresGflops")));
        }
        int threads = Integer.parseInt(p.getProperty("threads"));
        // an entry written before cold widths were measured again (a 128-bit peak of 0.58 GFLOP/s) is measured anew
        if (PeakMeasurement.anyCold(fma, threads)) return Optional.empty();
        return Optional.of(new MachinePeak(threads, fma, number(p, "streamGBps")));
    }

    private static double number(Properties p, String name) {
        String v = p.getProperty(name);
        if (v == null) throw new IllegalArgumentException("machine peak entry: no " + name);
        return Double.parseDouble(v);
    }

}
