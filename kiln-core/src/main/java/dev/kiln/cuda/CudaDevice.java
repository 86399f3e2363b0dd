package dev.kiln.cuda;

import dev.kiln.codegen.IndexCheckFailure;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceMemory;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.PlanBuilder;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One NVIDIA GPU driven through the driver API ({@link CudaDriver}): its primary context, one in-order stream
 * that every kernel and copy of this device goes to, and its memory ({@link DeviceMemory}), taken with plain
 * {@code cuMemAlloc} (never managed memory).
 *
 * <p>Kernels are compiled by {@link CudaCompiler} (nvcc, to PTX), loaded once per module and context, and
 * launched as a grid-stride loop over the output loop ({@link CudaLaunch}). Launches and copies within the
 * device return at once; {@link #synchronize()} waits for them and reports an index out of range that a
 * kernel found. Copies to and from host memory go through a page-locked staging buffer.
 *
 * <p>A plan whose steps all run here is recorded once as a CUDA graph ({@link #record}) and replayed;
 * {@code -Dkiln.cuda.graphs=false} turns that off.
 */
public final class CudaDevice implements Device, DeviceMemory {
    private static final System.Logger LOG = System.getLogger(CudaDevice.class.getName());
    /** Bytes of the page-locked buffer host copies go through, one piece at a time. */
    private static final long STAGING_BYTES = 16L << 20;
    /** System property that turns graph recording off ({@code false}). */
    public static final String GRAPHS_PROPERTY = "kiln.cuda.graphs";

    private final DeviceSpec spec;
    private final CudaDriver driver;
    private final int ordinal;
    private final MemorySegment context;
    private final MemorySegment stream;
    private final String name;
    private final int multiprocessors;
    private final String computeCapability;
    private final long totalMemory;
    private final CudaCompiler compiler;
    private final Map<String, MemorySegment> modules = new ConcurrentHashMap<>();   // PTX sha -> CUmodule
    private final Map<String, MemorySegment> functions = new ConcurrentHashMap<>(); // sha/symbol -> CUfunction
    private final AtomicLong allocatedBytes = new AtomicLong();
    private final long status;               // int64[3] in device memory: flag, parameter, index
    private final Object hostLock = new Object();
    private MemorySegment staging;           // page-locked, STAGING_BYTES; guarded by hostLock
    private final MemorySegment statusHost;  // page-locked int64[3]; guarded by hostLock
    private final ArrayDeque<String> launched = new ArrayDeque<>(); // recent kernel names, for error messages; guarded by itself

    CudaDevice(DeviceSpec spec, CudaDriver driver, Nvcc nvcc) {
        this.spec = spec;
        this.driver = driver;
        this.ordinal = driver.device(spec.index());
        this.name = driver.deviceName(ordinal);
        this.multiprocessors = driver.attribute(ordinal, CudaDriver.ATTRIBUTE_MULTIPROCESSORS);
        this.computeCapability = driver.attribute(ordinal, CudaDriver.ATTRIBUTE_CC_MAJOR) + "." + driver.attribute(ordinal, CudaDriver.ATTRIBUTE_CC_MINOR);
        this.totalMemory = driver.totalMemory(ordinal);
        this.context = driver.retainPrimaryContext(ordinal);
        driver.setCurrent(context);
        this.stream = driver.createStream(CudaDriver.STREAM_NON_BLOCKING);
        this.status = driver.allocate(24);
        driver.memsetAsync(status, (byte) 0, 24, stream);
        this.statusHost = driver.allocatePinned(24);
        driver.synchronize(stream);
        this.compiler = new CudaCompiler(nvcc);
    }

    @Override
    public DeviceSpec spec() { return spec; }

    /** The GPU's name as the driver gives it, e.g. {@code NVIDIA H100 80GB HBM3}. */
    public String name() { return name; }

    /** Streaming multiprocessors. */
    public int multiprocessors() { return multiprocessors; }

    /** Compute capability, e.g. {@code 9.0}. */
    public String computeCapability() { return computeCapability; }

    /** Bytes of device memory on the GPU. */
    public long totalMemory() { return totalMemory; }

    /** Bytes this device has allocated for Kiln and not yet freed (plans, buffers; not the driver's own). */
    public long allocatedBytes() { return allocatedBytes.get(); }

    @Override
    public String toString() { return spec + " (" + name + ", sm_" + computeCapability.replace(".", "") + ", " + multiprocessors + " SMs)"; }

    /** Makes this device's context current on the calling thread (the driver keeps it per thread). */
    void enter() { driver.setCurrent(context); }

    // ------------------------------------------------------------------ Device

    @Override
    public Optional<DeviceMemory> deviceMemory() { return Optional.of(this); }

    @Override
    public Buffer allocate(DType dtype, long count) {
        return Buffer.inDeviceMemory(spec.toString(), dtype, count, allocate(Arena.ofAuto(), dtype.byteSize(count)));
    }

    @Override
    public Buffer realize(UOp root, Map<Variable, Long> bindings) { return PlanBuilder.realize(this, root, bindings); }

    @Override
    public KernelProgram optimize(KernelProgram program) { return CudaCompiler.optimize(program); }

    @Override
    public List<CompiledKernel> compile(List<KernelProgram> programs) { return link(compiler.compile(programs)); }

    @Override
    public List<CompiledKernel> compileKernels(List<ScheduleItem.Kernel> kernels, List<String> names) {
        return link(compiler.compileKernels(kernels, names));
    }

    private List<CompiledKernel> link(List<PtxKernel> kernels) {
        enter();
        return kernels.stream().map(k -> new CompiledKernel(k.program(), k.source(), runner(k))).toList();
    }

    /** How {@code kernel} runs: one launch of its loops, or for a contraction its GEMM and then its epilogue. */
    private dev.kiln.runtime.KernelRunner runner(PtxKernel kernel) {
        var match = CudaGemm.match(kernel.program());
        if (match.isEmpty()) return new CudaLaunch(this, function(kernel, kernel.symbol()), kernel.program());
        KernelProgram epilogue = CudaCompiler.epilogue(match.get());
        return new CudaContractionLaunch(this, kernel.program(), match.get().contraction(), function(kernel, kernel.symbol() + "_gemm"),
                epilogue, new CudaLaunch(this, function(kernel, kernel.symbol()), epilogue), match.get().identity());
    }

    /** The loaded function {@code symbol} of {@code kernel}'s module, the module loaded first if this context has not yet. */
    private MemorySegment function(PtxKernel kernel, String symbol) {
        String sha = kernel.module().sha256();
        return functions.computeIfAbsent(sha + "/" + symbol, k -> {
            MemorySegment module = modules.computeIfAbsent(sha, s -> driver.loadModule(kernel.module().ptx()));
            return driver.function(module, symbol);
        });
    }

    // ------------------------------------------------------------------ launches

    /** The status block every kernel reports an index out of range in. */
    long statusAddress() { return status; }

    /** The driver, for {@link CudaLaunch}. */
    CudaDriver driver() { return driver; }

    MemorySegment stream() { return stream; }

    /** Threads per block of a grid-stride kernel, and the most blocks a launch uses (a few waves per multiprocessor). */
    static final int THREADS = 256;

    int maxBlocks() { return multiprocessors * 32; }

    /** Remembers that {@code kernel} was launched, for the message of an out-of-range report. */
    void launched(String kernel) {
        synchronized (launched) {
            if (launched.size() == 8) launched.removeFirst();
            launched.addLast(kernel);
        }
    }

    // ------------------------------------------------------------------ DeviceMemory

    @Override
    public MemorySegment allocate(Arena owner, long bytes) {
        long size = Math.max(bytes, 1);
        enter();
        long pointer = driver.allocate(size);
        try {
            driver.memsetAsync(pointer, (byte) 0, size, stream);
        } catch (CudaException e) {
            driver.free(pointer);
            throw e;
        }
        allocatedBytes.addAndGet(size);
        return MemorySegment.ofAddress(pointer).reinterpret(owner, s -> free(pointer, size));
    }

    /** Frees device memory when its owner closes (on any thread: a cleaner's, for an automatic arena). */
    private void free(long pointer, long size) {
        try {
            enter();
            driver.synchronize(stream); // queued work may still use it
            driver.free(pointer);
            allocatedBytes.addAndGet(-size);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "CUDA: freeing " + size + " bytes at 0x" + Long.toHexString(pointer) + " failed: " + e.getMessage());
        }
    }

    @Override
    public void copyFromHost(MemorySegment host, MemorySegment device, long bytes) {
        checkDevice(device, "copy destination");
        synchronized (hostLock) {
            enter();
            MemorySegment pinned = staging();
            for (long done = 0; done < bytes; done += STAGING_BYTES) {
                long n = Math.min(STAGING_BYTES, bytes - done);
                MemorySegment.copy(host, done, pinned, 0, n);
                driver.copyToDeviceAsync(device.address() + done, pinned, n, stream);
                driver.synchronize(stream); // the staging buffer is refilled next
            }
        }
    }

    @Override
    public void copyToHost(MemorySegment device, MemorySegment host, long bytes) {
        checkDevice(device, "copy source");
        synchronized (hostLock) {
            enter();
            MemorySegment pinned = staging();
            for (long done = 0; done < bytes; done += STAGING_BYTES) {
                long n = Math.min(STAGING_BYTES, bytes - done);
                driver.copyToHostAsync(pinned, device.address() + done, n, stream);
                driver.synchronize(stream);
                MemorySegment.copy(pinned, 0, host, done, n);
            }
        }
        checkStatus();
    }

    @Override
    public void copyWithin(MemorySegment from, MemorySegment to, long bytes) {
        checkDevice(from, "copy source");
        checkDevice(to, "copy destination");
        enter();
        driver.copyWithinAsync(to.address(), from.address(), bytes, stream);
    }

    @Override
    public void synchronize() {
        enter();
        driver.synchronize(stream);
        checkStatus();
    }

    /** Reads the status block; if a kernel reported an index out of range, clears it and throws. */
    private void checkStatus() {
        long flag, param, index;
        synchronized (hostLock) {
            enter();
            driver.copyToHostAsync(statusHost, status, 24, stream);
            driver.synchronize(stream);
            flag = statusHost.getAtIndex(ValueLayout.JAVA_LONG, 0);
            param = statusHost.getAtIndex(ValueLayout.JAVA_LONG, 1);
            index = statusHost.getAtIndex(ValueLayout.JAVA_LONG, 2);
            if (flag == 0) return;
            driver.memsetAsync(status, (byte) 0, 24, stream);
            driver.synchronize(stream);
        }
        List<String> recent;
        synchronized (launched) {
            recent = List.copyOf(launched);
        }
        // the block is the device's, not a kernel's: the plan that waits here finds which of its checks has this site
        if (flag == 2) throw IndexCheckFailure.ofOneOf("launched last on " + spec + " " + recent, (int) param, index);
        throw new IndexOutOfBoundsException("a kernel on " + spec + " indexed its parameter " + param + " at " + index
                + ", out of range (the access was skipped); kernels launched last: " + recent);
    }

    private MemorySegment staging() {
        if (staging == null) staging = driver.allocatePinned(STAGING_BYTES);
        return staging;
    }

    /** Device memory is handed around as address-only segments; anything else is host memory. */
    static void checkDevice(MemorySegment s, String role) {
        if (s.byteSize() != 0 || s.address() == 0) {
            throw new IllegalArgumentException("CUDA: the " + role + " is not device memory (a host segment of " + s.byteSize()
                    + " bytes at 0x" + Long.toHexString(s.address()) + ")");
        }
    }

    @Override
    public boolean canRecord() { return !"false".equals(System.getProperty(GRAPHS_PROPERTY)); }

    @Override
    public RecordedWork record(Runnable work) {
        enter();
        driver.beginCapture(stream);
        MemorySegment[] graph;
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            try {
                driver.destroyGraph(driver.endCaptureGraph(stream));
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        graph = driver.endCapture(stream);
        return new CudaGraph(this, graph[0], graph[1]);
    }

    /** A recorded execution: a CUDA graph and its executable instance. */
    private record CudaGraph(CudaDevice device, MemorySegment graph, MemorySegment exec) implements RecordedWork {
        @Override
        public void replay() {
            device.enter();
            device.driver.launchGraph(exec, device.stream);
        }

        @Override
        public void close() {
            device.enter();
            device.driver.synchronize(device.stream); // a replay may be running
            device.driver.destroyGraphExec(exec);
            device.driver.destroyGraph(graph);
        }
    }
}
