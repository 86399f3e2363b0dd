package dev.kiln.clang;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.IndexCheckFailure;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Slot;
import dev.kiln.runtime.KernelRunner;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A kernel compiled to native code: its C source (shown to users), its exported symbol and its address,
 * called through one shared downcall handle (without a thread-state transition for calls of at most
 * {@link #SHORT_CALL_WORK} statement executions). C checks nothing, so {@link #run} checks everything the
 * generated code relies on before every call: the range, every buffer (alive, accessible from this
 * thread, large enough, aligned to its element size, off-heap and writable if the kernel stores to it)
 * and every variable's bounds; an index that range analysis could not bound is checked in the kernel and
 * reported after the call. Bad input is an exception, never a stray access. Inputs on the Java heap
 * (INTERP's buffers, read by a mixed-device graph) are copied off-heap for the call: native code cannot
 * hold a pointer into the heap. A call allocates nothing unless it stages such an input.
 */
public final class CKernel implements KernelRunner {
    private final KernelProgram program;
    private final String name;
    private final String symbol;
    private final String source;
    private final MemorySegment function;
    private final long extent;
    private final long workPerIteration;
    private final List<Slot> params;
    private final long[] bytes;
    private final long[] sizes;
    private final long[] alignMasks;
    private final List<Variable> variables;
    private final long[] minima;
    private final long[] maxima;
    private final boolean[] written;

    /** Per thread ({@code owner}): the native array of buffer addresses, the status block and the variables' values. */
    private record Scratch(Thread owner, MemorySegment pointers, MemorySegment status, MemorySegment values) {}

    private static final ThreadLocal<Scratch> SCRATCH = new ThreadLocal<>();

    // The scratch of the thread that called last, large enough for this kernel: a plan calling again from the
    // same thread skips the thread-local lookup. Another thread sees another owner and takes its own (the
    // record's fields are final, so a racing read sees a whole record).
    private Scratch recent;

    /**
     * Statement executions a call may run with {@link NativeLibrary#SHORT_CALL} (no thread-state
     * transition): at a few nanoseconds each, tens of microseconds at most, as long as such a call may hold
     * off the GC. The transition costs about as much as a tiny kernel's loop; on a longer call it is noise.
     */
    static final long SHORT_CALL_WORK = 1 << 12;

    /**
     * Binds {@code program}'s compiled function.
     *
     * @param symbol   the exported C function
     * @param source   its C source
     * @param function its address ({@link NativeLibrary#address}), called with the signature {@link NativeLibrary#KERNEL}
     */
    public CKernel(KernelProgram program, String symbol, String source, MemorySegment function) {
        if (!function.isNative() || function.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("kernel " + program.name() + ": " + function + " is not a native function address");
        }
        this.program = program;
        this.name = program.name();
        this.symbol = symbol;
        this.source = source;
        this.function = function;
        this.extent = program.outerExtent();
        this.workPerIteration = Math.max(1, Heuristics.work(program.body(), 1) / Math.max(1, extent));
        this.params = program.params();
        this.variables = program.variables();
        this.minima = variables.stream().mapToLong(Variable::min).toArray();
        this.maxima = variables.stream().mapToLong(Variable::max).toArray();
        this.bytes = new long[params.size()];
        this.alignMasks = new long[params.size()];
        this.sizes = program.sizes().stream().mapToLong(Long::longValue).toArray();
        for (int i = 0; i < bytes.length; i++) {
            DType t = params.get(i).dtype();
            bytes[i] = t.byteSize(program.sizes().get(i));
            int item = t.isPacked() ? 1 : t.itemSize();
            if (Integer.bitCount(item) != 1) throw new IllegalStateException("kernel " + name + ": element size " + item + " is not a power of two");
            alignMasks[i] = item - 1;
        }
        Set<Slot> stored = new HashSet<>();
        stores(program.body(), stored);
        this.written = new boolean[params.size()];
        for (int i = 0; i < written.length; i++) written[i] = stored.contains(params.get(i));
    }

    private static void stores(Stmt s, Set<Slot> into) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(x -> stores(x, into));
            case Stmt.Loop l -> stores(l.body(), into);
            case Stmt.Store st -> into.add(st.param());
            default -> { }
        }
    }

    /**
     * Renders {@code programs}, compiles them into one shared object with {@code compiler} and loads it
     * (no caching: the device goes through its kernel cache instead).
     *
     * @throws IllegalStateException if the generated C does not compile (a Kiln bug)
     */
    public static List<CKernel> compile(List<KernelProgram> programs, CCompiler compiler) {
        List<String> symbols = new ArrayList<>(), functions = new ArrayList<>();
        Set<String> taken = new HashSet<>();
        for (KernelProgram p : programs) {
            String base = "k_" + p.name().replaceAll("[^A-Za-z0-9_]", "_");
            String s = base;
            for (int i = 2; !taken.add(s); i++) s = base + "_" + i;
            symbols.add(s);
            functions.add(CRenderer.render(p, s));
        }
        NativeLibrary lib = NativeLibrary.load(compiler.compileShared(CRenderer.translationUnit(functions)));
        List<CKernel> out = new ArrayList<>();
        for (int i = 0; i < programs.size(); i++) {
            out.add(new CKernel(programs.get(i), symbols.get(i), functions.get(i), lib.address(symbols.get(i))));
        }
        return out;
    }

    public String name() { return name; }

    /** The exported C function. */
    public String symbol() { return symbol; }

    /** The C source of the function (the shared prelude is {@link CRenderer#prelude()}). */
    public String source() { return source; }

    /** The iterations {@code [0, extent)} that {@code start} and {@code end} select ({@link KernelProgram#outerExtent}). */
    public long extent() { return extent; }

    /**
     * Runs iterations {@code [start, end)} of the kernel over {@code bufs} (output first) with the values
     * of its variables in {@code vars}.
     *
     * @throws IndexOutOfBoundsException if the range is not within {@code [0, extent]}, or the kernel indexed a
     *                                   buffer out of range (a lowering bug; the access was skipped)
     * @throws IndexCheckFailure         if an index from data failed its check (the kernel ran to its end, reading
     *                                   nothing out of bounds; its output is not to be used)
     * @throws IllegalArgumentException  if the number of buffers or values is wrong, a buffer is too small or
     *                                   misaligned, a buffer the kernel writes is on the Java heap or read-only,
     *                                   or a variable's value is outside its bounds
     * @throws IllegalStateException     if a buffer's memory has been freed
     */
    @Override
    public void run(MemorySegment[] bufs, long[] vars, long start, long end) {
        runChecked(bufs, vars, start, end, checkAll(bufs, vars, start, end));
    }

    /** Everything {@link #run} checks; returns whether an input is on the Java heap (and must be staged). */
    boolean checkAll(MemorySegment[] bufs, long[] vars, long start, long end) {
        checkShape(bufs, vars, start, end);
        boolean heap = false;
        for (int i = 0; i < bufs.length; i++) heap |= check(i, bufs[i]);
        checkVariables(vars);
        return heap;
    }

    /**
     * This kernel for the buffers of one prepared step: what cannot change for the same segments is checked
     * on the first call only ({@link BoundCKernel}).
     */
    @Override
    public KernelRunner bind(MemorySegment[] buffers) { return new BoundCKernel(this, buffers); }

    /** Checks the range and the numbers of buffers and values. */
    void checkShape(MemorySegment[] bufs, long[] vars, long start, long end) {
        Objects.checkFromToIndex(start, end, extent);
        if (bufs.length != params.size()) {
            throw new IllegalArgumentException("kernel " + name + " takes " + params.size() + " buffers, got " + bufs.length);
        }
        if (vars.length != variables.size()) {
            throw new IllegalArgumentException("kernel " + name + " takes " + variables.size() + " variable values, got " + vars.length);
        }
    }

    /** Checks every variable's value against its bounds. */
    void checkVariables(long[] vars) {
        for (int i = 0; i < vars.length; i++) {
            if (vars[i] < minima[i] || vars[i] > maxima[i]) {
                throw new IllegalArgumentException("kernel " + name + ": variable '" + variables.get(i).name() + "' bound to " + vars[i]
                        + ", outside its range [" + minima[i] + ", " + maxima[i] + "]");
            }
        }
    }

    /** Runs checked buffers and values; {@code heap}: some input is on the Java heap and is staged off-heap. */
    void runChecked(MemorySegment[] bufs, long[] vars, long start, long end, boolean heap) {
        if (start == end) return;
        if (!heap) {
            call(bufs, vars, start, end);
            return;
        }
        // inputs on the Java heap (another device's buffers) are read from off-heap copies
        try (Arena staging = Arena.ofConfined()) {
            MemorySegment[] staged = bufs.clone();
            for (int i = 0; i < bufs.length; i++) {
                if (!bufs[i].isNative()) staged[i] = staging.allocate(Math.max(1, bytes[i]), 64).copyFrom(bufs[i].asSlice(0, bytes[i]));
            }
            call(staged, vars, start, end);
        }
    }

    private void call(MemorySegment[] bufs, long[] vars, long start, long end) {
        // bufs, then the status block the kernel reports an index out of range in, then the variables
        Scratch s = scratch(ValueLayout.ADDRESS.byteSize() * (bufs.length + 1), 8L * vars.length);
        MemorySegment scratch = s.pointers(), status = s.status(), values = s.values(); // whole segments: no slice per call
        for (int i = 0; i < bufs.length; i++) scratch.setAtIndex(ValueLayout.ADDRESS, i, bufs[i]);
        scratch.setAtIndex(ValueLayout.ADDRESS, bufs.length, status);
        status.setAtIndex(ValueLayout.JAVA_LONG, 0, 0L); // the kernel writes the rest only when it sets this flag
        for (int i = 0; i < vars.length; i++) values.setAtIndex(ValueLayout.JAVA_LONG, i, vars[i]);
        try {
            // a division, not a product: no overflow for a huge kernel
            if ((end - start) <= SHORT_CALL_WORK / workPerIteration) NativeLibrary.SHORT_CALL.invokeExact(function, scratch, values, start, end);
            else NativeLibrary.CALL.invokeExact(function, scratch, values, start, end);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("kernel " + name + " failed", t);
        }
        long flag = status.getAtIndex(ValueLayout.JAVA_LONG, 0);
        if (flag == 2) throw IndexCheckFailure.of(program, (int) status.getAtIndex(ValueLayout.JAVA_LONG, 1), status.getAtIndex(ValueLayout.JAVA_LONG, 2));
        if (flag != 0) {
            int param = (int) status.getAtIndex(ValueLayout.JAVA_LONG, 1);
            throw new IndexOutOfBoundsException("kernel " + name + " indexes " + params.get(param).name() + " at "
                    + status.getAtIndex(ValueLayout.JAVA_LONG, 2) + ", size " + sizes[param] + " (the access was skipped)");
        }
    }

    /** Runs the whole kernel. */
    public void run(MemorySegment[] bufs, long[] vars) { run(bufs, vars, 0, extent); }

    /** Checks buffer {@code i}; returns whether it is on the Java heap (an input the call must copy off-heap). */
    private boolean check(int i, MemorySegment s) {
        // the description is built only on failure: this runs for every buffer of every call
        if (s == null) throw new IllegalArgumentException(describe(i) + " is null");
        checkUsable(i, s);
        if (s.byteSize() < bytes[i]) throw new IllegalArgumentException(describe(i) + " has only " + s.byteSize() + " bytes");
        if (written[i] && s.isReadOnly()) throw new IllegalArgumentException(describe(i) + " is read-only, but the kernel writes it");
        if (!s.isNative()) {
            if (written[i]) {
                throw new IllegalArgumentException(describe(i) + " is on the Java heap, but the kernel writes it and native code writes off-heap memory only"
                        + " (allocate it on this device, e.g. with tensor.to(\"CLANG\"))");
            }
            return true;
        }
        if ((s.address() & alignMasks[i]) != 0) {
            throw new IllegalArgumentException(describe(i) + " at address 0x" + Long.toHexString(s.address()) + " is not aligned to its "
                    + (alignMasks[i] + 1) + "-byte elements");
        }
        return false;
    }

    /** Checks what can change between calls on the same segment: that its memory is alive and this thread may use it. */
    void checkUsable(int i, MemorySegment s) {
        if (!s.scope().isAlive()) throw new IllegalStateException(describe(i) + " has been freed");
        if (!s.isAccessibleBy(Thread.currentThread())) {
            throw new IllegalArgumentException(describe(i) + " belongs to a confined arena of another thread");
        }
    }

    private String describe(int i) {
        Slot p = params.get(i);
        return "kernel " + name + ": buffer " + i + " (" + p.name() + ", " + p.dtype() + ", " + bytes[i] + " bytes)";
    }

    private Scratch scratch(long pointerBytes, long valueBytes) {
        Scratch s = recent;
        Thread t = Thread.currentThread();
        if (s != null && s.owner() == t) return s;
        s = SCRATCH.get();
        if (s == null || s.pointers().byteSize() < pointerBytes || s.values().byteSize() < valueBytes) {
            // the arena is reachable from this thread's entry (and kernels' recent) only: freed with them
            Arena a = Arena.ofAuto();
            s = new Scratch(t, a.allocate(Math.max(pointerBytes, 512), 8), a.allocate(24, 8), a.allocate(Math.max(valueBytes, 256), 8));
            SCRATCH.set(s);
        }
        recent = s;
        return s;
    }

    @Override
    public String toString() { return "CKernel[" + name + " as " + symbol + "]"; }
}
