package dev.kiln.llm.gguf;

import dev.kiln.clang.CLibrary;
import dev.kiln.clang.ClangDevice;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.WorkerPool;

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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiFunction;

/**
 * The products of decode (a few rows of x against every row of a Q8_0 or Q4_0 matrix) as C compiled by the CLANG
 * device's compiler ({@code block_products.c}, beside this class): four rows of w a pass with every vector of x loaded
 * once for the four, and four rows of x by four of w in registers for a batched step; AVX-512 or AVX2 where the CPU has
 * them, plain C elsewhere. By default the same terms as the Vector API's dot products ({@link QuantizedMatmul}), in f32,
 * reassociated; {@link #withQuantizedActivations} quantises x to Q8_0 first, as llama.cpp does. {@link
 * QuantizedMatmul#multiply(GgmlType, MemorySegment, int, int, MemorySegment, int, MemorySegment, NativeBlockProducts)}
 * calls them for up to {@value #MAX_ROWS} rows of x (up to {@value #Q8_DOT_ROWS} with x quantised where VNNI runs the int8
 * GEMM); more rows (prefill) go through the source's GEMMs ({@link #gemm}: w dequantised, or its integers kept, in packed
 * panels once per pass, x's rows in register tiles, BLIS's loops), and the other block types through the Vector API as
 * on the CPU device.
 *
 * <p>Why C: each pass prefetches the next four rows of w, which Java cannot ask for. Without it a core kept too few
 * lines in flight to stream its share of the bandwidth, in C as in Java (an Intel Xeon with AVX-512, the 16 ffn_gate
 * products of Llama-3.2-1B at decode on two cores: 12.1 GB/s in C, 12.2 through the Vector API; with it 15.9-20).
 *
 * <p>With x quantised where AVX-512 VNNI runs the products, a model's Q8_0 and Q4_0 matrices are read interleaved by 16
 * rows ({@link #interleaved}, made once on first use and held until {@link #close()}): the same sums, bit for bit.
 */
public final class NativeBlockProducts implements AutoCloseable {
    /**
     * Rows of x up to which the products run here: decode's one row, a batched decode step's rows and short prompts (four
     * rows of x against four of w in registers, {@code TILE4XR}, with AVX-512). 16 ffn_gate products of Llama-3.2-1B's
     * shapes, 2 threads, against the Vector API: Q4_0 12 rows 84 against 304 ms, 24 rows 282 against 493; Q8_0 12 rows 80
     * against 156, 24 rows 159 against 260. More rows go through the native GEMM ({@link #gemm}), where the panels of w
     * are shared by every row of x.
     */
    static final int MAX_ROWS = 24;

