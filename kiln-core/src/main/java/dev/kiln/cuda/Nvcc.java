package dev.kiln.cuda;

import dev.kiln.clang.ExternalCommand;

import dev.kiln.compile.CompilerIdentity;
import dev.kiln.compile.ContentStore;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * NVIDIA's {@code nvcc} as the CUDA device compiles with it: one translation unit of many kernels
 * ({@link CudaRenderer#translationUnit}) into one PTX module for a virtual architecture
 * ({@code -arch=sm_90} unless {@value #ARCH_PROPERTY} says otherwise), with Alu's float semantics kept:
 * no multiply-add contraction, IEEE division and square root, denormals kept ({@link #FLAGS}).
 *
 * <p>Its {@link #identity()} holds what decides the PTX: nvcc's path and version, the architecture, the
 * flags and the prelude's hash, so cached PTX is never used with another compiler or architecture.
 *
 * @param executable the compiler
 * @param version    the last line of its {@code --version} (the build, e.g. {@code Build cuda_13.0.r13.0/...})
 * @param arch       the architecture compiled for, e.g. {@code sm_90}
 */
public record Nvcc(Path executable, String version, String arch) {
    /** System property naming the architecture to compile for (default {@value #DEFAULT_ARCH}). */
    public static final String ARCH_PROPERTY = "kiln.cuda.arch";
    /** The architecture compiled for when {@value #ARCH_PROPERTY} is not set: Hopper. */
    public static final String DEFAULT_ARCH = "sm_90";

    /** The flags besides {@code -ptx -arch}; none of them changes a result (see the class comment). */
    static final List<String> FLAGS = List.of("-std=c++17", "-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false");

    private static final long PROBE_SECONDS = 60, COMPILE_SECONDS = 600;

    public Nvcc {
        if (!arch.matches("(sm|compute)_\\d+[a-z]?")) {
            throw new IllegalArgumentException("nvcc: architecture '" + arch + "' is not of the form sm_NN (e.g. sm_90)");
        }
    }

    /** nvcc found and its version read, or why there is none. */
    public record Discovery(Optional<Nvcc> nvcc, String reason) {}

    /**
     * Finds nvcc on {@code searchPath} (a {@code PATH} value), else in {@code $CUDA_HOME/bin}, else in
     * {@code /usr/local/cuda/bin}, for the architecture of {@value #ARCH_PROPERTY}.
     */
    public static Discovery discover(String searchPath) {
        List<Path> candidates = new ArrayList<>();
        if (searchPath != null) {
            for (String dir : searchPath.split(File.pathSeparator)) if (!dir.isBlank()) candidates.add(Path.of(dir, "nvcc"));
        }
        String home = System.getenv("CUDA_HOME");
        if (home != null && !home.isBlank()) candidates.add(Path.of(home, "bin", "nvcc"));
        candidates.add(Path.of("/usr/local/cuda/bin/nvcc"));
        Optional<Path> exe = candidates.stream().filter(p -> Files.isRegularFile(p) && Files.isExecutable(p)).findFirst();
        if (exe.isEmpty()) {
            return new Discovery(Optional.empty(), "no nvcc found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin");
        }
        try {
            ExternalCommand.Result v = ExternalCommand.run(List.of(exe.get().toString(), "--version"), null, PROBE_SECONDS);
            if (v.exit() != 0) return new Discovery(Optional.empty(), "nvcc " + exe.get() + " --version failed: " + v.output().strip());
            String[] lines = v.output().strip().split("\n");
            String arch = System.getProperty(ARCH_PROPERTY, DEFAULT_ARCH);
            return new Discovery(Optional.of(new Nvcc(exe.get(), lines[lines.length - 1].strip(), arch)), "");
        } catch (RuntimeException e) {
            return new Discovery(Optional.empty(), "nvcc " + exe.get() + " is not usable: " + e.getMessage());
        }
    }

    /** The command line before the output and input files. */
    public List<String> command() {
        List<String> cmd = new ArrayList<>(List.of(executable.toString(), "-ptx", "-arch=" + arch));
        cmd.addAll(FLAGS);
        return cmd;
    }

    /** Everything that decides the PTX of a source (see the class comment). */
    public CompilerIdentity identity() {
        return CompilerIdentity.of("kiln-cuda-ptx",
                "compiler", executable.toString(),
                "version", version,
                "arch", arch,
                "flags", String.join(" ", FLAGS),
                "prelude.sha256", ContentStore.sha256(CudaRenderer.prelude().getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * Compiles one translation unit to PTX.
     *
     * @throws IllegalStateException if nvcc fails (the message holds its output and the numbered source:
     *                               generated code that does not compile is a Kiln bug)
     */
    public String compilePtx(String source) {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("kiln-cuda-");
            Path cu = dir.resolve("kernels.cu"), ptx = dir.resolve("kernels.ptx");
            Files.writeString(cu, source, StandardCharsets.UTF_8);
            List<String> cmd = command();
            cmd.addAll(List.of("-o", ptx.toString(), cu.toString()));
            ExternalCommand.Result r = ExternalCommand.run(cmd, dir, COMPILE_SECONDS);
            if (r.exit() != 0 || !Files.isRegularFile(ptx)) {
                throw new IllegalStateException("nvcc failed on generated kernels (a Kiln bug):\n$ " + String.join(" ", cmd) + "\n"
                        + r.output() + "\n--- kernels.cu\n" + ExternalCommand.numbered(source));
            }
            return Files.readString(ptx, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot compile CUDA kernels in " + dir + ": " + e.getMessage(), e);
        } finally {
            if (dir != null) ExternalCommand.deleteTree(dir);
        }
    }
}
