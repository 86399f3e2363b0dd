package dev.kiln.clang;

import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Slot;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A kernel compiled to native code: its C source (shown to users), its exported symbol and a downcall
 * handle to it. C checks nothing, so {@link #run} checks everything the generated code relies on before
 * every call: the range, every buffer (alive, accessible from this thread, large enough, aligned to its
 * element size, off-heap and writable if the kernel stores to it) and every variable's bounds; an
 * index that range analysis could not bound is checked in the kernel and reported after the call. Bad
 * input is an exception, never a stray access. Inputs on the Java heap (INTERP's buffers, read by a
 * mixed-device graph) are copied off-heap for the call: native code cannot hold a pointer into the heap.
 */
public final class CKernel {
    private final String name;
    private final String symbol;
    private final String source;
    private final MethodHandle handle;
    private final long extent;
    private final List<Slot> params;
    private final long[] bytes;
    private final long[] sizes;
    private final List<Variable> variables;
    private final boolean[] written;

    /** Per thread: the native array of buffer addresses, the status block and the variables' values. */
    private record Scratch(MemorySegment pointers, MemorySegment status, MemorySegment values) {}

    private static final ThreadLocal<Scratch> SCRATCH = new ThreadLocal<>();

    /**
     * Binds {@code program}'s compiled function.
     *
     * @param symbol the exported C function
     * @param source its C source
     * @param handle its downcall handle ({@link NativeLibrary#KERNEL})
     */
    public CKernel(KernelProgram program, String symbol, String source, MethodHandle handle) {
        if (!handle.type().equals(NativeLibrary.KERNEL.toMethodType())) {
            throw new IllegalArgumentException("kernel " + program.name() + ": handle has type " + handle.type() + ", expected "
                    + NativeLibrary.KERNEL.toMethodType());
        }
        this.name = program.name();
        this.symbol = symbol;
        this.source = source;
        this.handle = handle;
        this.extent = program.outerExtent();
        this.params = program.params();
        this.variables = program.variables();
        this.bytes = new long[params.size()];
        this.sizes = program.sizes().stream().mapToLong(Long::longValue).toArray();
        for (int i = 0; i < bytes.length; i++) bytes[i] = params.get(i).dtype().byteSize(program.sizes().get(i));
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
            out.add(new CKernel(programs.get(i), symbols.get(i), functions.get(i), lib.function(symbols.get(i))));
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
     * @throws IllegalArgumentException  if the number of buffers or values is wrong, a buffer is too small or
     *                                   misaligned, a buffer the kernel writes is on the Java heap or read-only,
     *                                   or a variable's value is outside its bounds
     * @throws IllegalStateException     if a buffer's memory has been freed
     */
    public void run(MemorySegment[] bufs, long[] vars, long start, long end) {
        Objects.checkFromToIndex(start, end, extent);
        if (bufs.length != params.size()) {
            throw new IllegalArgumentException("kernel " + name + " takes " + params.size() + " buffers, got " + bufs.length);
        }
        if (vars.length != variables.size()) {
            throw new IllegalArgumentException("kernel " + name + " takes " + variables.size() + " variable values, got " + vars.length);
        }
        boolean heap = false;
        for (int i = 0; i < bufs.length; i++) heap |= check(i, bufs[i]);
        for (int i = 0; i < vars.length; i++) {
            Variable v = variables.get(i);
            if (vars[i] < v.min() || vars[i] > v.max()) {
                throw new IllegalArgumentException("kernel " + name + ": variable '" + v.name() + "' bound to " + vars[i]
                        + ", outside its range [" + v.min() + ", " + v.max() + "]");
            }
        }
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
        status.fill((byte) 0);
        for (int i = 0; i < vars.length; i++) values.setAtIndex(ValueLayout.JAVA_LONG, i, vars[i]);
        try {
            handle.invokeExact(scratch, values, start, end);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("kernel " + name + " failed", t);
        }
        if (status.getAtIndex(ValueLayout.JAVA_LONG, 0) != 0) {
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
        if (!s.scope().isAlive()) throw new IllegalStateException(describe(i) + " has been freed");
        if (!s.isAccessibleBy(Thread.currentThread())) {
            throw new IllegalArgumentException(describe(i) + " belongs to a confined arena of another thread");
        }
        if (s.byteSize() < bytes[i]) throw new IllegalArgumentException(describe(i) + " has only " + s.byteSize() + " bytes");
        if (written[i] && s.isReadOnly()) throw new IllegalArgumentException(describe(i) + " is read-only, but the kernel writes it");
        if (!s.isNative()) {
            if (written[i]) {
                throw new IllegalArgumentException(describe(i) + " is on the Java heap, but the kernel writes it and native code writes off-heap memory only"
                        + " (allocate it on this device, e.g. with tensor.to(\"CLANG\"))");
            }
            return true;
        }
        Slot p = params.get(i);
        int item = p.dtype().isPacked() ? 1 : p.dtype().itemSize();
        if (s.address() % item != 0) {
            throw new IllegalArgumentException(describe(i) + " at address 0x" + Long.toHexString(s.address()) + " is not aligned to its "
                    + item + "-byte elements");
        }
        return false;
    }

    private String describe(int i) {
        Slot p = params.get(i);
        return "kernel " + name + ": buffer " + i + " (" + p.name() + ", " + p.dtype() + ", " + bytes[i] + " bytes)";
    }

    private static Scratch scratch(long pointerBytes, long valueBytes) {
        Scratch s = SCRATCH.get();
        if (s == null || s.pointers().byteSize() < pointerBytes || s.values().byteSize() < valueBytes) {
            // the arena is reachable from this thread's entry only: freed with the thread
            Arena a = Arena.ofAuto();
            s = new Scratch(a.allocate(Math.max(pointerBytes, 512), 8), a.allocate(24, 8), a.allocate(Math.max(valueBytes, 256), 8));
            SCRATCH.set(s);
        }
        return s;
    }

    @Override
    public String toString() { return "CKernel[" + name + " as " + symbol + "]"; }
}
