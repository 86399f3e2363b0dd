package dev.kiln.cuda;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.runtime.KernelRunner;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A compiled CUDA kernel as the runtime calls it: each call is one {@code cuLaunchKernel} on the device's
 * stream, returning before the kernel runs. The arguments are those {@link CudaRenderer} declares, all 8 bytes:
 * the buffers' device addresses (output first), the status block, the variables, then {@code start} and
 * {@code end}. A kernel with an output loop runs it as a grid-stride loop over {@code THREADS}-thread blocks, as
 * many as the range needs up to a few waves of the GPU; one without runs as a single thread.
 *
 * <p>A plan {@linkplain #bind binds} it to its buffers: the argument block is written once and each call
 * rewrites only the variables and the range, allocating nothing.
 */
final class CudaLaunch implements KernelRunner {
    private final CudaDevice device;
    private final MemorySegment function;
    private final String name;
    private final int buffers, variables;
    private final boolean gridStride;

    CudaLaunch(CudaDevice device, MemorySegment function, KernelProgram program) {
        this.device = device;
        this.function = function;
        this.name = program.name();
        this.buffers = program.params().size();
        this.variables = program.variables().size();
        this.gridStride = program.outputLoop() != null;
    }

    private int arguments() { return buffers + 1 + variables + 2; }

    @Override
    public void run(MemorySegment[] bufs, long[] vars, long start, long end) {
        try (Arena a = Arena.ofConfined()) {
            Arguments args = new Arguments(a);
            args.buffers(bufs);
            args.launch(vars, start, end);
        }
    }

    @Override
    public KernelRunner bind(MemorySegment[] bufs) {
        Arguments args = new Arguments(Arena.ofAuto());
        args.buffers(bufs);
        return new KernelRunner() {
            @Override
            public void run(MemorySegment[] b, long[] vars, long start, long end) {
                if (b == bufs) args.launch(vars, start, end);
                else CudaLaunch.this.run(b, vars, start, end);
            }
        };
    }

    /** The argument block: {@code values} holds each argument, {@code pointers} the address of each value. */
    private final class Arguments {
        private final MemorySegment values, pointers;

        Arguments(Arena arena) {
            int n = arguments();
            values = arena.allocate(8L * n, 8);
            pointers = arena.allocate(8L * n, 8);
            for (int i = 0; i < n; i++) pointers.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i, 8));
            values.setAtIndex(ValueLayout.JAVA_LONG, buffers, device.statusAddress());
        }

        void buffers(MemorySegment[] bufs) {
            if (bufs.length != buffers) {
                throw new IllegalArgumentException("CUDA kernel " + name + " takes " + buffers + " buffers, got " + bufs.length);
            }
            for (int i = 0; i < buffers; i++) {
                CudaDevice.checkDevice(bufs[i], "buffer " + i + " of kernel " + name);
                values.setAtIndex(ValueLayout.JAVA_LONG, i, bufs[i].address());
            }
        }

        void launch(long[] vars, long start, long end) {
            if (vars.length != variables) {
                throw new IllegalArgumentException("CUDA kernel " + name + " takes " + variables + " variables, got " + vars.length);
            }
            if (end <= start) return; // no iterations: the kernel would do nothing
            for (int v = 0; v < variables; v++) values.setAtIndex(ValueLayout.JAVA_LONG, buffers + 1 + v, vars[v]);
            values.setAtIndex(ValueLayout.JAVA_LONG, buffers + 1 + variables, start);
            values.setAtIndex(ValueLayout.JAVA_LONG, buffers + 2 + variables, end);
            int threads = gridStride ? CudaDevice.THREADS : 1;
            int blocks = gridStride ? (int) Math.min((end - start + threads - 1) / threads, device.maxBlocks()) : 1;
            device.enter();
            device.driver().launch(function, blocks, threads, device.stream(), pointers);
            device.launched(name);
        }
    }
}
