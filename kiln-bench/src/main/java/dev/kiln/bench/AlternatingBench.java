package dev.kiln.bench;


import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * One ONNX model on several Kiln builds (and ONNX Runtime) in one JVM, their runs alternating in blocks, so that a
 * shared host's changing speed (other tenants: the same command has measured 1.5-2x apart within minutes) falls on
 * every variant alike. Each build is a kiln-core classes folder or jar, loaded with this module's classes and
 * libraries in a class loader of its own; its static state (worker threads, caches) is its own too.
 *
 * <pre>kiln-bench/bench.sh --main AlternatingBench MODEL.onnx [--builds DIR1,DIR2] [--ort] [--threads 2]
 *     [--warmup 100] [--runs 40] [--block 10]</pre>
 *
 * Without {@code --builds}, the kiln-core on this class path. Each block runs one variant {@code --block} times
 * after a 20 ms pause and two untimed runs (another variant's threads stop spinning meanwhile). Prints each variant's
 * median and 10th percentile and the medians' ratios to the first variant and to ONNX Runtime, then each variant
 * against the first block by block (the median of the blocks' ratios, and in how many blocks it was faster), and how
 * far each build's output 0 is from the first's. Worker threads of idle builds stay parked, but ONNX Runtime's pool spins
 * after its runs: with {@code --ort}, Kiln's figures can be a little higher than alone.
 *
 * <p>On models of one small kernel, alternating does not remove all of the host's noise: two identical copies of one
 * build measured medians 2.5 % and 20 % apart (10th percentiles within 3 %). Compare builds in both orders, with the
 * percentile beside the median, and trust whole models more than single kernels.
 */
public final class AlternatingBench {
    private AlternatingBench() {}

    /**
     * Warm-up runs of each variant before the timed ones. Ten left C2 still compiling ResNet-50's kernels (their vector
     * code ran unintrinsified, allocating, for the first ~9 s on one core): its median on two threads was 97 ms after
     * 10 warm-up runs and 85 ms after 100, minutes apart; ONNX Runtime's did not move.
     */
    static final int DEFAULT_WARMUP = 100;

    /** The options: the model, the builds (empty: this class path's), and the timing. */
    record Options(Path model, List<String> builds, boolean ort, int threads, int warmup, int runs, int block) {
        static Options parse(String[] args) {
            if (args.length == 0 || args[0].startsWith("--")) throw new IllegalArgumentException("usage: AlternatingBench MODEL.onnx "
                    + "[--builds DIR1,DIR2] [--ort] [--threads N] [--warmup N] [--runs N] [--block N]");
            List<String> builds = List.of();
            boolean ort = false;
            int threads = Runtime.getRuntime().availableProcessors(), warmup = DEFAULT_WARMUP, runs = 40, block = 10;
            for (int i = 1; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--ort")) {
                    ort = true;
                    continue;
                }
                if (i + 1 >= args.length) throw new IllegalArgumentException("option " + a + " needs a value");
                String v = args[++i];
                switch (a) {
                    case "--builds" -> builds = Arrays.stream(v.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
                    case "--threads" -> threads = positive(a, v);
                    case "--warmup" -> warmup = Integer.parseInt(v);
                    case "--runs" -> runs = positive(a, v);
                    case "--block" -> block = positive(a, v);
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            return new Options(Path.of(args[0]), builds, ort, threads, warmup, runs, block);
        }

        private static int positive(String option, String v) {
            int n = Integer.parseInt(v);
            if (n < 1) throw new IllegalArgumentException(option + " must be at least 1, was " + n);
            return n;
        }
    }

    private record Variant(String name, Runnable run, Supplier<float[]> output, AutoCloseable owner) {}

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        List<Variant> variants = new ArrayList<>();
        try {
            if (o.builds().isEmpty()) {
                KilnModelRun k = new KilnModelRun(o.model().toString(), "CPU");
                variants.add(new Variant("Kiln (this class path)", k, k, k));
            }
            for (String build : o.builds()) variants.add(load(build, o.model()));
            if (o.ort()) {
                OrtModelRun r = new OrtModelRun(o.model(), o.threads());
                variants.add(new Variant("ONNX Runtime", r, r, r));
            }
            double[][] ms = time(variants, o);
            System.out.printf(Locale.ROOT, "model %s, %d cores, %d warm-up + %d timed runs each in blocks of %d%s%n", o.model(),
                    Runtime.getRuntime().availableProcessors(), o.warmup(), o.runs(), o.block(), o.ort() ? ", ORT intra-op threads " + o.threads() : "");
            System.out.print(table(variants.stream().map(Variant::name).toList(), ms, o.ort()));
            System.out.print(blockTable(variants.stream().map(Variant::name).toList(), ms, o.block()));
            float[] first = variants.getFirst().output().get();
            for (Variant v : variants.subList(1, variants.size())) {
                System.out.printf(Locale.ROOT, "output 0 of %s: max |x - first| %.3g%n", v.name(), maxDiff(v.output().get(), first));
            }
        } finally {
            for (Variant v : variants) v.owner().close();
        }
    }

    /** A build's {@link KilnModelRun}, loaded with this module's classes and libraries but the build's kiln-core. */
    private static Variant load(String build, Path model) throws ReflectiveOperationException, MalformedURLException {
        Path core = Path.of(build);
        if (!Files.exists(core)) throw new IllegalArgumentException("no kiln-core build at " + build);
        List<URL> urls = new ArrayList<>();
        urls.add(core.toUri().toURL());
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            String file = p.getFileName() == null ? "" : p.getFileName().toString();
            if (file.startsWith("kiln-core") || entry.contains("kiln-core" + File.separator + "target")) continue;
            urls.add(p.toUri().toURL());
        }
        ClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
        Object run = loader.loadClass(KilnModelRun.class.getName()).getConstructor(String.class, String.class).newInstance(model.toString(), "CPU");
        @SuppressWarnings("unchecked") Supplier<float[]> out = (Supplier<float[]>) run;
        return new Variant("Kiln " + build, (Runnable) run, out, (AutoCloseable) run);
    }

    /** Each variant's timed runs (ms, in the order they ran: block after block), blocks alternating. */
    static double[][] time(List<Variant> variants, Options o) throws InterruptedException {
        for (int i = 0; i < o.warmup(); i++) for (Variant v : variants) v.run().run();
        double[][] ms = new double[variants.size()][o.runs()];
        for (int start = 0; start < o.runs(); start += o.block()) {
            for (int v = 0; v < variants.size(); v++) {
                Runnable run = variants.get(v).run();
                Thread.sleep(20);
                run.run();
                run.run();
                for (int i = start; i < Math.min(o.runs(), start + o.block()); i++) {
                    long t = System.nanoTime();
                    run.run();
                    ms[v][i] = (System.nanoTime() - t) / 1e6;
                }
            }
        }
        return ms;
    }

    /**
     * Each variant against the first, block by block: the median over blocks of the ratio of the block's medians, and in
     * how many blocks it was faster. Blocks of different variants run a few hundred milliseconds apart, so a host that
     * changes speed over minutes (other tenants: 40 % within the hour) shifts both sides of a block's ratio alike; the
     * medians over all runs compare minutes apart.
     */
    static String blockTable(List<String> names, double[][] ms, int block) {
        int blocks = (ms[0].length + block - 1) / block;
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "  %-60s %16s %14s%n", "block by block, against the first", "median ratio", "faster in"));
        for (int v = 1; v < names.size(); v++) {
            double[] ratios = new double[blocks];
            int faster = 0;
            for (int b = 0; b < blocks; b++) {
                int from = b * block, to = Math.min(ms[v].length, from + block);
                ratios[b] = OnnxPeerBench.median(sortedRange(ms[v], from, to)) / OnnxPeerBench.median(sortedRange(ms[0], from, to));
                if (ratios[b] < 1) faster++;
            }
            Arrays.sort(ratios);
            sb.append(String.format(Locale.ROOT, "  %-60s %15.3fx %9d of %d%n", names.get(v), OnnxPeerBench.median(ratios), faster, blocks));
        }
        return sb.toString();
    }

    private static double[] sortedRange(double[] x, int from, int to) {
        double[] r = Arrays.copyOfRange(x, from, to);
        Arrays.sort(r);
        return r;
    }

    /**
     * Median and 10th percentile per variant (over its runs in any order), the medians' ratio to the first variant's and
     * (with ORT, the last) to ORT's.
     */
    static String table(List<String> names, double[][] runs, boolean ortLast) {
        double[][] ms = Arrays.stream(runs).map(r -> sortedRange(r, 0, r.length)).toArray(double[][]::new);
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "  %-60s %10s %10s %9s%s%n", "variant", "median ms", "p10 ms", "/ first",
                ortLast ? "     / ORT" : ""));
        double first = OnnxPeerBench.median(ms[0]), ort = ortLast ? OnnxPeerBench.median(ms[ms.length - 1]) : Double.NaN;
        for (int v = 0; v < names.size(); v++) {
            double m = OnnxPeerBench.median(ms[v]);
            sb.append(String.format(Locale.ROOT, "  %-60s %10.3f %10.3f %8.3fx%s%n", names.get(v), m, ms[v][ms[v].length / 10], m / first,
                    ortLast ? String.format(Locale.ROOT, " %8.2fx", m / ort) : ""));
        }
        return sb.toString();
    }

    private static double maxDiff(float[] x, float[] ref) {
        if (x.length != ref.length) return Double.POSITIVE_INFINITY;
        double d = 0;
        for (int i = 0; i < x.length; i++) d = Math.max(d, Math.abs((double) x[i] - ref[i]));
        return d;
    }
}
