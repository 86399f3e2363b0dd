package dev.kiln.clang;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/**
 * Hand-written C routines (not kernels of the IR) compiled by the {@link ClangDevice}'s compiler, for work that code
 * outside kiln-core runs on the CLANG device as host steps: the block-quantised products of kiln-llm, for one. The
 * source is compiled once per compiler and CPU, cached on disk with the device's kernels ({@link ClangDevice#library}),
 * and loaded once per process, for the life of the JVM.
 *
 * <p>The source must be self-contained C11 and mark what it exports with
 * {@code __attribute__((visibility("default")))}: the device compiles with {@code -fvisibility=hidden}, with IEEE
 * semantics kept ({@code -ffp-contract=off -fno-fast-math}) and {@code -march=native}, so a routine that wants fused
 * multiply-adds or wide vectors spells them out (intrinsics under {@code #if defined(__AVX512F__)} and the like, with a
 * portable path for other CPUs).
 */
public final class CLibrary {
    private final NativeLibrary library;

    CLibrary(NativeLibrary library) { this.library = library; }

    /**
     * A downcall handle for exported function {@code symbol} with C signature {@code descriptor}.
     *
     * @throws IllegalArgumentException if the library does not export {@code symbol}
     */
    public MethodHandle function(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return Linker.nativeLinker().downcallHandle(library.address(symbol), descriptor, options);
    }

    @Override
    public String toString() { return "CLibrary[" + library + "]"; }
}
