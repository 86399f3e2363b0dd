package dev.kiln.cpu;

import dev.kiln.codegen.IndexCheckFailure;
import dev.kiln.codegen.KernelProgram;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A kernel compiled for the CPU: its Java source (shown to users), its class file (for a cache) and a
 * handle to its {@code run} method.
 *
 * @param name       the kernel's name
 * @param source     the generated Java source
 * @param classBytes the compiled class file
 * @param handle     {@code static void run(MemorySegment[] bufs, long[] vars, long start, long end)}
 * @param extent     the iterations {@code [0, extent)} that {@code start} and {@code end} select
 *                   ({@link KernelProgram#outerExtent})
 */
public record CpuKernel(String name, String source, byte[] classBytes, MethodHandle handle, long extent) {
    public CpuKernel {
        if (!handle.type().equals(JavaKernelCompiler.RUN_TYPE)) {
            throw new IllegalArgumentException("kernel " + name + ": handle has type " + handle.type() + ", expected " + JavaKernelCompiler.RUN_TYPE);
        }
    }

    /**
     * Renders, compiles (in one batch) and loads {@code programs}.
     *
     * @throws IllegalStateException if a generated source does not compile (a Kiln bug)
     */
    public static List<CpuKernel> compile(List<KernelProgram> programs) {
        List<JavaKernelCompiler.Source> sources = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (KernelProgram p : programs) {
            String base = "K_" + p.name().replaceAll("[^A-Za-z0-9_]", "_");
            String cls = base;
            for (int i = 2; !names.add(cls); i++) cls = base + "_" + i;
            sources.add(new JavaKernelCompiler.Source(cls, JavaRenderer.render(p, cls)));
        }
        List<JavaKernelCompiler.Compiled> classes = JavaKernelCompiler.compile(sources).classes();
        List<CpuKernel> out = new ArrayList<>();
        for (int i = 0; i < programs.size(); i++) {
            KernelProgram p = programs.get(i);
            JavaKernelCompiler.Compiled c = classes.get(i);
            out.add(new CpuKernel(p.name(), sources.get(i).code(), c.classBytes(), c.run(), p.outerExtent()));
        }
        return out;
    }

    /**
     * Runs iterations {@code [start, end)} of the kernel over {@code bufs} (output first) with the values
     * of its variables in {@code vars}.
     *
     * @throws IndexOutOfBoundsException if the range is not within {@code [0, extent]}, or a buffer is too small
     * @throws IllegalArgumentException  if a variable's value is outside its bounds
     * @throws IndexCheckFailure         if an index from data failed its check (the kernel stopped there)
     */
    public void run(MemorySegment[] bufs, long[] vars, long start, long end) {
        try {
            handle.invokeExact(bufs, vars, start, end);
        } catch (IndexOutOfBoundsException e) {
            IndexCheckFailure f = indexCheckFailure(name, e);
            throw f != null ? f : e;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("kernel " + name + " failed", t);
        }
    }

    private static final Pattern INDEX_CHECK_FAILED = Pattern.compile(Pattern.quote(JavaHelper.INDEX_CHECK_FAILED_PREFIX)
            + "(\\d+): index (-?\\d+) is outside \\[(-?\\d+), (-?\\d+)]");

    /** The failed index check a generated kernel threw {@code e} for, or null if {@code e} is another error. */
    static IndexCheckFailure indexCheckFailure(String kernel, IndexOutOfBoundsException e) {
        Matcher m = e.getMessage() == null ? null : INDEX_CHECK_FAILED.matcher(e.getMessage());
        if (m == null || !m.matches()) return null;
        return IndexCheckFailure.inKernel(kernel, Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)));
    }

    /** Runs the whole kernel. */
    public void run(MemorySegment[] bufs, long[] vars) { run(bufs, vars, 0, extent); }
}
