package dev.kiln.runtime;

import com.sun.management.HotSpotDiagnosticMXBean;
import com.sun.management.OperatingSystemMXBean;

import java.lang.management.ManagementFactory;
import java.util.Locale;

/**
 * The most host memory one request may take: a plan's buffers together, or one buffer. Requests are checked
 * against it <em>before</em> anything is allocated, so a tiny model file claiming gigabytes, or a shape of
 * 2^40 elements, fails with a {@link MemoryBudgetException} naming both figures instead of an
 * {@link OutOfMemoryError} part way through.
 *
 * <p>The budget is, in this order:
 * <ol>
 *   <li>the system property {@value #PROPERTY}, read on every check (so a test or a server can change it);</li>
 *   <li>the environment variable {@value #ENV};</li>
 *   <li>otherwise what the machine can actually give: the smaller of the physical memory (the container's limit
 *       where there is one, as the JVM reports it) and the JVM's limit on off-heap memory. Kiln's host
 *       buffers are FFM segments, which the JVM counts against {@code -XX:MaxDirectMemorySize}; when that flag
 *       is not set the JVM's limit is the maximum heap ({@code -Xmx}), so that is the default then. Read once,
 *       as neither changes while the JVM runs.</li>
 * </ol>
 * A value is a byte count, optionally with a binary suffix: {@code 1073741824}, {@code 512m}, {@code 8g},
 * {@code 64k}, {@code 1t} (case-insensitive, an optional trailing {@code b}: {@code 8GB}). Anything else is an
 * {@link IllegalArgumentException} naming the setting.
 *
 * <p>The budget bounds each request, not the sum of everything alive: the JVM still enforces its own limit on
 * the total, and a refusal there also becomes a {@link MemoryBudgetException}, never an
 * {@code OutOfMemoryError}. Devices with memory of their own (CUDA, {@link Device#deviceMemory()} present) are
 * bounded by that memory, not by this budget.
 */
public final class MemoryBudget {
    /** The system property that sets the budget. */
    public static final String PROPERTY = "kiln.memory.budget";
    /** The environment variable that sets the budget when the property is not set. */
    public static final String ENV = "KILN_MEMORY_BUDGET";

    // parsed once per distinct text: a check is a property read and a string comparison
    private record Parsed(String text, long bytes) {}
    private static volatile Parsed lastParsed;

    private MemoryBudget() {}

    /** The budget in bytes now: the setting if there is one, else {@link #machineBytes()}. */
    public static long bytes() {
        Setting s = setting();
        return s == null ? machineBytes() : parsed(s);
    }

    /**
     * What this machine and JVM can give to off-heap buffers: the smaller of the physical memory and the JVM's
     * off-heap limit ({@code -XX:MaxDirectMemorySize}, else the maximum heap). Computed once.
     */
    public static long machineBytes() { return Machine.BYTES; }

    /**
     * Refuses {@code bytes} for {@code what} (e.g. "tensor of shape [1048576, 262144] x f32") when they exceed
     * the budget.
     *
     * @throws MemoryBudgetException    if {@code bytes} exceed the budget; nothing has been allocated
     * @throws IllegalArgumentException if the budget's setting is not a valid size
     */
    public static void check(long bytes, String what) {
        Setting s = setting();
        long budget = s == null ? machineBytes() : parsed(s);
        if (bytes > budget) throw new MemoryBudgetException(what, bytes, budget, origin(s));
    }

    /**
     * The refusal of {@code bytes} for {@code what} by the JVM itself (an {@link OutOfMemoryError} from reserving
     * off-heap or heap memory, which leaves nothing allocated): the typed error callers get instead. Only for an
     * error from one allocation that failed whole, where nothing else can have been left half done.
     */
    public static MemoryBudgetException refused(long bytes, String what, OutOfMemoryError e) {
        Setting s = setting();
        MemoryBudgetException x = new MemoryBudgetException(what, bytes, s == null ? machineBytes() : parsed(s),
                "the JVM could not reserve it with what it holds already: " + e.getMessage() + "; see " + PROPERTY + ", -Xmx, -XX:MaxDirectMemorySize");
        // suppressed, not the cause: callers that look for an OutOfMemoryError among causes (the CLI) would report
        // the JVM's error instead of this one, which says what was asked for and what to change
        x.addSuppressed(e);
        return x;
    }

    /**
     * The size {@code text} describes: bytes, or a number with a suffix k, m, g or t (powers of 1024,
     * case-insensitive, an optional trailing b).
     *
     * @param source the setting's name, for the message
     * @throws IllegalArgumentException if {@code text} is not a positive size that fits a long
     */
    public static long parse(String text, String source) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.endsWith("b")) t = t.substring(0, t.length() - 1);
        int shift = 0;
        if (!t.isEmpty()) {
            shift = switch (t.charAt(t.length() - 1)) {
                case 'k' -> 10;
                case 'm' -> 20;
                case 'g' -> 30;
                case 't' -> 40;
                default -> 0;
            };
            if (shift != 0) t = t.substring(0, t.length() - 1);
        }
        long n;
        try {
            n = Long.parseLong(t);
        } catch (NumberFormatException e) {
            throw bad(text, source);
        }
        if (n <= 0 || n > Long.MAX_VALUE >> shift) throw bad(text, source);
        return n << shift;
    }

    private static IllegalArgumentException bad(String text, String source) {
        return new IllegalArgumentException(source + "='" + text + "' is not a memory size: give a positive number of bytes, "
                + "optionally with a suffix k, m, g or t (e.g. 512m, 8g)");
    }

    /** A size as bytes with a readable binary unit: {@code 68719476736 bytes (64 GiB)}. */
    static String format(long bytes) {
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        if (bytes < 1024) return bytes + " bytes";
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return bytes + " bytes (" + (v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v)) + " " + units[u] + ")";
    }

    private record Setting(String name, String text) {}

    private static Setting setting() {
        String p = System.getProperty(PROPERTY);
        if (p != null && !p.isBlank()) return new Setting("-D" + PROPERTY, p);
        String e = System.getenv(ENV);
        return e != null && !e.isBlank() ? new Setting(ENV, e) : null;
    }

    private static long parsed(Setting s) {
        Parsed last = lastParsed;
        if (last != null && last.text.equals(s.text)) return last.bytes;
        long b = parse(s.text, s.name);
        lastParsed = new Parsed(s.text, b);
        return b;
    }

    private static String origin(Setting s) {
        return s != null ? "set by " + s.name + "=" + s.text
                : "what this machine can give; set -D" + PROPERTY + " or " + ENV + " to change it";
    }

    /** The machine's figure, computed on first use (holder idiom: once, lazily, thread-safe). */
    private static final class Machine {
        static final long BYTES = compute();

        private static long compute() {
            long physical = Long.MAX_VALUE;
            try {
                if (ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os && os.getTotalMemorySize() > 0) {
                    physical = os.getTotalMemorySize();
                }
            } catch (LinkageError e) {
                // a runtime without jdk.management (a jlinked one, as carried to GPU machines): the JVM's limit alone
            }
            long offHeap = Runtime.getRuntime().maxMemory(); // the JVM's off-heap limit when the flag is not set
            try {
                long flag = Long.parseLong(ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                        .getVMOption("MaxDirectMemorySize").getValue());
                if (flag > 0) offHeap = flag;
            } catch (RuntimeException | LinkageError e) {
                // not a HotSpot JVM, or no jdk.management: the maximum heap stands in for its limit
            }
            return Math.min(physical, offHeap);
        }
    }
}
