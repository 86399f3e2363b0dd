package dev.kiln.llm.gguf;

import dev.kiln.clang.CLibrary;
import dev.kiln.clang.ClangDevice;
import dev.kiln.runtime.Device;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The dot products of decode (a few rows of x against every row of a Q8_0 or Q4_0 matrix) as C compiled by the CLANG
 * device's compiler ({@code block_products.c}, beside this class): four rows of w a pass with every vector of x loaded
 * once for the four, AVX-512 or AVX2 where the CPU has them, plain C elsewhere. The same terms as the Vector API's dot
 * products ({@link QuantizedMatmul}), in f32, reassociated. {@link QuantizedMatmul#multiply(GgmlType, MemorySegment, int,
 * int, MemorySegment, int, MemorySegment, NativeBlockProducts)} calls them for up to {@value #Q8_0_MAX_ROWS} rows of x
 * (Q4_0: {@value #Q4_0_MAX_ROWS}); more rows (prefill), and the other block types, run through the Vector API as on the
 * CPU device.
 *
 * <p>Why: on an Intel Xeon with AVX-512 the Vector API's Q8_0 dot product reached 8.3 GB/s on one core where the same
 * loop in C reached 11.7 (a matrix of 8,192 x 2,048): decode is memory-bound only if a core keeps up with its share of
 * the bandwidth.
 */
public final class NativeBlockProducts {
    /**
     * Rows of x up to which the products run here, as the Vector API's dot products do: decode's one row, and a batched
     * decode step's rows (four rows of x against four of w in registers, {@code TILE4X4}, with AVX-512). More rows go
     * through the GEMM's tiles, where dequantised panels are shared by all of them.
     */
    static final int Q8_0_MAX_ROWS = 24, Q4_0_MAX_ROWS = 8;

    private static final FunctionDescriptor PRODUCTS = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
    private static final String Q8_0 = "kiln_q8_0_products", Q4_0 = "kiln_q4_0_products";
    private static final System.Logger LOG = System.getLogger(NativeBlockProducts.class.getName());
    private static volatile NativeBlockProducts loaded;

    private final MethodHandle q8_0, q4_0;

    private NativeBlockProducts(MethodHandle q8_0, MethodHandle q4_0) {
        this.q8_0 = q8_0;
        this.q4_0 = q4_0;
    }

    private static NativeBlockProducts of(CLibrary library) {
        return new NativeBlockProducts(library.function(Q8_0, PRODUCTS), library.function(Q4_0, PRODUCTS));
    }

    /** The products of {@link #source()} compiled some other way (tests compile its portable paths so). */
    static NativeBlockProducts of(SymbolLookup library) {
        Linker linker = Linker.nativeLinker();
        return new NativeBlockProducts(linker.downcallHandle(library.findOrThrow(Q8_0), PRODUCTS), linker.downcallHandle(library.findOrThrow(Q4_0), PRODUCTS));
    }

    /**
     * The native products for graphs on {@code device}: present on the CLANG device (compiled on first use, then from
     * its kernel cache), empty on the others.
     *
     * @throws IllegalStateException if the CLANG device's compiler fails on the source
     */
    public static Optional<NativeBlockProducts> forDevice(Device device) {
        if (!(device instanceof ClangDevice clang)) return Optional.empty();
        NativeBlockProducts p = loaded;
        if (p == null) {
            synchronized (NativeBlockProducts.class) {
                if (loaded == null) {
                    loaded = of(clang.library(source()));
                    LOG.log(System.Logger.Level.DEBUG, "CLANG: Q8_0 products of up to " + Q8_0_MAX_ROWS + " rows and Q4_0 of up to "
                            + Q4_0_MAX_ROWS + " run as native code; more rows and the other block types through the Vector API");
                }
                p = loaded;
            }
        }
        return Optional.of(p);
    }

    /** The C source, a resource beside this class. */
    static String source() {
        try (InputStream in = NativeBlockProducts.class.getResourceAsStream("block_products.c")) {
            if (in == null) throw new IllegalStateException("block_products.c is missing from kiln-llm's resources");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read block_products.c: " + e.getMessage(), e);
        }
    }

    /** Whether products of {@code rows} rows of x with a {@code type} matrix run here. */
    boolean handles(GgmlType type, int rows) {
        return type == GgmlType.Q8_0 ? rows <= Q8_0_MAX_ROWS : type == GgmlType.Q4_0 && rows <= Q4_0_MAX_ROWS;
    }

    /**
     * Rows {@code [from, to)} of w with the first {@code rows} rows of x into out (rows, n); the caller has checked the
     * sizes. All three are native segments.
     */
    void products(GgmlType type, MemorySegment w, long rowBytes, int from, int to, int k, MemorySegment x, int rows, int n, MemorySegment out) {
        try {
            (type == GgmlType.Q8_0 ? q8_0 : q4_0).invokeExact(w, rowBytes, (long) k, x, (long) rows, out, (long) n, (long) from, (long) to);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native block products failed: " + t, t);
        }
    }

    /** {@code s}, or a native copy of its first {@code bytes} in {@code arena} when it lives on the Java heap. */
    static MemorySegment nativeOf(MemorySegment s, long bytes, Arena arena) {
        if (s.isNative()) return s;
        MemorySegment copy = arena.allocate(bytes, 64);
        MemorySegment.copy(s, 0, copy, 0, bytes);
        return copy;
    }
}
