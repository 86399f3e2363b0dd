package dev.kiln.clang;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.ir.BoundedCache;
import dev.kiln.runtime.CompilerIdentity;
import dev.kiln.runtime.ContentStore;
import dev.kiln.runtime.KernelCache;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Kernels rendered as named functions of a C-like translation unit (C for CLANG, CUDA C for CUDA),
 * compiled together through a {@link KernelCache} and linked one by one. A function's name is a hash of
 * its computation, so a kernel has the same symbol in every plan and JVM and one source per structure.
 */
public final class KernelFunctions {
    /** One kernel's function: its symbol and its source. */
    public record Named(String symbol, String source) {}

    /** Makes one kernel's runnable form from its function and the artifact its translation unit became. */
    @FunctionalInterface
    public interface Linker<A, T> {
        T link(KernelProgram program, Named function, A artifact);
    }

    private final BiFunction<KernelProgram, String, String> render;
    private final BoundedCache<KernelProgram, Named> functions = new BoundedCache<>(4096);

    /** @param render the renderer: a program and a function name to the function's source */
    public KernelFunctions(BiFunction<KernelProgram, String, String> render) { this.render = render; }

    /** The function of {@code program}, named by a hash of its anonymous form's source. */
    public Named of(KernelProgram program) {
        return functions.get(program.anonymous(), anon -> {
            String symbol = "kiln_" + ContentStore.sha256(render.apply(anon, "kernel")).substring(0, 24);
            return new Named(symbol, render.apply(anon, symbol));
        });
    }

    /**
     * Renders {@code programs}, compiles those {@code cache} does not hold into one artifact
     * ({@code compileUnit} gets the distinct sources of one translation unit) and links each program.
     */
    public <A, T> List<T> compile(KernelCache<A> cache, CompilerIdentity identity, List<KernelProgram> programs,
            Function<List<String>, byte[]> compileUnit, Linker<A, T> linker) {
        List<KernelCache.Request<KernelProgram>> requests = new ArrayList<>();
        List<Named> named = new ArrayList<>();
        for (KernelProgram p : programs) {
            Named f = of(p);
            named.add(f);
            requests.add(new KernelCache.Request<>(p.anonymous(), f.source(), identity));
        }
        Map<KernelProgram, A> artifacts = cache.getOrCompileTogether(requests, compileUnit);
        List<T> out = new ArrayList<>();
        for (int i = 0; i < programs.size(); i++) {
            KernelProgram p = programs.get(i);
            out.add(linker.link(p, named.get(i), artifacts.get(p.anonymous())));
        }
        return out;
    }
}
