package dev.kiln.clang;

import dev.kiln.compile.CompilerIdentity;
import dev.kiln.compile.ContentStore;
import dev.kiln.compile.KeyedEntries;
import dev.kiln.runtime.HostCpu;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeSet;

/**
 * The system C compiler as the CLANG device uses it: {@code clang} if it is on the {@code PATH}, else
 * {@code gcc}, else {@code cc}. It compiles a batch of kernels (one translation unit) into one shared
 * object, with IEEE semantics kept ({@code -ffp-contract=off -fno-fast-math}) and code for this CPU
 * ({@code -march=native}).
 *
 * <p>Its {@link #identity()} holds what decides the binary: the compiler's path and {@code --version},
 * its target, the flags, the CPU features {@code -march=native} enables here (the predefined macros it
 * adds), and the prelude's hash, so a cached shared object is never used with another compiler or on a
 * CPU with other features.
 *
 * @param executable the compiler
 * @param version    the first line of its {@code --version}
 * @param target     its {@code -dumpmachine}
 * @param flags      the flags every compilation uses (before {@code -o})
 * @param features   the feature macros {@code -march=native} defines here (e.g. {@code __AVX2__}), sorted
 */
public record CCompiler(Path executable, String version, String target, List<String> flags, List<String> features) {
    /** Compiler names in order of preference. */
    static final List<String> NAMES = List.of("clang", "gcc", "cc");

    /** The flags before the CPU target; none of them changes a result (see the class comment). */
    static final List<String> BASE_FLAGS = List.of("-O2", "-fPIC", "-shared", "-std=c11", "-ffp-contract=off", "-fno-fast-math",
            // no code reads the floating-point exception flags: without this, gcc keeps a loop with a float compare or
            // rounding (kiln_exp2f's range clamp) out of vector lanes, as if an exception could be observed
            "-fno-strict-aliasing", "-fno-math-errno", "-fno-trapping-math", "-fvisibility=hidden");

    private static final long PROBE_SECONDS = 60, COMPILE_SECONDS = 600;

    public CCompiler {
        flags = List.copyOf(flags);
        features = List.copyOf(features);
    }

    /** A compiler found and checked, or why there is none. */
    record Discovery(Optional<CCompiler> compiler, String reason) {}

    /** Compilers that passed {@link #discover}, remembered for the next process (see {@link #discover(String, KeyedEntries)}). */
    private static final KeyedEntries KNOWN = KeyedEntries.underCacheRoot("c-compiler", 1);

    /** As {@link #discover(String, KeyedEntries)}, remembering in the disk cache. */
    static Discovery discover(String searchPath) { return discover(searchPath, KNOWN); }

    /**
     * Finds a C compiler on {@code searchPath} (a {@code PATH} value) and checks that it builds and loads
     * a kernel library. What it learns of a compiler that passes (its version, target and the CPU features it targets
     * here) is kept in {@code known}, keyed by the compiler's file (where it leads, its size and time), the CPU and Kiln's
     * flags and prelude; the next process that finds the same file on the same CPU takes it from there instead of
     * running the compiler five times (0.3-0.4 s of a process's start on a 2-core machine). A compiler replaced or
     * updated is a new file, found out again; one that fails is never kept.
     */
    static Discovery discover(String searchPath, KeyedEntries known) {
        Optional<Path> exe = find(searchPath);
        if (exe.isEmpty()) {
            return new Discovery(Optional.empty(), "no C compiler found: looked for " + String.join(", ", NAMES) + " on PATH="
                    + (searchPath == null || searchPath.isBlank() ? "(empty)" : searchPath));
        }
        Path cc = exe.get();
        Optional<Map<String, String>> key = keyOf(cc);
        Optional<CCompiler> remembered = key.flatMap(known::read).flatMap(p -> remembered(cc, p));
        if (remembered.isPresent()) return new Discovery(remembered, "");
        try {
            ExternalCommand.Result version = ExternalCommand.run(List.of(cc.toString(), "--version"), null, PROBE_SECONDS);
            if (version.exit() != 0) return unusable(cc, "--version failed", version.output());
            ExternalCommand.Result machine = ExternalCommand.run(List.of(cc.toString(), "-dumpmachine"), null, PROBE_SECONDS);
            if (machine.exit() != 0) return unusable(cc, "-dumpmachine failed", machine.output());
            List<String> flags = new ArrayList<>(BASE_FLAGS);
            TreeSet<String> features = new TreeSet<>();
            ExternalCommand.Result plain = macros(cc, List.of());
            ExternalCommand.Result nativeMacros = macros(cc, List.of("-march=native"));
            if (plain.exit() != 0) return unusable(cc, "cannot preprocess C", plain.output());
            if (nativeMacros.exit() == 0) {
                flags.add("-march=native");
                // what -march=native adds to the predefined macros: the ISA extensions and tuning of this CPU
                features.addAll(macroNames(nativeMacros.output()));
                features.removeAll(macroNames(plain.output()));
            }
            CCompiler compiler = new CCompiler(cc, firstLine(version.output()), firstLine(machine.output()), flags, List.copyOf(features));
            compiler.probe();
            key.ifPresent(k -> known.write(k, compiler.facts(), "Kiln: a C compiler that built, loaded and ran the probe kernel on this CPU"));
            return new Discovery(Optional.of(compiler), "");
        } catch (RuntimeException e) { // whatever goes wrong, the device is unavailable with the reason
            return unusable(cc, "cannot build and load a kernel library", e.getMessage());
        }
    }

