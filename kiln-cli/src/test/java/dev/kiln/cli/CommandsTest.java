package dev.kiln.cli;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.models.SmallModels;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.MachinePeakCache;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The CLI commands end to end: exit code, standard output and standard error of each command and error path. */
@ExtendWith(FixedMachinePeak.class)
class CommandsTest {
    @TempDir
    Path tmp;

    /** What one command line printed and returned. */
    record Result(int code, String out, String err) {
        /** Asserts bad input: exit code 2, nothing on stdout, one line on stderr containing {@code parts}, no stack trace. */
        Result badInput(String... parts) {
            assertThat(code).as("exit code; stderr: %s", err).isEqualTo(2);
            assertThat(out).isEmpty();
            assertThat(err.lines().toList()).as("stderr").hasSize(1);
            assertThat(err).doesNotContain("\tat ");
            for (String p : parts) assertThat(err).contains(p);
            return this;
        }

        Result ok() {
            assertThat(code).as("exit code; stderr: %s", err).isZero();
            return this;
        }
    }

    static Result kiln(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        int code = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new Result(code, out.toString(), err.toString());
    }

    private Path npy(String name, Tensor t) {
        Path f = tmp.resolve(name);
        Npy.write(f, t);
        return f;
    }

    private static List<String> filesIn(Path dir) throws IOException {
        if (!Files.exists(dir)) return List.of();
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    // ------------------------------------------------------------------------------------ commands

    @Test
    void demoPrintsBothModels() {
        String text = kiln("demo").ok().out();
        assertThat(text).contains("MLP 16-32-32-10 + softmax").contains("output [4, 10] f32")
                .contains("transformer block").contains("output [1, 8, 32] f32")
                .contains("sum    4.000000") // four softmax rows
                .contains("a tiny Llama").contains("Return the number of the").containsPattern("\\d+ tokens/s");
    }

    @Test
    void devicesListsEveryKindWithItsStatusAndTheDefault() {
        String text = kiln("devices").ok().out();
        for (var e : DeviceRegistry.providers().entrySet()) {
            String status = e.getValue().unavailableReason().map(r -> "unavailable: " + r).orElse("available");
            assertThat(text).containsPattern("(?m)^" + e.getKey() + " +" + java.util.regex.Pattern.quote(status));
        }
        assertThat(text).contains("INTERP   available").contains("CPU").contains("(default)").contains("kernel cache:");
    }

    @Test
    void devicesPrintsTheMachinesPeakAndSaysWhenItMeasuresIt() {
        String cached = "peak f32 FMA: 512-bit 2 threads 400 GFLOP/s (1 thread 200), 256-bit 2 threads 200 GFLOP/s (1 thread 100); streaming 40.0 GB/s";
        Result r = kiln("devices").ok();
        assertThat(r.out()).endsWith(cached + System.lineSeparator());
        assertThat(r.err()).doesNotContain("measuring");
        var fixed = PeakLookup.source;
        try {
            PeakLookup.source = beforeMeasuring -> {
                beforeMeasuring.run();
                return new MachinePeakCache.Lookup(FixedMachinePeak.PEAK, true);
            };
            r = kiln("devices").ok();
            assertThat(r.out()).contains(cached + " (measured now)");
            assertThat(r.err()).contains("measuring this machine's peak once");
        } finally {
            PeakLookup.source = fixed;
        }
    }

    @Test
    void everyCommandHasHelp() {
        for (String cmd : List.of("run", "profile", "bench", "onnx-test", "devices", "demo")) {
            Result r = kiln(cmd, "--help").ok();
            assertThat(r.out()).contains("Usage: kiln " + cmd).contains("--help").contains("--verbose");
        }
        assertThat(kiln("run", "--help").out()).contains("MODEL").contains("--device").contains("--input=NAME=FILE.npy")
                .contains("--random-inputs").contains("--seed").contains("--output-dir");
        assertThat(kiln("bench", "--help").out()).contains("--runs").contains("--warmup");
        assertThat(kiln("profile", "--help").out()).contains("--runs").contains("--warmup").contains("--trace");
        assertThat(kiln("--help").out()).contains("run").contains("profile").contains("bench").contains("devices");
    }

    @Test
    void runWritesEachOutputAsNpy() {
        Path outDir = tmp.resolve("out/nested");
        Result r = kiln("run", "mlp", "--random-inputs", "--seed", "3", "--output-dir", outDir.toString()).ok();
        Path probs = outDir.resolve("probs.npy");
        assertThat(r.out()).startsWith("probs  f32 [4, 10]  min ").contains("mean 0.100000").contains("-> " + probs);
        Tensor t = Npy.read(probs);
        assertThat(t.dims()).containsExactly(4, 10);
        assertThat(t.sum().item()).isCloseTo(4.0, within(1e-4));
        // the same seed gives the same inputs, hence the same outputs
        kiln("run", "mlp", "--random-inputs", "--seed", "3", "--output-dir", tmp.resolve("again").toString()).ok();
        assertThat(Npy.read(tmp.resolve("again/probs.npy")).toFloatArray()).containsExactly(t.toFloatArray());
    }

    @Test
    void runReadsInputsFromNpy() {
        Tensor x = Tensor.randn(42, 4, 16).realize();
        Path in = npy("x.npy", x);
        kiln("run", "mlp", "--input", "x=" + in, "--output-dir", tmp.toString(), "--device", "INTERP").ok();
        float[] expected = SmallModels.mlp(x).toFloatArray();
        float[] got = Npy.read(tmp.resolve("probs.npy")).toFloatArray();
        for (int i = 0; i < expected.length; i++) assertThat(got[i]).isCloseTo(expected[i], within(1e-5f));
    }

    @Test
    void profilePrintsTheKernelTableAndWritesATrace() throws IOException {
        Path trace = tmp.resolve("t/mlp.json");
        Result r = kiln("profile", "mlp", "--random-inputs", "--runs", "3", "--warmup", "1", "--trace", trace.toString()).ok();
        assertThat(r.out()).contains("profile of mlp on CPU:").contains("median of 3 runs after 1 warm-up runs")
                .contains("kernel").contains("time (us)").contains("share").contains("GFLOP/s").contains("GB/s")
                .contains("total (").contains("trace: " + trace);
        assertThat(Files.readString(trace)).startsWith("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[{\"name\":");
        kiln("profile", "transformer", "--random-inputs", "--runs", "1", "--warmup", "0", "--output-dir", tmp.toString()).ok();
        assertThat(tmp.resolve("transformer.trace.json")).exists();
    }

    @Test
    void profileWithOptsPrintsEachKernelsOptimisationActions() {
        Result r = kiln("profile", "mlp", "--random-inputs", "--runs", "1", "--warmup", "0", "--opts", "--output-dir", tmp.toString()).ok();
        List<String> lines = r.out().lines().toList();
        int at = lines.indexOf("optimisation actions:");
        assertThat(at).isPositive();
        // one line per kernel: its name, then its actions as KIND(axis=a, amount=n) or '-'
        assertThat(lines.get(at + 1)).matches("  \\S+ +(-|([A-Z]+\\(axis=\\d+, amount=\\d+\\) ?)+)");
        assertThat(kiln("profile", "--help").out()).contains("--opts");
    }

    @Test
    void profileShowsEachKernelsShareOfThePeakAndTheBandwidth() {
        Result r = kiln("profile", "mlp", "--random-inputs", "--runs", "1", "--warmup", "0", "--output-dir", tmp.toString()).ok();
        List<String> lines = r.out().lines().toList();
        String header = lines.stream().filter(l -> l.contains("time (us)")).findFirst().orElseThrow();
        assertThat(header).endsWith("GB/s  % peak    % BW");
        String total = lines.stream().filter(l -> l.startsWith("  total (")).findFirst().orElseThrow();
        String[] cells = total.trim().split(" +");
        double gflops = Double.parseDouble(cells[cells.length - 4]), gbps = Double.parseDouble(cells[cells.length - 3]);
        assertThat(cells[cells.length - 2]).isEqualTo(String.format(java.util.Locale.ROOT, "%.1f%%", 100 * gflops / 400));
        assertThat(cells[cells.length - 1]).isEqualTo(String.format(java.util.Locale.ROOT, "%.1f%%", 100 * gbps / 40));
        assertThat(r.out()).contains("roofline: peak f32 FMA: 512-bit 2 threads 400 GFLOP/s");
    }

    @Test
    void benchReportsCompileTimeLatencyAndThroughput() {
        Result r = kiln("bench", "transformer", "--random-inputs", "--runs", "5", "--warmup", "2").ok();
        assertThat(r.out()).contains("bench of transformer on CPU:").contains("5 runs after 2 warm-up runs").contains("compile")
                .contains("latency min").contains("median").contains("p90").contains("mean").contains("(5 runs)")
                .contains("throughput").contains("runs/s");
    }

    // ------------------------------------------------------------------------------------ bad input

    @Test
    void unknownOptionIsOneLineAndExitCode2() {
        kiln("demo", "--no-such-option").badInput("kiln demo: Unknown option: '--no-such-option'", "kiln demo --help");
    }

    @Test
    void missingInputFile() throws IOException {
        Path missing = tmp.resolve("missing.npy");
        kiln("run", "mlp", "--input", "x=" + missing, "--output-dir", tmp.resolve("o").toString())
                .badInput("kiln run:", "--input", "no such file " + missing);
        assertThat(filesIn(tmp)).isEmpty();
    }

    @Test
    void malformedNpy() throws IOException {
        Path bad = tmp.resolve("bad.npy");
        Files.writeString(bad, "not numpy");
        kiln("run", "mlp", "--input", "x=" + bad, "--output-dir", tmp.resolve("o").toString())
                .badInput("kiln run: " + bad + ": expected the .npy magic string \\x93NUMPY at the start, found 'not nu'");
        assertThat(filesIn(tmp)).containsExactly("bad.npy");
    }

    @Test
    void truncatedNpy() throws IOException {
        Path good = npy("x.npy", Tensor.randn(1, 4, 16));
        byte[] bytes = Files.readAllBytes(good);
        Files.write(good, java.util.Arrays.copyOf(bytes, bytes.length - 10));
        kiln("bench", "mlp", "--input", "x=" + good).badInput("truncated data: expected 256 data bytes for f32 [4, 16], found 246");
    }

    @Test
    void wrongDtypeOrShapeOfAnInput() {
        Path f64 = npy("x64.npy", Tensor.randn(1, 4, 16).cast(DType.F64));
        kiln("run", "mlp", "--input", "x=" + f64, "--output-dir", tmp.resolve("o").toString())
                .badInput("input 'x': expected f32 [4, 16], " + f64 + " holds f64 [4, 16]");
        Path shape = npy("x3.npy", Tensor.randn(1, 3, 16));
        kiln("profile", "mlp", "--input", "x=" + shape).badInput("input 'x': expected f32 [4, 16], " + shape + " holds f32 [3, 16]");
        assertThat(tmp.resolve("o")).doesNotExist();
    }

    @Test
    void unknownInputName() {
        Path f = npy("y.npy", Tensor.randn(1, 4, 16));
        kiln("run", "mlp", "--input", "y=" + f).badInput("--input y=" + f + ": the model has no input 'y'; its inputs are [x f32 [4, 16]]");
    }

    @Test
    void repeatedInputName() {
        Path f = npy("x.npy", Tensor.randn(1, 4, 16));
        kiln("run", "mlp", "--input", "x=" + f, "--input", "x=" + f).badInput("--input x: given twice");
    }

    @Test
    void badInputSyntax() {
        kiln("run", "mlp", "--input", "x.npy").badInput("kiln run:", "'--input'", "expected NAME=FILE.npy, got 'x.npy'");
        kiln("run", "mlp", "--input", "=x.npy").badInput("expected NAME=FILE.npy, got '=x.npy'");
        kiln("run", "mlp", "--runs", "x").badInput("kiln run: Unknown options: '--runs', 'x'");
        kiln("bench", "mlp", "--runs", "x").badInput("kiln bench:", "'--runs'", "'x' is not an int");
    }

    @Test
    void missingInputsNeedRandomInputs() {
        kiln("run", "transformer").badInput("missing model input [tokens f32 [1, 8, 32]]", "--random-inputs");
    }

    @Test
    void unknownDevice() {
        kiln("bench", "mlp", "--random-inputs", "--device", "NOPE").badInput("kiln bench: unknown device 'NOPE'; registered devices: [");
        kiln("bench", "mlp", "--random-inputs", "--device", "cpu:x").badInput("device 'cpu:x' is not of the form KIND or KIND:INDEX");
    }

    @Test
    void unavailableDeviceSaysWhy() {
        var unavailable = DeviceRegistry.providers().entrySet().stream().filter(e -> e.getValue().unavailableReason().isPresent()).findFirst();
        if (unavailable.isEmpty()) return; // every device works on this machine
        kiln("bench", "mlp", "--random-inputs", "--device", unavailable.get().getKey())
                .badInput("--device " + unavailable.get().getKey() + ": device " + unavailable.get().getKey() + " is not available: "
                        + unavailable.get().getValue().unavailableReason().get());
    }

    @Test
    void unknownModel() {
        kiln("run", "resnet").badInput("kiln run: MODEL: expected a built-in model [mlp, transformer] or the path of an .onnx file,"
                + " got 'resnet' (no such file)");
        kiln("bench", tmp.toString()).badInput("got '" + tmp + "' (a directory)");
        kiln("profile").badInput("kiln profile: Missing required parameter: 'MODEL'");
    }

    @Test
    void badRunCounts() {
        kiln("bench", "mlp", "--random-inputs", "--runs", "0").badInput("--runs: expected at least 1 run, got 0");
        kiln("profile", "mlp", "--random-inputs", "--warmup", "-1").badInput("--warmup: expected 0 or more runs, got -1");
    }

    @Test
    void verboseAddsTheStackTrace() {
        Result r = kiln("run", "nope", "--verbose");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err().lines().findFirst().orElseThrow()).startsWith("kiln run: MODEL: expected a built-in model");
        assertThat(r.err()).contains("java.lang.IllegalArgumentException").contains("\tat dev.kiln.cli.ModelLoader.loadModel");
    }

    @Test
    void outputDirThatIsAFileWritesNothing() throws IOException {
        Path file = tmp.resolve("taken");
        Files.writeString(file, "x");
        Result r = kiln("run", "mlp", "--random-inputs", "--output-dir", file.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err().lines().toList()).hasSize(1);
        assertThat(filesIn(tmp)).containsExactly("taken");
    }
}
