package dev.kiln.codegen;

/**
 * What a compiled kernel reports when an {@link dev.kiln.ir.Op#CHECK} fails: the check's site in its kernel and
 * the index found. Kernels know no names (their programs are shared between operations), so the runtime turns
 * this into the public {@code dev.kiln.runtime.IndexOutOfRangeException}, naming the operation from the plan
 * step's list of checks ({@link KernelLowering#indexChecks}); only a kernel run outside a plan lets it through.
 */
public final class IndexCheckFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int site;
    private final long index;

    /** Check {@code site} of kernel {@code kernel} found {@code index} out of range. */
    public static IndexCheckFailure inKernel(String kernel, int site, long index) {
        return new IndexCheckFailure("kernel " + kernel + ": index " + index + " failed index check " + site, site, index);
    }

    private IndexCheckFailure(String message, int site, long index) {
        super(message);
        this.site = site;
        this.index = index;
    }

    /**
     * Check {@code site} of one of {@code kernels} (a device that shares one status block among its kernels cannot
     * tell which) found {@code index} out of range.
     */
    public static IndexCheckFailure ofOneOf(String kernels, int site, long index) {
        return new IndexCheckFailure("one of the kernels " + kernels + ": index " + index + " failed index check " + site, site, index);
    }

    /** The check's site in its kernel. */
    public int site() { return site; }

    /** The index found. */
    public long index() { return index; }

    /**
     * The failure {@code t} is or was caused by, or null: a kernel's share on a worker thread may reach the caller
     * wrapped (the fork-join pool may rethrow a copy with the original as its cause).
     */
    public static IndexCheckFailure in(Throwable t) {
        for (int depth = 0; t != null && depth < 16; t = t.getCause(), depth++) {
            if (t instanceof IndexCheckFailure f) return f;
        }
        return null;
    }

    /**
     * The failure of check {@code site} of {@code program} at {@code index}, as a device reports it.
     *
     * @throws IllegalStateException if the program has no such check (a device reported a site it does not have)
     */
    public static IndexCheckFailure of(KernelProgram program, int site, long index) {
        if (!program.indexChecks().containsKey(site)) {
            throw new IllegalStateException("kernel " + program.name() + " reported index check " + site + " (index " + index + "), which it does not have");
        }
        return inKernel(program.name(), site, index);
    }
}