    /** What decides discovery's findings for {@code cc}, or empty when its file cannot be examined (then nothing is kept). */
    private static Optional<Map<String, String>> keyOf(Path cc) {
        try {
            Path real = cc.toRealPath();
            BasicFileAttributes file = Files.readAttributes(real, BasicFileAttributes.class);
            Map<String, String> key = new LinkedHashMap<>();
            key.put("compiler", cc.toString());
            key.put("file", real.toString());
            key.put("file.size", Long.toString(file.size()));
            key.put("file.modified", file.lastModifiedTime().toString());
            key.put("cpu", HostCpu.model());
            key.put("cpu.features.sha256", ContentStore.sha256(HostCpu.features()));
            key.put("flags", String.join(" ", BASE_FLAGS));
            key.put("prelude.sha256", ContentStore.sha256(CPrelude.TEXT));
            return Optional.of(key);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** What discovery keeps of this compiler. */
    private Properties facts() {
        Properties p = new Properties();
        p.setProperty("version", version);
        p.setProperty("target", target);
        p.setProperty("flags", String.join(" ", flags));
        p.setProperty("features", String.join(" ", features));
        return p;
    }

    /** The compiler {@code cc} as {@link #facts} kept it, or empty when an entry lacks a fact. */
    private static Optional<CCompiler> remembered(Path cc, Properties p) {
        String version = p.getProperty("version"), target = p.getProperty("target"), flags = p.getProperty("flags"), features = p.getProperty("features");
        if (version == null || target == null || flags == null || features == null || flags.isBlank()) return Optional.empty();
        return Optional.of(new CCompiler(cc, version, target, List.of(flags.split(" ")), features.isEmpty() ? List.of() : List.of(features.split(" "))));
    }

    private static Discovery unusable(Path cc, String what, String output) {
        String detail = output == null ? "" : output.strip();
        if (detail.length() > 2000) detail = detail.substring(0, 2000) + " ...";
        return new Discovery(Optional.empty(), "C compiler " + cc + " is not usable: " + what + (detail.isEmpty() ? "" : ": " + detail));
    }

    /** The first of {@link #NAMES} that is an executable file in a folder of {@code searchPath}. */
    static Optional<Path> find(String searchPath) {
        if (searchPath == null || searchPath.isBlank()) return Optional.empty();
        for (String name : NAMES) {
            for (String dir : searchPath.split(File.pathSeparator)) {
                if (dir.isBlank()) continue;
                try {
                    Path p = Path.of(dir, name);
                    if (Files.isRegularFile(p) && Files.isExecutable(p)) return Optional.of(p);
                } catch (java.nio.file.InvalidPathException ignored) {
                    // a PATH entry this platform cannot represent holds no compiler
                }
            }
        }
        return Optional.empty();
    }

    /** Builds, loads and calls a one-kernel library, so a compiler that cannot produce usable code is never used. */
    private void probe() {
        String function = """
                KILN_EXPORT void kiln_probe(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
                    float* out = (float*) bufs[0];
                    for (int64_t i = start; i < end; i++) out[i] = kiln_round_f16((float) kiln_sin((double) vars[0])) + kiln_max_f32(NAN, 1.0f);
                }
                """;
        byte[] so = compileShared(CRenderer.translationUnit(List.of(function)));
        NativeLibrary lib = NativeLibrary.load(so);
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var out = arena.allocate(java.lang.foreign.ValueLayout.JAVA_FLOAT, 2);
            var bufs = arena.allocate(java.lang.foreign.ValueLayout.ADDRESS, 1);
            bufs.set(java.lang.foreign.ValueLayout.ADDRESS, 0, out);
            var vars = arena.allocate(java.lang.foreign.ValueLayout.JAVA_LONG, 1);
            lib.function("kiln_probe").invokeExact(bufs, vars, 0L, 2L);
            float v = out.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 1);
            if (!Float.isNaN(v)) throw new IllegalStateException("probe kernel computed " + v + ", expected NaN (is -ffast-math in effect?)");
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("probe kernel failed: " + t, t);
        }
    }

