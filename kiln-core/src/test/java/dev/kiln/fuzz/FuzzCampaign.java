package dev.kiln.fuzz;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A seeded random-mutation fuzzer for one parser (issue 13): it replays committed inputs, then mutates them a bounded
 * number of times, and sorts every outcome into success, an allowed typed exception, or a finding (any other
 * exception or error, {@link OutOfMemoryError} and {@link StackOverflowError} included). A finding's input is saved
 * under {@code target/fuzz-findings/<target>/} so it can be committed as a regression input.
 *
 * <p>Jazzer 0.24.0 cannot instrument Java 25 class files ({@code Unsupported class file major version 69}), so there
 * is no coverage feedback; instead, inputs that parse successfully join the pool that later mutations start from,
 * which carries mutations past the first checks. kiln-onnx's tests use it too, through kiln-core's
 * test jar (this package only).
 */
public final class FuzzCampaign {
    /** The code under test; it returns normally or throws. */
    public interface Target {
        void accept(byte[] input) throws Exception;
    }

    /** Makes a new input from a parent drawn from the pool. */
    public interface Mutation {
        byte[] mutate(byte[] parent, List<byte[]> pool, Random random);
    }

    /** One input that ended outside the allowed outcomes. */
    public record Finding(String kind, String top, byte[] input) {
        @Override public String toString() { return kind + " at " + top + " (" + input.length + " bytes)"; }
    }

    /** What a run did: executions, counts by outcome, and the distinct findings (by exception class and top frame). */
    public record Report(long executions, Map<String, Long> outcomes, List<Finding> findings, long slowestMillis) {
        @Override public String toString() {
            return executions + " executions, outcomes " + outcomes + ", " + findings.size() + " distinct findings, slowest input "
                    + slowestMillis + " ms" + (findings.isEmpty() ? "" : ": " + findings);
        }
    }

    /** Any input slower than this is reported as a finding: a parser must not spin on a small file. */
    public static final long SLOW_MILLIS = 10_000;
    private static final int POOL_LIMIT = 2_000;

    private final String name;
    private final Target target;
    private final Set<Class<? extends Throwable>> allowed;
    private final Map<String, Long> outcomes = new TreeMap<>();
    private final Map<String, Finding> findings = new LinkedHashMap<>();
    private long executions, slowest;

    /**
     * @param name    the target's name, for the findings folder
     * @param allowed the exception classes that count as a typed failure (exact classes: a subclass such as
     *                NumberFormatException of an allowed IllegalArgumentException is still a finding)
     */
    public FuzzCampaign(String name, Target target, Set<Class<? extends Throwable>> allowed) {
        this.name = name;
        this.target = target;
        this.allowed = allowed;
    }

    /** Runs every input once. */
    public FuzzCampaign replay(List<byte[]> inputs) {
        for (byte[] in : inputs) execute(in);
        return this;
    }

    /**
     * Mutates the seeds until {@code iterations} inputs have run or {@code seconds} have passed, whichever is first.
     * The same random seed gives the same inputs, so a CI failure reproduces.
     */
    public FuzzCampaign mutate(List<byte[]> seeds, Mutation mutation, long iterations, long seconds, long randomSeed) {
        Random random = new Random(randomSeed);
        List<byte[]> pool = new ArrayList<>(seeds);
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        for (long i = 0; i < iterations && System.nanoTime() < deadline; i++) {
            byte[] parent = pool.get(random.nextInt(pool.size()));
            byte[] child = mutation.mutate(parent, pool, random);
            if (execute(child) && !java.util.Arrays.equals(child, parent)) {
                // no coverage feedback: a mutant that still parses is the next best sign of an input worth building on
                if (pool.size() < POOL_LIMIT) pool.add(child);
                else pool.set(seeds.size() + random.nextInt(POOL_LIMIT - seeds.size()), child);
            }
        }
        return this;
    }

    /** The counts so far. */
    public Report report() {
        return new Report(executions, Map.copyOf(outcomes), List.copyOf(findings.values()), slowest);
    }

    /** Runs one input; true when it succeeded. */
    private boolean execute(byte[] input) {
        executions++;
        long t0 = System.nanoTime();
        String outcome;
        boolean ok = false;
        try {
            target.accept(input);
            outcome = "ok";
            ok = true;
        } catch (Throwable e) {
            if (allowed.contains(e.getClass())) {
                outcome = e.getClass().getSimpleName();
            } else {
                outcome = "FINDING " + e.getClass().getSimpleName();
                StackTraceElement[] st = e.getStackTrace();
                String top = st.length == 0 ? "?" : st[0].toString();
                findings.computeIfAbsent(e.getClass().getName() + " " + top, k -> save(new Finding(e.toString(), top, input)));
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        slowest = Math.max(slowest, ms);
        if (ms > SLOW_MILLIS) findings.computeIfAbsent("slow", k -> save(new Finding("slow input (" + ms + " ms)", "-", input)));
        outcomes.merge(outcome, 1L, Long::sum);
        return ok;
    }

    private Finding save(Finding f) {
        try {
            Path dir = Path.of("target", "fuzz-findings", name);
            Files.createDirectories(dir);
            String hash = HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-1").digest(f.input()), 0, 6);
            Files.write(dir.resolve("crash-" + hash), f.input());
            System.out.println("FuzzCampaign " + name + ": " + f + " saved as " + dir.resolve("crash-" + hash));
        } catch (IOException | java.security.NoSuchAlgorithmException e) {
            System.out.println("FuzzCampaign " + name + ": could not save a finding (" + e + ")");
        }
        return f;
    }

    /** The files of a test-resources folder, sorted by name (dot files skipped). */
    public static List<byte[]> resources(Class<?> owner, String folder) {
        try (Stream<Path> s = Files.list(Path.of(owner.getResource(folder).toURI()))) {
            List<byte[]> out = new ArrayList<>();
            for (Path p : s.filter(p -> !p.getFileName().toString().startsWith(".")).sorted().toList()) out.add(Files.readAllBytes(p));
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A long from a system property (for long offline runs), or the default. */
    public static long setting(String property, long byDefault) {
        String v = System.getProperty(property);
        return v == null || v.isBlank() ? byDefault : Long.parseLong(v.strip());
    }
}
