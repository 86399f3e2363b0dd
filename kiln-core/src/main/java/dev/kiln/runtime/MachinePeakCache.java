package dev.kiln.runtime;

import dev.kiln.compile.ContentStore;
import dev.kiln.compile.KernelCache;
import jdk.incubator.vector.VectorShape;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * {@link MachinePeak} measured once per machine: kept in memory for the process and, unless the disk
 * cache is off ({@code -Dkiln.cache.dir=off}), in a small properties file under the kernel cache root
 * ({@code machine-peak/KEY.properties}).
 *
 * <p>An entry is keyed by what decides the figures: the CPU model ({@code /proc/cpuinfo} where
 * readable, else the architecture), the number of cores, the Java version and the preferred vector
 * size. The file repeats the key; a missing, unreadable, corrupt or foreign entry, or one with a width timed before
 * its loop was compiled ({@code PeakMeasurement.remeasureCold}), is measured again and
 * replaced, never reported as an error. Entries are written to a temporary file and moved into place,
 * so a reader in another process sees a whole entry or none.
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

    private final Path folder;
    private final Map<String, String> key;
    private final Supplier<MachinePeak> measure;
    private MachinePeak known;

    /**
     * @param folder  where entries live, or null for memory only
     * @param key     what decides the figures (see {@link #thisMachine()})
     * @param measure measures the figures on a miss
     */
    MachinePeakCache(Path folder, Map<String, String> key, Supplier<MachinePeak> measure) {
        this.folder = folder;
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
    Optional<Path> file() {
        return Optional.ofNullable(folder).map(f -> f.resolve(ContentStore.sha256(new TreeMap<>(key).toString()).substring(0, 16) + ".properties"));
    }

    private Optional<MachinePeak> read() {
        Optional<Path> file = file().filter(Files::isRegularFile);
        if (file.isEmpty()) return Optional.empty();
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file.get(), StandardCharsets.UTF_8)) {
            p.load(r);
            return fromProperties(p, key);
        } catch (IOException | RuntimeException e) { // corrupt or unreadable: measured again
            return Optional.empty();
        }
    }

    private void write(MachinePeak peak) {
        Optional<Path> file = file();
        if (file.isEmpty()) return;
        Path tmp = null;
        try {
            Files.createDirectories(folder);
            tmp = Files.createTempFile(folder, file.get().getFileName() + ".", ".tmp");
            try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                toProperties(key, peak).store(w, "Kiln: this machine's measured peak (MachinePeak)");
            }
            try {
                Files.move(tmp, file.get(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file.get(), StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            // The figures stay in memory for this process; the next one measures again.
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // Nothing more to do: the folder is already failing us.
                }
            }
        }
    }

    /** The key of this machine: CPU model, cores, Java version, preferred vector size. */
    static Map<String, String> thisMachine() {
        Map<String, String> key = new LinkedHashMap<>();
        key.put("cpu", cpuModel());
        key.put("cores", Integer.toString(WorkerPool.size()));
        key.put("java", Runtime.version().toString());
        key.put("vectorBits", Integer.toString(VectorShape.preferredShape().vectorBitSize()));
        return key;
    }

    private static String cpuModel() {
        try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
            Optional<String> model = lines.filter(l -> l.startsWith("model name") && l.contains(":"))
                    .map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst();
            if (model.isPresent()) return model.get();
        } catch (IOException | RuntimeException e) {
            // not Linux, or not readable: the architecture is the best key left
        }
        return System.getProperty("os.arch");
    }

    /** The entry's text form: the key as {@code key.NAME}, then the figures. */
    static Properties toProperties(Map<String, String> key, MachinePeak peak) {
        Properties p = new Properties();
        key.forEach((k, v) -> p.setProperty("key." + k, v));
        p.setProperty("format", Integer.toString(FORMAT_VERSION));
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
     * The figures of an entry, or empty when it belongs to another key or format or a width looks cold.
     *
     * @throws RuntimeException when a figure is missing or malformed (the entry is corrupt)
     */
    static Optional<MachinePeak> fromProperties(Properties p, Map<String, String> key) {
        if (!Integer.toString(FORMAT_VERSION).equals(p.getProperty("format"))) return Optional.empty();
        for (Map.Entry<String, String> e : key.entrySet()) {
            if (!e.getValue().equals(p.getProperty("key." + e.getKey()))) return Optional.empty();
        }
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