    /** The compiler's family as its version line says: {@code clang}, {@code gcc} or {@code cc}. */
    public String family() {
        String v = version.toLowerCase(Locale.ROOT);
        if (v.contains("clang")) return "clang";
        if (v.contains("gcc") || v.contains("free software foundation")) return "gcc";
        return "cc";
    }

    /** The vector width the kernels are compiled for, in bytes (from the CPU features). */
    public int vectorBytes() {
        if (features.contains("__AVX512F__")) return 64;
        if (features.contains("__AVX__") || features.contains("__AVX2__")) return 32;
        return 16;
    }

    /** Everything that decides the binary of a source (see the class comment). */
    public CompilerIdentity identity() {
        return CompilerIdentity.of("kiln-c",
                "compiler", executable.toString(),
                "version", version,
                "target", target,
                "flags", String.join(" ", flags),
                "cpu.features", String.join(" ", features),
                "prelude.sha256", ContentStore.sha256(CPrelude.TEXT));
    }

    /**
     * Compiles one translation unit into a shared object and returns its bytes.
     *
     * @throws IllegalStateException if the compiler fails (the message holds its output and the numbered
     *                               source: generated code that does not compile is a Kiln bug)
     */
    public byte[] compileShared(String source) {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("kiln-c-");
            Path c = dir.resolve("kernels.c"), so = dir.resolve("kernels.so");
            Files.writeString(c, source, StandardCharsets.UTF_8);
            List<String> cmd = new ArrayList<>();
            cmd.add(executable.toString());
            cmd.addAll(flags);
            cmd.addAll(List.of("-o", so.toString(), c.toString(), "-lm"));
            ExternalCommand.Result r = ExternalCommand.run(cmd, dir, COMPILE_SECONDS);
            if (r.exit() != 0 || !Files.isRegularFile(so)) {
                throw new IllegalStateException("the C compiler failed on generated kernels (a Kiln bug):\n$ " + String.join(" ", cmd) + "\n"
                        + r.output() + "\n--- kernels.c\n" + ExternalCommand.numbered(source));
            }
            return Files.readAllBytes(so);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot compile C kernels in " + dir + ": " + e.getMessage(), e);
        } finally {
            if (dir != null) ExternalCommand.deleteTree(dir);
        }
    }

    // ---------------------------------------------------------------- processes

    private static ExternalCommand.Result macros(Path cc, List<String> extra) {
        List<String> cmd = new ArrayList<>(List.of(cc.toString(), "-dM", "-E", "-x", "c"));
        cmd.addAll(extra);
        cmd.add(nullDevice());
        return ExternalCommand.run(cmd, null, PROBE_SECONDS);
    }

    private static String nullDevice() { return File.separatorChar == '\\' ? "NUL" : "/dev/null"; }

    private static TreeSet<String> macroNames(String dump) {
        TreeSet<String> names = new TreeSet<>();
        for (String line : dump.split("\n")) {
            String[] w = line.strip().split("\\s+");
            if (w.length >= 2 && w[0].equals("#define")) names.add(w[1]);
        }
        return names;
    }


    private static String firstLine(String s) {
        String t = s.strip();
        int nl = t.indexOf('\n');
        return nl < 0 ? t : t.substring(0, nl).strip();
    }
}
