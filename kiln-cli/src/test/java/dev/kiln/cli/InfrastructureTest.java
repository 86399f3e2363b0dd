package dev.kiln.cli;

import dev.kiln.types.DType;
import dev.kiln.io.NpyFormatException;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.KernelProfile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The pieces the commands share: error handling, progress, all-or-nothing output files, reports. */
class InfrastructureTest {
    @TempDir
    Path tmp;

    // ------------------------------------------------------------------------------------ errors

    @Command(name = "boom")
    static final class Boom implements Callable<Integer> {
        @CommandLine.Mixin
        VerboseOption verbose;

        final Exception toThrow;

        Boom(Exception toThrow) { this.toThrow = toThrow; }

        @Override
        public Integer call() throws Exception { throw toThrow; }
    }

    private static String[] runBoom(Exception e, String... args) {
        StringWriter err = new StringWriter();
        ErrorHandler h = new ErrorHandler();
        int code = new CommandLine(new Boom(e)).setErr(new PrintWriter(err, true)).setExecutionExceptionHandler(h)
                .setParameterExceptionHandler(h).execute(args);
        return new String[] {Integer.toString(code), err.toString()};
    }

    @Test
    void badInputIsExitCode2OnOneLine() {
        String[] r = runBoom(new IllegalArgumentException("expected A, got B"));
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).isEqualTo("boom: expected A, got B" + System.lineSeparator());
    }

    @Test
    void formatExceptionsAreBadInput() {
        String[] r = runBoom(new NpyFormatException(Path.of("a.npy"), "expected X, found Y"));
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).startsWith("boom: a.npy: expected X, found Y");
    }

    @Test
    void missingFilesAreBadInput() {
        String[] r = runBoom(new UncheckedIOException("cannot read", new NoSuchFileException("/x/y.onnx")));
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).startsWith("boom: no such file: /x/y.onnx");
    }

    @Test
    void otherFailuresAreExitCode1WithAHint() {
        String[] r = runBoom(new IllegalStateException("kernel failed\n  at line 3"));
        assertThat(r[0]).isEqualTo("1");
        assertThat(r[1]).isEqualTo("boom: IllegalStateException: kernel failed | at line 3 (run with --verbose for the stack trace)"
                + System.lineSeparator());
    }

    @Test
    void verbosePrintsTheStackTrace() {
        String[] r = runBoom(new IllegalStateException("kernel failed"), "--verbose");
        assertThat(r[0]).isEqualTo("1");
        assertThat(r[1]).startsWith("boom: IllegalStateException: kernel failed" + System.lineSeparator())
                .contains("java.lang.IllegalStateException: kernel failed").contains("\tat ");
    }

    /** A command that fails with any throwable, errors included, run as {@link Main} runs commands. */
    @Command(name = "boom")
    static final class ErrorBoom implements Callable<Integer> {
        @CommandLine.Mixin
        VerboseOption verbose;

        final Throwable toThrow;

        ErrorBoom(Throwable toThrow) { this.toThrow = toThrow; }

        @Override
        public Integer call() throws Exception {
            if (toThrow instanceof Error e) throw e;
            throw (Exception) toThrow;
        }
    }

    private static String[] runErrorBoom(Throwable t, String... args) {
        StringWriter err = new StringWriter();
        ErrorHandler h = new ErrorHandler();
        int code = new CommandLine(new ErrorBoom(t)).setErr(new PrintWriter(err, true)).setExecutionStrategy(h)
                .setExecutionExceptionHandler(h).setParameterExceptionHandler(h).execute(args);
        return new String[] {Integer.toString(code), err.toString()};
    }

    @Test
    void outOfMemoryIsExitCode2OnOneLine() {
        long heap = Runtime.getRuntime().maxMemory() >> 20;
        String[] r = runErrorBoom(new OutOfMemoryError("Java heap space"));
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).isEqualTo("boom: out of memory: Java heap space (heap " + heap + " MiB); try a smaller input or -Xmx" + System.lineSeparator());
        // also when it reaches the handler as the cause of another exception (a worker's failure)
        r = runErrorBoom(new java.util.concurrent.CompletionException(new OutOfMemoryError("Cannot reserve 17179869232 bytes of direct buffer memory")));
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).isEqualTo("boom: out of memory: Cannot reserve 17179869232 bytes of direct buffer memory (heap " + heap
                + " MiB); try a smaller input or -Xmx" + System.lineSeparator());
    }

    @Test
    void stackOverflowIsExitCode2OnOneLine() {
        String[] r = runErrorBoom(deepStackOverflow());
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).isEqualTo("boom: stack overflow: the input nests or recurses too deeply for the thread stack; try a smaller input or -Xss"
                + System.lineSeparator());
        r = runErrorBoom(deepStackOverflow(), "--verbose");
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[1]).startsWith("boom: stack overflow: ").contains("java.lang.StackOverflowError");
    }

    /** A real StackOverflowError, with its full trace. */
    private static StackOverflowError deepStackOverflow() {
        try {
            recurse(0);
            throw new AssertionError("no stack overflow");
        } catch (StackOverflowError e) {
            return e;
        }
    }

    private static int recurse(int n) { return recurse(n + 1) + 1; }

    @Test
    void otherErrorsStillPropagate() {
        assertThatThrownBy(() -> runErrorBoom(new AssertionError("a bug"))).isInstanceOf(AssertionError.class).hasMessage("a bug");
    }

    // ------------------------------------------------------------------------------------ progress

    @Test
    void progressDrawsOnlyAfterASecondAndErasesItself() throws InterruptedException {
        StringWriter err = new StringWriter();
        try (Progress p = Progress.start("compiling", new PrintWriter(err), true)) {
            Thread.sleep(200);
            assertThat(err.toString()).isEmpty();
            Thread.sleep(Progress.DELAY_NANOS / 1_000_000 + 300);
            assertThat(p.visible()).isTrue();
            assertThat(err.toString()).startsWith("\r").contains("compiling").contains(" s");
        }
        assertThat(err.toString()).endsWith("\r").doesNotContain("\n");
    }

    @Test
    void disabledProgressWritesNothing() throws InterruptedException {
        StringWriter err = new StringWriter();
        try (Progress p = Progress.start("x", new PrintWriter(err), false)) {
            p.update(1, 2);
            Thread.sleep(1300);
            assertThat(p.visible()).isFalse();
        }
        assertThat(err.toString()).isEmpty();
    }

    @Test
    void progressBarShowsTheFraction() {
        Progress p = Progress.start("runs", new PrintWriter(new StringWriter()), false);
        assertThat(p.render(1_500_000_000L)).matches("[|/\\-\\\\] runs  1\\.5 s");
        p.update(6, 24);
        assertThat(p.render(2_000_000_000L)).isEqualTo("runs [######                  ] 6/24  2.0 s");
        p.close();
    }

    // ------------------------------------------------------------------------------------ output files

    @Test
    void outputFilesAppearOnlyOnCommit() throws IOException {
        Path dir = tmp.resolve("a/b");
        try (OutputFiles f = new OutputFiles()) {
            Files.writeString(f.stage(dir.resolve("x.npy")), "1");
            Files.writeString(f.stage(dir.resolve("y.npy")), "2");
            assertThat(dir.resolve("x.npy")).doesNotExist();
            assertThat(f.commit()).containsExactly(dir.resolve("x.npy").toAbsolutePath(), dir.resolve("y.npy").toAbsolutePath());
        }
        assertThat(Files.readString(dir.resolve("x.npy"))).isEqualTo("1");
        try (var s = Files.list(dir)) {
            assertThat(s.map(p -> p.getFileName().toString()).sorted().toList()).containsExactly("x.npy", "y.npy");
        }
    }

    @Test
    void uncommittedOutputFilesLeaveNothing() throws IOException {
        Path dir = tmp.resolve("new/dir");
        Files.writeString(tmp.resolve("keep.npy"), "old");
        try (OutputFiles f = new OutputFiles()) {
            Files.writeString(f.stage(dir.resolve("x.npy")), "1");
            Files.writeString(f.stage(tmp.resolve("keep.npy")), "new");
            // a failure here: no commit
        }
        assertThat(tmp.resolve("new")).doesNotExist();
        try (var s = Files.list(tmp)) {
            assertThat(s.map(p -> p.getFileName().toString()).toList()).containsExactly("keep.npy");
        }
        assertThat(Files.readString(tmp.resolve("keep.npy"))).isEqualTo("old");
    }

    @Test
    void outputFilesRejectDuplicatesAndFilesInTheWay() throws IOException {
        Files.writeString(tmp.resolve("file"), "x");
        try (OutputFiles f = new OutputFiles()) {
            f.stage(tmp.resolve("x.npy"));
            assertThatThrownBy(() -> f.stage(tmp.resolve("x.npy"))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("would be written twice");
            assertThatThrownBy(() -> f.stage(tmp.resolve("file/sub/y.npy"))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("file is a file, not a directory");
            assertThatThrownBy(() -> f.stage(tmp)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is a directory");
        }
    }

    @Test
    void safeNames() {
        assertThat(OutputFiles.safeName("logits")).isEqualTo("logits");
        assertThat(OutputFiles.safeName("/model/out:0")).isEqualTo("_model_out_0");
        assertThat(OutputFiles.safeName(".hidden")).isEqualTo("_.hidden");
        assertThat(OutputFiles.safeName("")).isEqualTo("_");
    }

    // ------------------------------------------------------------------------------------ reports

    @Test
    void latencySummary() {
        var l = new Reports.Latency(2_000_000, new long[] {5_000, 1_000, 3_000, 2_000, 4_000, 6_000, 7_000, 8_000, 9_000, 10_000});
        assertThat(l.min()).isEqualTo(1_000);
        assertThat(l.median()).isEqualTo(5_500);
        assertThat(l.p90()).isEqualTo(9_000);
        assertThat(l.mean()).isEqualTo(5_500.0);
        assertThat(l.format()).contains("compile           2.00 ms").contains("median      0.006 ms").contains("p90      0.009 ms")
                .contains("(10 runs)").contains("throughput    181818.2 runs/s");
        assertThat(new Reports.Latency(0, new long[] {7}).p90()).isEqualTo(7);
        assertThatThrownBy(() -> new Reports.Latency(0, new long[0])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void medianProfilePerStep() {
        List<KernelProfile> a = List.of(new KernelProfile("k0", 0, 10, 100, 40, "w", ""), new KernelProfile("k1", 10, 50, 0, 8, "w", ""));
        List<KernelProfile> b = List.of(new KernelProfile("k0", 0, 30, 100, 40, "w", ""), new KernelProfile("k1", 30, 10, 0, 8, "w", ""));
        List<KernelProfile> c = List.of(new KernelProfile("k0", 0, 20, 100, 40, "w", ""), new KernelProfile("k1", 20, 30, 0, 8, "w", ""));
        List<KernelProfile> m = Reports.medianProfile(List.of(a, b, c));
        assertThat(m).extracting(KernelProfile::name).containsExactly("k0", "k1");
        assertThat(m).extracting(KernelProfile::elapsedNanos).containsExactly(20L, 30L);
        assertThat(m.get(0).flops()).isEqualTo(100);
        assertThatThrownBy(() -> Reports.medianProfile(List.of(a, a.subList(0, 1)))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void tensorSummaryLine() {
        Buffer b = Buffer.allocateHeap("INTERP", DType.F32, 6);
        double[] v = {1, -2, Double.NaN, 4, Double.POSITIVE_INFINITY, 0.5};
        for (int i = 0; i < v.length; i++) b.setDouble(i, v[i]);
        assertThat(Reports.summary(DType.F32, new int[] {2, 3}, b))
                .isEqualTo("f32 [2, 3]  min -2.00000  max 4.00000  mean 0.875000  nan 1  inf 1  first [1.00000, -2.00000, NaN, 4.00000] ...");
        Buffer ints = Buffer.allocateHeap("INTERP", DType.I64, 2);
        ints.setLong(1, 7);
        assertThat(Reports.summary(DType.I64, new int[] {2}, ints)).isEqualTo("i64 [2]  min 0  max 7  mean 3.50000  first [0, 7]");
        assertThat(Reports.summary(DType.BOOL, new int[] {0, 3}, Buffer.allocateHeap("INTERP", DType.BOOL, 0))).isEqualTo("bool [0, 3]  (empty)");
    }
}
