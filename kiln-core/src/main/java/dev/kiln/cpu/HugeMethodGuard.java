package dev.kiln.cpu;

import com.sun.management.HotSpotDiagnosticMXBean;
import dev.kiln.codegen.KernelProgram;

import java.lang.management.ManagementFactory;
import java.util.List;

/**
 * Keeps generated kernels within what HotSpot compiles. It compiles no method above 8000 bytes of bytecode (unless the
 * JVM runs with {@code -XX:-DontCompileHugeMethods}), and such a kernel runs in the interpreter for ever: MobileNet-V2's
 * first depthwise convolution as loops took 125 ms a run instead of 2.3 ms. The renderer's estimate of a kernel's size
 * bounds its loop expansions, but it can fall short; so a source long enough to come near the limit is compiled and
 * measured, and rendered again with half the expansion budget while its largest method is above the limit. A kernel
 * that stays above it even without expansions (a huge fused body) is logged once, with the flag that lifts the limit.
 */
final class HugeMethodGuard {
    /** HotSpot's {@code HugeMethodLimit} (a develop flag: fixed in product builds). */
    static final int LIMIT = 8000;
    /**
     * Sources shorter than this are far below the limit (4 to 6 characters of source per byte of bytecode on the test
     * models' kernels), so only longer ones are compiled to measure: the cost stays off almost every kernel.
     */
    static final int SUSPECT_CHARS = 24_000;
    /** The smallest expansion budget tried. */
    private static final long MIN_BUDGET = 250;
    private static final boolean ENFORCED = dontCompileHugeMethods();
    private static final dev.kiln.ir.OnceLog LOG = new dev.kiln.ir.OnceLog(HugeMethodGuard.class);

    private HugeMethodGuard() {}

    /** {@code program} rendered as class {@code className}, its largest method within {@link #LIMIT} where expansions allow. */
    static String render(KernelProgram program, String className, int vectorBytes) {
        return render(program, className, vectorBytes, LIMIT, SUSPECT_CHARS, ENFORCED);
    }

    /** {@link #render(KernelProgram, String, int)} with the limit, the length worth measuring and whether it applies given. */
    static String render(KernelProgram program, String className, int vectorBytes, int limit, int suspectChars, boolean enforced) {
        long budget = LoopExpansion.MAX_BYTES;
        String source = JavaRenderer.render(program, className, vectorBytes, budget);
        if (!enforced || source.length() < suspectChars) return source;
        while (true) {
            int bytes = largestMethodBytes(source, className);
            if (bytes <= limit) return source;
            if (budget <= MIN_BUDGET) {
                String message = "kernel " + program.name() + " has a method of " + bytes + " bytes of bytecode, above HotSpot's limit of "
                        + limit + " even with its loops unexpanded: it runs interpreted (slowly) unless the JVM runs with -XX:-DontCompileHugeMethods";
                LOG.warning(message);
                return source;
            }
            budget /= 2;
            source = JavaRenderer.render(program, className, vectorBytes, budget);
        }
    }

    private static int largestMethodBytes(String source, String className) {
        byte[] bytes = JavaKernelCompiler.compile(List.of(new JavaKernelCompiler.Source(className, source))).classes().getFirst().classBytes();
        return JavaKernelCompiler.largestMethodBytes(bytes);
    }

    private static boolean dontCompileHugeMethods() {
        try {
            HotSpotDiagnosticMXBean hotspot = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            return hotspot == null || !"false".equals(hotspot.getVMOption("DontCompileHugeMethods").getValue());
        } catch (IllegalArgumentException | UnsupportedOperationException | NoClassDefFoundError e) {
            // not HotSpot, the flag unknown, or a runtime image without jdk.management (on the class path):
            // measuring costs little, so assume the limit
            return true;
        }
    }
}
