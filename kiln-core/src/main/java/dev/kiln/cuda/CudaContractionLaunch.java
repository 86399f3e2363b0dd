package dev.kiln.cuda;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.runtime.KernelRunner;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A kernel the GPU runs as a tiled GEMM ({@link CudaGemm}) followed by its epilogue (bias, activation, residual:
 * the kernel's store, reading the sums back in place), both launched on the device's stream. The plan calls it for
 * its whole range.
 *
 * <p>When the output overlaps an input (an in-place update such as {@code x += x·W}), the sums and the epilogue go
 * to scratch device memory first and are copied over the output after, so no input is overwritten before
 * everything has read it.
 */
final class CudaContractionLaunch implements KernelRunner {
    private final CudaDevice device;
    private final KernelProgram program;
    private final Contraction contraction;
    private final MemorySegment gemm;
    private final KernelProgram epilogue;
    private final CudaLaunch epilogueLaunch;
    private final boolean identity;
    private final long[] bytes; // per parameter
    private final int[] grid;

    CudaContractionLaunch(CudaDevice device, KernelProgram program, Contraction contraction, MemorySegment gemm, KernelProgram epilogue,
                          CudaLaunch epilogueLaunch, boolean identity) {
        this.device = device;
        this.program = program;
        this.contraction = contraction;
        this.gemm = gemm;
        this.epilogue = epilogue;
        this.epilogueLaunch = epilogueLaunch;
        this.identity = identity;
        this.bytes = new long[program.params().size()];
        for (int i = 0; i < bytes.length; i++) bytes[i] = program.params().get(i).dtype().byteSize(program.sizes().get(i));
        long[] g = CudaGemm.grid(contraction);
        this.grid = new int[] {Math.toIntExact(g[0]), Math.toIntExact(g[1]), Math.toIntExact(g[2])};
    }

    @Override
    public void run(MemorySegment[] bufs, long[] vars, long start, long end) {
        checkRange(vars, start, end);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment scratch = overlapsAnInput(bufs) ? device.allocate(a, bytes[0]) : null;
            launch(bufs, vars, scratch, new GemmArguments(a), epilogueLaunch);
        }
    }

    @Override
    public KernelRunner bind(MemorySegment[] bufs) {
        Arena arena = Arena.ofAuto();
        MemorySegment scratch = overlapsAnInput(bufs) ? device.allocate(arena, bytes[0]) : null;
        GemmArguments args = new GemmArguments(arena);
        KernelRunner boundEpilogue = scratch == null ? epilogueLaunch.bind(bufs) : epilogueLaunch;
        return new KernelRunner() {
            @Override
            public void run(MemorySegment[] b, long[] vars, long start, long end) {
                if (b != bufs) {
                    CudaContractionLaunch.this.run(b, vars, start, end);
                    return;
                }
                checkRange(vars, start, end);
                launch(b, vars, scratch, args, boundEpilogue);
            }
        };
    }

    private void checkRange(long[] vars, long start, long end) {
        long whole = program.activeExtent(vars);
        if (start != 0 || end != whole) {
            throw new UnsupportedOperationException("kernel " + program.name() + " runs as one GEMM: it takes its whole range [0, " + whole
                    + "), not [" + start + ", " + end + ")");
        }
    }

    private void launch(MemorySegment[] bufs, long[] vars, MemorySegment scratch, GemmArguments args, KernelRunner epilogueRunner) {
        MemorySegment[] target = bufs;
        if (scratch != null) {
            target = bufs.clone();
            target[0] = scratch;
        }
        args.launch(target[0], target[contraction.a().param()], target[contraction.b().param()]);
        if (!identity) epilogueRunner.run(target, vars, 0, epilogue.activeExtent(vars));
        if (scratch != null) device.copyWithin(scratch, bufs[0], bytes[0]);
    }

    /** Whether the output's bytes overlap an input's (the addresses are device memory: compared, never read). */
    private boolean overlapsAnInput(MemorySegment[] bufs) {
        long out = bufs[0].address();
        for (int i = 1; i < bufs.length; i++) {
            long in = bufs[i].address();
            if (out < in + bytes[i] && in < out + bytes[0]) return true;
        }
        return false;
    }

    /** The GEMM's three pointer arguments and the array of their addresses. */
    private final class GemmArguments {
        private final MemorySegment values, pointers;

        GemmArguments(Arena arena) {
            values = arena.allocate(24, 8);
            pointers = arena.allocate(24, 8);
            for (int i = 0; i < 3; i++) pointers.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i, 8));
        }

        void launch(MemorySegment c, MemorySegment a, MemorySegment b) {
            CudaDevice.checkDevice(c, "GEMM output of " + program.name());
            CudaDevice.checkDevice(a, "GEMM operand A of " + program.name());
            CudaDevice.checkDevice(b, "GEMM operand B of " + program.name());
            values.setAtIndex(ValueLayout.JAVA_LONG, 0, c.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 1, a.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 2, b.address());
            device.enter();
            device.driver().launch(gemm, grid[0], grid[1], grid[2], CudaGemm.THREADS, device.stream(), pointers);
            device.launched(program.name() + " (GEMM)");
        }
    }
}
