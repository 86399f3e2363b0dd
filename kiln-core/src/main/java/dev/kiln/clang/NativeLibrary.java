package dev.kiln.clang;

import dev.kiln.compile.ContentStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A loaded kernel shared object. Loading writes the bytes to a file in a folder of this process and
 * opens it with {@link SymbolLookup#libraryLookup(Path, Arena)} in the global arena: kernels stay loaded
 * for the life of the JVM, like the kernel cache that holds them. Equal bytes are loaded once.
 *
 * <p>The files are deleted when the JVM exits, not after loading: the dynamic loader recognises a
 * library it has loaded by its file's device and inode, and a deleted file's inode can be reused by
 * the next library written, which would then silently resolve to the old one.
 */
final class NativeLibrary {
    /** Every kernel's C signature: {@code void f(void** bufs, const int64_t* vars, int64_t start, int64_t end)}. */
    static final FunctionDescriptor KERNEL = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);

    /**
     * Calls any kernel: {@code (MemorySegment function, MemorySegment bufs, MemorySegment vars, long start, long end) void}.
     * One constant handle for every kernel, the function's address its first argument, so the JIT inlines the
     * downcall stub into the caller (a handle per kernel, held in a field, is an indirect call the JIT cannot
     * see through).
     */
    static final MethodHandle CALL = Linker.nativeLinker().downcallHandle(KERNEL);

    /**
     * {@link #CALL} without the thread-state transition ({@link Linker.Option#critical critical}, no heap
     * access): for short calls only, because the call holds off safepoints, and so the GC, until it returns.
     * Safe for kernels: they never call back into Java, never block and touch off-heap memory only.
     */
    static final MethodHandle SHORT_CALL = Linker.nativeLinker().downcallHandle(KERNEL, Linker.Option.critical(false));

    private static final Map<String, NativeLibrary> LOADED = new ConcurrentHashMap<>();
    private static volatile Path folder;

    private final String sha256;
    private final SymbolLookup symbols;
    private final Map<String, MethodHandle> functions = new ConcurrentHashMap<>();

    private NativeLibrary(String sha256, SymbolLookup symbols) {
        this.sha256 = sha256;
        this.symbols = symbols;
    }

    /**
     * The library of a shared object's bytes, loaded on first use.
     *
     * @throws IllegalArgumentException if the bytes are not a loadable shared object
     */
    static NativeLibrary load(byte[] sharedObject) {
        String sha = ContentStore.sha256(sharedObject);
        return LOADED.computeIfAbsent(sha, s -> {
            Path file = folder().resolve(s.substring(0, 32) + ".so");
            try {
                if (!Files.exists(file)) {
                    Path tmp = Files.createTempFile(folder(), "lib", ".tmp");
                    Files.write(tmp, sharedObject);
                    Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                    file.toFile().deleteOnExit();
                }
                return new NativeLibrary(s, SymbolLookup.libraryLookup(file, Arena.global()));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write kernel library " + file + ": " + e.getMessage(), e);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cannot load kernel library " + file + " (" + sharedObject.length + " bytes): "
                        + e.getMessage() + " (a temp folder mounted noexec cannot hold libraries; set java.io.tmpdir)", e);
            }
        });
    }

    /** The library with these bytes' SHA-256 if this process has loaded it. */
    static Optional<NativeLibrary> loaded(String sha256) { return Optional.ofNullable(LOADED.get(sha256)); }

    private static Path folder() {
        Path f = folder;
        if (f != null) return f;
        synchronized (NativeLibrary.class) {
            if (folder == null) {
                try {
                    Path dir = Files.createTempDirectory("kiln-c-libs-");
                    dir.toFile().deleteOnExit(); // registered first, deleted last: after the files in it
                    folder = dir;
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot create a folder for kernel libraries in " + System.getProperty("java.io.tmpdir"), e);
                }
            }
            return folder;
        }
    }

    /**
     * The downcall handle of exported kernel {@code symbol}, of type
     * {@code (MemorySegment bufs, MemorySegment vars, long start, long end) void}.
     *
     * @throws IllegalArgumentException if the library does not export it
     */
    MethodHandle function(String symbol) {
        return functions.computeIfAbsent(symbol, s -> MethodHandles.insertArguments(CALL, 0, address(s)));
    }

    /**
     * The address of exported kernel {@code symbol}, for {@link #CALL} and {@link #SHORT_CALL}.
     *
     * @throws IllegalArgumentException if the library does not export it
     */
    MemorySegment address(String symbol) {
        return symbols.find(symbol).orElseThrow(() -> new IllegalArgumentException(
                "kernel library " + sha256.substring(0, 16) + " does not export '" + symbol + "'"));
    }

    @Override
    public String toString() { return "NativeLibrary[" + sha256.substring(0, 16) + "]"; }
}