    private static final FunctionDescriptor PRODUCTS = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
    /** {@link #PRODUCTS} with the caller's scratch last. */
    private static final FunctionDescriptor GEMM = PRODUCTS.appendArgumentLayouts(ValueLayout.ADDRESS);
    private static final FunctionDescriptor PACK = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.ADDRESS);
    private static final FunctionDescriptor SIZE_OF_ROWS = FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
    private static final FunctionDescriptor SIZE = FunctionDescriptor.of(ValueLayout.JAVA_LONG);
    private static final FunctionDescriptor QUANTIZE = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
    /** kiln_attention(q, heads, kv_heads, hd, k, v, f16, pos, length, window, scale, out, from, to) */
    private static final FunctionDescriptor ATTENTION = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_FLOAT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
    /** (w, row bytes, k, first group, end group, out). */
    private static final FunctionDescriptor INTERLEAVE = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
    /** Rows of w interleaved together (block_products.c's I16 layout). */
    static final int INTERLEAVED_ROWS = 16;
    /**
     * Rows of x up to which products with interleaved weights are dot products (up to eight rows of x a pass over each
     * group of w, i16_rows), the GEMM above: a batched step of up to 12 slots, or a short prompt. The dot products from memory,
     * 8,192 x 2,048 Q8_0, two threads: 8 rows 12.5-14.7 GB/s, 12 rows 9.4, 16 rows 7.5; in a batched step of the
     * Llama-3.2-1B-shaped Q8_0 model, 8 slots' products took 139 ms as dots against 159 through the GEMM, 16 slots' 230
     * against 207.
     */
    static final int I16_DOT_ROWS = 12;
    private static final System.Logger LOG = System.getLogger(NativeBlockProducts.class.getName());
    private static volatile Handles loaded;

    /**
     * The library's functions: Q8_0 and Q4_0 weights with x in f32, and with x quantised to Q8_0; the GEMM of many rows
     * (x packed first, {@code kiln_gemm_pack_rows}) and its sizes.
     */
    private record Handles(MethodHandle q8_0, MethodHandle q4_0, MethodHandle q8_0Q8, MethodHandle q4_0Q8, Gemm f32, Gemm q8, boolean q8Vectorised,
                           Interleaved i16, MethodHandle attention, MethodHandle quantize) {
        /** The functions by name and signature. */
        static Handles of(BiFunction<String, FunctionDescriptor, MethodHandle> function) {
            boolean vectorised = size(function, "kiln_q8_gemm_vectorised") != 0;
            return new Handles(function.apply("kiln_q8_0_products", PRODUCTS), function.apply("kiln_q4_0_products", PRODUCTS),
                    function.apply("kiln_q8_0_q8_products", PRODUCTS), function.apply("kiln_q4_0_q8_products", PRODUCTS),
                    Gemm.of(function, "kiln_q8_0_gemm", "kiln_q4_0_gemm", "kiln_gemm_"), Gemm.of(function, "kiln_q8_0_q8_gemm", "kiln_q4_0_q8_gemm", "kiln_q8_gemm_"),
                    vectorised, new Interleaved(function.apply("kiln_q8_0_interleave16", INTERLEAVE), function.apply("kiln_q4_0_interleave16", INTERLEAVE),
                    function.apply("kiln_q8_0_q8_products_i16", PRODUCTS), function.apply("kiln_q4_0_q8_products_i16", PRODUCTS),
                    function.apply("kiln_q8_0_q8_gemm_i16", GEMM), function.apply("kiln_q4_0_q8_gemm_i16", GEMM)),
                    function.apply("kiln_attention", ATTENTION), function.apply("kiln_q8_0_quantize", QUANTIZE));
        }
    }

    /** The interleaving by 16 rows of Q8_0 and Q4_0 matrices, and the products with x quantised that read it so. */
    private record Interleaved(MethodHandle q8_0, MethodHandle q4_0, MethodHandle q8_0Products, MethodHandle q4_0Products, MethodHandle q8_0Gemm,
                               MethodHandle q4_0Gemm) {}

    /**
     * Rows of x up to which products with x quantised run as dot products where the int8 GEMM is vectorised (AVX-512
     * VNNI): from 8 rows the GEMM was faster (8,192 x 2,048 and 2,048 x 8,192, 2 threads: 8 rows 2.7 against 4.7 ms,
     * 16 rows 2.5 against 9.1), since the dot products of quantised x have no register tile of several rows. Those dot
     * products sum in the GEMM's order (sixteen rows of w a pass, a block's exact integer sum a lane), so a row gets the
     * same bits on either side of this bound.
     */
    static final int Q8_DOT_ROWS = 7;
    private static final AtomicBoolean SLOW_Q8_LOGGED = new AtomicBoolean();

    /** Whether the int8 GEMM of this library runs in vector registers (AVX-512 VNNI). */
    boolean q8Vectorised() { return handles.q8Vectorised; }

    /** Rows of x up to which the products are dot products ({@link #products}), with w {@link #interleaved} or not; the GEMM above. */
    private int dotRows(boolean interleaved) {
        return interleaved ? I16_DOT_ROWS : quantizedActivations && handles.q8Vectorised ? Q8_DOT_ROWS : MAX_ROWS;
    }

    /**
     * One of the library's GEMMs (x in f32, or quantised to Q8_0): its two products, the packing of x, and its sizes, read once.
     *
     * @param packedBytes bytes of x packed, as a function of (rows, k)
     */
    private record Gemm(MethodHandle q8_0, MethodHandle q4_0, MethodHandle packRows, MethodHandle packedBytes, long scratchBytes, int panelRows) {
        static Gemm of(BiFunction<String, FunctionDescriptor, MethodHandle> function, String q8_0, String q4_0, String prefix) {
            return new Gemm(function.apply(q8_0, GEMM), function.apply(q4_0, GEMM), function.apply(prefix + "pack_rows", PACK),
                    function.apply(prefix + "packed_bytes", SIZE_OF_ROWS), size(function, prefix + "scratch_bytes"),
                    Math.toIntExact(size(function, prefix + "panel_rows")));
        }
    }

    /** What the library's function {@code name} of no arguments ({@link #SIZE}) returns. */
    private static long size(BiFunction<String, FunctionDescriptor, MethodHandle> function, String name) {
        try {
            return (long) function.apply(name, SIZE).invokeExact();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("block products: " + name + " failed: " + t, t);
        }
    }

    /** The GEMM of this mode. */
    private Gemm gemm() { return quantizedActivations ? handles.q8 : handles.f32; }

    private final Handles handles;
    private final boolean quantizedActivations;
    /** The matrices {@link #interleaved} made, in {@link #arena} (made with the first); new ones, the arena and closing are guarded by the map. */
    private final Map<List<GgufTensor>, MemorySegment> interleaved = new ConcurrentHashMap<>();
    /** The matrices graphs read interleaved, in the order they were planned ({@link #plan}); guarded by the map. */
    private final Set<List<GgufTensor>> planned = new LinkedHashSet<>();
    private Arena arena;
    private boolean closed;
    private Thread ahead; // interleaveAhead's

    private NativeBlockProducts(Handles handles, boolean quantizedActivations) {
        this.handles = handles;
        this.quantizedActivations = quantizedActivations;
    }

    /** The products of {@link #source()} compiled some other way (tests compile its portable paths so). */
    static NativeBlockProducts of(SymbolLookup library) {
        return new NativeBlockProducts(Handles.of((name, signature) -> Linker.nativeLinker().downcallHandle(library.findOrThrow(name), signature)), false);
    }

    /**
     * These products with x quantised to Q8_0 blocks first ({@code true}), as llama.cpp multiplies Q8_0 and Q4_0
     * weights, or kept in f32 ({@code false}, the default): see {@link #quantizeQ8_0}.
     */
    public NativeBlockProducts withQuantizedActivations(boolean on) { return new NativeBlockProducts(handles, on); }

    /** Whether x is quantised to Q8_0 before the products. */
    public boolean quantizedActivations() { return quantizedActivations; }

    /**
     * Whether the products with an {@code n}-row {@code type} matrix read it interleaved by {@value #INTERLEAVED_ROWS}
     * rows ({@link #interleaved}): Q8_0 and Q4_0 of at least 16 rows, with x quantised, where AVX-512 VNNI runs the
     * products. Each block of 16 rows is then one stream of w whose every vpdpbusd sums four products of each row into
     * the row's own lane: decode's dot products need no lane reductions or gathers of scales (from cache, one thread: Q4_0
     * 11.5-16.3 against 21-26 GB/s), and the GEMM's panels are the interleaved vectors as they are.
     */
    boolean interleaves(GgmlType type, int n) {
        return quantizedActivations && handles.q8Vectorised && n >= INTERLEAVED_ROWS && (type == GgmlType.Q8_0 || type == GgmlType.Q4_0);
    }

    /**
     * {@code t}'s matrix ({@code w}: its rows of k values) interleaved by {@value #INTERLEAVED_ROWS} rows, made on the first
     * call for {@code t} (split over the workers) and the same segment after, until {@link #close()}; the products read it
     * when called with {@code interleaved}. Rows past the last multiple of 16 stay as they are. A mapped {@code w} is
     * unloaded after ({@link MemorySegment#unload()}), so that the copy does not double the resident memory.
     *
     * @throws IllegalStateException if these products are closed
     */
    MemorySegment interleaved(GgufTensor t, MemorySegment w, int k) { return interleaved(List.of(t), List.of(w), k); }

    /**
     * The matrices {@code parts} (their bytes {@code ws}, k values a row, one type) stacked by rows, as one matrix
     * {@linkplain #interleaved(GgufTensor, MemorySegment, int) interleaved}: the products of x with every part in one
     * call (a layer's q, k and v, or its gate and up). Every part but the last must have a multiple of 16 rows, so that
     * each is whole groups.
     *
     * @throws IllegalArgumentException if the parts differ in type or row length, or one but the last is not whole groups
     * @throws IllegalStateException    if these products are closed
     */
    MemorySegment interleaved(List<GgufTensor> parts, List<MemorySegment> ws, int k) { return interleaved(parts, ws, k, true); }

    /** As {@link #interleaved(List, List, int)}, a new copy split over the workers ({@code split}) or made by the caller alone. */
    private MemorySegment interleaved(List<GgufTensor> parts, List<MemorySegment> ws, int k, boolean split) {
        MemorySegment made = interleaved.get(parts); // made ones need no lock: one may be under way for another matrix
        if (made != null) return made;
        GgmlType type = parts.getFirst().type();
        for (int p = 0; p < parts.size(); p++) {
            GgufTensor t = parts.get(p);
            if (t.type() != type || t.rowLength() != k || p < parts.size() - 1 && t.rows() % INTERLEAVED_ROWS != 0) {
                throw new IllegalArgumentException("native block products: cannot stack " + t.name() + " (" + t.type() + ", " + t.rows() + " rows of "
                        + t.rowLength() + ") after " + parts.getFirst().name() + " (" + type + ", rows of " + k + "; every part but the last whole groups of "
                        + INTERLEAVED_ROWS + " rows)");
            }
        }
        synchronized (interleaved) {
            if (closed) throw new IllegalStateException("native block products: closed (with their model); cannot interleave " + parts.getFirst().name());
            MemorySegment done = interleaved.get(parts);
            if (done != null) return done;
            if (arena == null) arena = Arena.ofShared();
            long rowBytes = type.rowBytes(k), total = 0;
            for (GgufTensor t : parts) total += t.rows() * rowBytes;
            MemorySegment out = arena.allocate(total, 64);
            MethodHandle f = type == GgmlType.Q8_0 ? handles.i16.q8_0() : handles.i16.q4_0();
            long at = 0;
            for (int p = 0; p < parts.size(); p++) {
                GgufTensor t = parts.get(p);
                MemorySegment w = ws.get(p), part = out.asSlice(at, t.rows() * rowBytes);
                long bytes = part.byteSize(), groups = t.rows() / INTERLEAVED_ROWS, head = groups * INTERLEAVED_ROWS * rowBytes;
                try (Arena staging = w.isNative() ? null : Arena.ofConfined()) {
                    MemorySegment wn = nativeOf(w, bytes, staging);
                    WorkerPool.forRanges(groups, split ? WorkerPool.balancedShares(groups) : 1, (from, to) -> {
                        try {
                            f.invokeExact(wn, rowBytes, (long) k, from, to, part);
                        } catch (RuntimeException | Error e) {
                            throw e;
                        } catch (Throwable e) {
                            throw new IllegalStateException("native block products: interleaving " + t.name() + " failed: " + e, e);
                        }
                    });
                    MemorySegment.copy(wn, head, part, head, bytes - head);
                }
                // the products read only the copy now: the file's pages read for it leave the process's resident set
                // (they stay in the page cache, and an embedding lookup of a tied matrix faults its rows back in)
                if (w.isMapped()) w.unload();
                at += bytes;
            }
            interleaved.put(List.copyOf(parts), out);
            return out;
        }
    }

    /**
     * Notes that a graph's products read {@code parts} {@link #interleaved(List, List, int) interleaved}, for {@link
     * #interleaveAhead}: in the order graphs are built, which is the order a prompt reads them in.
     */
    void plan(List<GgufTensor> parts) {
        synchronized (interleaved) {
            planned.add(List.copyOf(parts));
        }
    }

    /**
     * Starts making the interleaved copies of every matrix {@link #plan planned} so far, on a thread of its own and one
     * at a time, while the caller goes on: a model's start (its graph's compilation, its tokenizer) leaves one of two
     * cores idle, and the copies of a 1B model take 0.7-1.1 s of its first prompt otherwise (fresh memory is slow to
     * fault in on a virtual machine). A product that needs a copy not made yet makes it itself, after the one under way.
     * The thread stops at {@link #close()}, and on any failure, which the product that needs that copy then reports.
     */
    public void interleaveAhead() {
        synchronized (interleaved) {
            if (closed || ahead != null || planned.isEmpty()) return;
            List<List<GgufTensor>> todo = List.copyOf(planned);
            ahead = Thread.ofPlatform().daemon().name("kiln-interleave").start(() -> {
                for (List<GgufTensor> parts : todo) {
                    try {
                        interleaved(parts, parts.stream().map(GgufTensor::data).toList(), parts.getFirst().rowLength(), false);
                    } catch (RuntimeException e) {
                        return;
                    }
                }
            });
        }
    }

    /**
     * Causal grouped-query attention of {@code rows} rows of q ((rows, heads, headDim) f32) over one layer's caches
     * ((context, kvHeads * headDim), f32 or f16), as a language model's graph writes it with tensors: for each row, the
     * softmax of {@code scale} times its head's dot products with the keys at its position {@code positions[r]} and
     * before (within {@code window} when positive; none at or past {@code length}), weighing the values. Every cache row
     * is read once for the heads that share it, in order; the sums are in an order of their own that does not depend on
     * the other rows (block_products.c, kiln_attention). Split over the workers by (row, key/value head). All segments
     * are native; out is (rows, heads, headDim) f32.
     */
    public void attention(MemorySegment q, int rows, int heads, int kvHeads, int headDim, MemorySegment keys, MemorySegment values, boolean f16,
                          MemorySegment positions, int length, int window, float scale, MemorySegment out) {
        long units = (long) rows * kvHeads;
        int parts = (long) rows * heads * length * headDim < 1 << 16 || WorkerPool.size() <= 1 ? 1 : WorkerPool.balancedShares(units);
        WorkerPool.forRanges(units, parts, (from, to) -> {
            try {
                handles.attention.invokeExact(q, (long) heads, (long) kvHeads, (long) headDim, keys, values, f16 ? 1L : 0L, positions, (long) length,
                        (long) window, scale, out, from, to);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("native attention failed: " + t, t);
            }
        });
    }

    /** {@link #interleaveAhead}'s thread, if it started one. */
    Optional<Thread> ahead() {
        synchronized (interleaved) {
            return Optional.ofNullable(ahead);
        }
    }

    /** The interleaved copy of {@code parts}, if one is made. */
    Optional<MemorySegment> made(List<GgufTensor> parts) { return Optional.ofNullable(interleaved.get(parts)); }

    /** Frees the matrices {@link #interleaved} made (after the one under way, if any); products must not read them after. */
    @Override
    public void close() {
        synchronized (interleaved) {
            if (closed) return;
            closed = true;
            interleaved.clear();
            if (arena != null) arena.close();
        }
    }

    /**
     * The native products for graphs on {@code device}: present on the CLANG device (compiled on first use, then from
     * its kernel cache), empty on the others.
     *
     * @throws IllegalStateException if the CLANG device's compiler fails on the source
     */
    public static Optional<NativeBlockProducts> forDevice(Device device) {
        if (!(device instanceof ClangDevice clang)) return Optional.empty();
        Handles h = loaded;
        if (h == null) {
            synchronized (NativeBlockProducts.class) {
                if (loaded == null) {
                    CLibrary library = clang.library(source());
                    loaded = Handles.of(library::function);
                    LOG.log(System.Logger.Level.DEBUG, "CLANG: Q8_0 and Q4_0 products run as native code (dot products up to " + MAX_ROWS
                            + " rows, a GEMM above); the other block types through the Vector API");
                }
                h = loaded;
            }
        }
        return Optional.of(new NativeBlockProducts(h, false));
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

    /** Whether products of {@code rows} rows of x with a {@code type} matrix run here as dot products ({@link #products}). */
    boolean handles(GgmlType type, int rows) {
        return rows <= dotRows(false) && (type == GgmlType.Q8_0 || type == GgmlType.Q4_0);
    }

    /**
     * Whether products of {@code rows} rows of x with a {@code type} matrix run here as a GEMM ({@link #gemm}): more rows
     * than the dot products take (prefill; with x quantised, from {@value #Q8_DOT_ROWS} + 1 rows where VNNI runs it), Q8_0 and Q4_0. With {@link #quantizedActivations}, x is quantised to Q8_0
     * there too and each block's sum is the exact sum of integer products (AVX-512 VNNI where the CPU has it).
     */
    boolean handlesGemm(GgmlType type, int rows) { return handlesGemm(type, rows, false); }

    /** {@link #handlesGemm(GgmlType, int)} with w {@link #interleaved} or not: interleaved, from {@value #I16_DOT_ROWS} + 1 rows. */
    boolean handlesGemm(GgmlType type, int rows, boolean interleaved) {
        return rows > dotRows(interleaved) && (type == GgmlType.Q8_0 || type == GgmlType.Q4_0);
    }

    /** Rows of w in one of the GEMM's panels: the ranges of {@link #gemm} are best multiples of it. */
    int panelRows() { return gemm().panelRows(); }

    /** Bytes of scratch one {@link #gemm} call needs (its own: one per thread). */
    long scratchBytes() { return gemm().scratchBytes(); }

    /**
     * The first {@code rows} rows of x (native, k floats each) packed for {@link #gemm} (quantised to Q8_0 as {@link
     * #quantizeQ8_0} does, in C, when {@link #quantizedActivations}), in a new segment of {@code arena}.
     */
    MemorySegment packRows(MemorySegment x, int rows, int k, Arena arena) {
        Gemm g = gemm();
        try {
            MemorySegment packed = arena.allocate((long) g.packedBytes().invokeExact((long) rows, (long) k), 64);
            g.packRows().invokeExact(x, (long) rows, (long) k, packed);
            return packed;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native block products: packing x failed: " + t, t);
        }
    }

    /**
     * Rows {@code [from, to)} of w with the {@code rows} rows of x packed by {@link #packRows} into out (rows, n), through
     * {@code scratch} ({@link #scratchBytes}); the caller has checked the sizes. All are native segments. With {@code
     * interleaved}, w is {@link #interleaved} (x quantised).
     */
    void gemm(GgmlType type, MemorySegment w, long rowBytes, int from, int to, int k, MemorySegment packed, int rows, int n, MemorySegment out,
              MemorySegment scratch, boolean interleaved) {
        if (quantizedActivations && !handles.q8Vectorised && SLOW_Q8_LOGGED.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.INFO, "CLANG: the products of many rows with x quantised to Q8_0 run in plain C on this CPU (no AVX-512"
                    + " VNNI): exact, but slower than with x in f32");
        }
        MethodHandle f = interleaved ? (type == GgmlType.Q8_0 ? handles.i16.q8_0Gemm() : handles.i16.q4_0Gemm())
                : type == GgmlType.Q8_0 ? gemm().q8_0() : gemm().q4_0();
        try {
            f.invokeExact(w, rowBytes, (long) k, packed, (long) rows, out, (long) n, (long) from, (long) to, scratch);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native block products: the GEMM failed: " + t, t);
        }
    }

    /**
     * Rows {@code [from, to)} of w with the first {@code rows} rows of x into out (rows, n); the caller has checked the
     * sizes. All three are native segments; x holds Q8_0 blocks ({@link #quantizeQ8_0}) when {@link #quantizedActivations}.
     * With {@code interleaved}, w is {@link #interleaved} (x quantised).
     */
    void products(GgmlType type, MemorySegment w, long rowBytes, int from, int to, int k, MemorySegment x, int rows, int n, MemorySegment out,
                  boolean interleaved) {
        MethodHandle f = interleaved ? (type == GgmlType.Q8_0 ? handles.i16.q8_0Products() : handles.i16.q4_0Products()) : quantizedActivations ? (type == GgmlType.Q8_0 ? handles.q8_0Q8 : handles.q4_0Q8) : type == GgmlType.Q8_0 ? handles.q8_0 : handles.q4_0;
        try {
            f.invokeExact(w, rowBytes, (long) k, x, (long) rows, out, (long) n, (long) from, (long) to);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native block products failed: " + t, t);
        }
    }

    /**
     * The first {@code count} floats of {@code x} (whole rows of a multiple of 32) as Q8_0 blocks in a new native segment
     * (an automatic arena: freed when unreachable), as llama.cpp quantises activations: per 32 values
     * {@code d = max|x| / 127} rounded to f16, and each value {@code x * 127 / max|x|} rounded to the nearest integer
     * (ties to even), in [-127, 127]; a block whose d rounds to 0 (max|x| below about 3.8e-6, zeros among them) has zero
     * bytes, and a block with a NaN a NaN scale and zero bytes. The rule in Java: the library's quantiser ({@link
     * #quantized}, and the int8 GEMM's packing of x) is held to these bytes.
     */
    static MemorySegment quantizeQ8_0(MemorySegment x, long count) {
        long blocks = count / 32;
        MemorySegment q = Arena.ofAuto().allocate(blocks * 34, 64);
        float[] v = new float[32];
        for (long b = 0; b < blocks; b++) {
            MemorySegment.copy(x, ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * 32 * b, v, 0, 32);
            float max = 0;
            for (float f : v) max = Math.max(max, Math.abs(f));
            short d = Float.floatToFloat16(max / 127f);
            // a scale that rounds to 0 in f16 zeroes the block (its products are 0 whatever q is; 127 / max could overflow)
            float inverse = (d & 0x7fff) == 0 ? 0 : 127f / max;
            long at = 34 * b;
            q.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, d);
            for (int i = 0; i < 32; i++) q.set(ValueLayout.JAVA_BYTE, at + 2 + i, (byte) Math.rint(v[i] * inverse));
        }
        return q;
    }

    /**
     * The first {@code count} floats of native {@code x} (whole blocks of 32) as Q8_0 blocks with {@link #quantizeQ8_0}'s bits,
     * by the library ({@code kiln_q8_0_quantize}: vectorised where AVX-512 runs; Java's loop took about 0.8 ms of a
     * Llama-3.2-1B token), into a buffer of the calling thread that its next call overwrites: the caller uses it within its
     * product and, while it waits for that product's shares, runs no other.
     */
    MemorySegment quantized(MemorySegment x, long count) {
        long blocks = count / 32, bytes = blocks * 34;
        if (x.byteSize() < 4 * blocks * 32) throw new IllegalArgumentException("quantize: " + count + " floats, x has " + x.byteSize() + " bytes");
        MemorySegment buffer = QUANTIZED.get();
        if (buffer.byteSize() < bytes) {
            buffer = Arena.ofAuto().allocate(Math.max(bytes, 2 * buffer.byteSize()), 64);
            QUANTIZED.set(buffer);
        }
        try {
            handles.quantize.invokeExact(x, blocks, buffer);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native block products: quantising x failed: " + t, t);
        }
        return buffer.asSlice(0, bytes);
    }

    private static final ThreadLocal<MemorySegment> QUANTIZED = ThreadLocal.withInitial(() -> MemorySegment.NULL);

    /** {@code s}, or a native copy of its first {@code bytes} in {@code arena} when it lives on the Java heap. */
    static MemorySegment nativeOf(MemorySegment s, long bytes, Arena arena) {
        if (s.isNative()) return s;
        MemorySegment copy = arena.allocate(bytes, 64);
        MemorySegment.copy(s, 0, copy, 0, bytes);
        return copy;
    }
}
