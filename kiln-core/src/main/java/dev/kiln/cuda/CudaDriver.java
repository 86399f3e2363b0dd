package dev.kiln.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The parts of NVIDIA's driver API ({@code libcuda.so.1}) that Kiln calls, through FFM: no JNI and no CUDA
 * binding library. Each method is one driver call whose {@code CUresult} is checked: anything but success
 * throws {@link CudaException} naming the call and the driver's error. Handles (contexts, streams, modules,
 * functions, events, graphs) are raw addresses; device pointers are {@code long}s.
 *
 * <p>Versioned entry points are named as the driver exports them ({@code cuMemAlloc_v2}, ...), the names
 * {@code cuda.h} maps the plain ones to. Callers make the device's context current on their thread first
 * ({@link #setCurrent}): the driver keeps the current context per thread.
 */
final class CudaDriver {
    /** {@code CU_STREAM_NON_BLOCKING}: the stream does not synchronise with the legacy default stream. */
    static final int STREAM_NON_BLOCKING = 1;
    /** {@code CU_EVENT_DISABLE_TIMING}. */
    static final int EVENT_DISABLE_TIMING = 2;
    /** {@code CU_STREAM_CAPTURE_MODE_THREAD_LOCAL}. */
    static final int CAPTURE_THREAD_LOCAL = 1;
    /** {@code CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT}. */
    static final int ATTRIBUTE_MULTIPROCESSORS = 16;
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR} and {@code _MINOR}. */
    static final int ATTRIBUTE_CC_MAJOR = 75, ATTRIBUTE_CC_MINOR = 76;
    /** {@code CUDA_ERROR_NOT_READY}: an event or stream query found work still running. */
    static final int NOT_READY = 600;

    private static final Linker LINKER = Linker.nativeLinker();
    private final SymbolLookup lib;

    private final MethodHandle cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem,
            cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent, cuMemGetInfo,
            cuStreamCreate, cuStreamSynchronize, cuStreamDestroy, cuStreamWaitEvent,
            cuMemAlloc, cuMemFree, cuMemHostAlloc, cuMemFreeHost, cuMemsetD8Async,
            cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync,
            cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuLaunchKernel,
            cuEventCreate, cuEventRecord, cuEventSynchronize, cuEventQuery, cuEventElapsedTime, cuEventDestroy,
            cuStreamBeginCapture, cuStreamEndCapture, cuGraphInstantiate, cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy,
            cuGetErrorName, cuDriverGetVersion;

    private static volatile CudaDriver instance;

    private CudaDriver(SymbolLookup lib) {
        this.lib = lib;
        cuInit = handle("cuInit", JAVA_INT);
        cuDriverGetVersion = handle("cuDriverGetVersion", ADDRESS);
        cuDeviceGetCount = handle("cuDeviceGetCount", ADDRESS);
        cuDeviceGet = handle("cuDeviceGet", ADDRESS, JAVA_INT);
        cuDeviceGetName = handle("cuDeviceGetName", ADDRESS, JAVA_INT, JAVA_INT);
        cuDeviceGetAttribute = handle("cuDeviceGetAttribute", ADDRESS, JAVA_INT, JAVA_INT);
        cuDeviceTotalMem = handle("cuDeviceTotalMem_v2", ADDRESS, JAVA_INT);
        cuDevicePrimaryCtxRetain = handle("cuDevicePrimaryCtxRetain", ADDRESS, JAVA_INT);
        cuDevicePrimaryCtxRelease = handle("cuDevicePrimaryCtxRelease_v2", JAVA_INT);
        cuCtxSetCurrent = handle("cuCtxSetCurrent", ADDRESS);
        cuMemGetInfo = handle("cuMemGetInfo_v2", ADDRESS, ADDRESS);
        cuStreamCreate = handle("cuStreamCreate", ADDRESS, JAVA_INT);
        cuStreamSynchronize = handle("cuStreamSynchronize", ADDRESS);
        cuStreamDestroy = handle("cuStreamDestroy_v2", ADDRESS);
        cuStreamWaitEvent = handle("cuStreamWaitEvent", ADDRESS, ADDRESS, JAVA_INT);
        cuMemAlloc = handle("cuMemAlloc_v2", ADDRESS, JAVA_LONG);
        cuMemFree = handle("cuMemFree_v2", JAVA_LONG);
        cuMemHostAlloc = handle("cuMemHostAlloc", ADDRESS, JAVA_LONG, JAVA_INT);
        cuMemFreeHost = handle("cuMemFreeHost", ADDRESS);
        cuMemsetD8Async = handle("cuMemsetD8Async", JAVA_LONG, JAVA_BYTE, JAVA_LONG, ADDRESS);
        cuMemcpyHtoDAsync = handle("cuMemcpyHtoDAsync_v2", JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS);
        cuMemcpyDtoHAsync = handle("cuMemcpyDtoHAsync_v2", ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS);
        cuMemcpyDtoDAsync = handle("cuMemcpyDtoDAsync_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS);
        cuModuleLoadData = handle("cuModuleLoadData", ADDRESS, ADDRESS);
        cuModuleUnload = handle("cuModuleUnload", ADDRESS);
        cuModuleGetFunction = handle("cuModuleGetFunction", ADDRESS, ADDRESS, ADDRESS);
        cuLaunchKernel = handle("cuLaunchKernel", ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                ADDRESS, ADDRESS, ADDRESS);
        cuEventCreate = handle("cuEventCreate", ADDRESS, JAVA_INT);
        cuEventRecord = handle("cuEventRecord", ADDRESS, ADDRESS);
        cuEventSynchronize = handle("cuEventSynchronize", ADDRESS);
        cuEventQuery = handle("cuEventQuery", ADDRESS);
        cuEventElapsedTime = lib.find("cuEventElapsedTime_v2").isPresent() // CUDA 12.8 renamed it; older drivers have only the first
                ? handle("cuEventElapsedTime_v2", ADDRESS, ADDRESS, ADDRESS) : handle("cuEventElapsedTime", ADDRESS, ADDRESS, ADDRESS);
        cuEventDestroy = handle("cuEventDestroy_v2", ADDRESS);
        cuStreamBeginCapture = handle("cuStreamBeginCapture_v2", ADDRESS, JAVA_INT);
        cuStreamEndCapture = handle("cuStreamEndCapture", ADDRESS, ADDRESS);
        cuGraphInstantiate = handle("cuGraphInstantiateWithFlags", ADDRESS, ADDRESS, JAVA_LONG);
        cuGraphLaunch = handle("cuGraphLaunch", ADDRESS, ADDRESS);
        cuGraphExecDestroy = handle("cuGraphExecDestroy", ADDRESS);
        cuGraphDestroy = handle("cuGraphDestroy", ADDRESS);
        cuGetErrorName = handle("cuGetErrorName", JAVA_INT, ADDRESS);
    }

    /**
     * The driver, loaded and initialised ({@code cuInit}) once per process.
     *
     * @throws CudaException if {@code libcuda.so.1} cannot be loaded or {@code cuInit} fails
     */
    static CudaDriver get() {
        CudaDriver d = instance;
        if (d == null) {
            synchronized (CudaDriver.class) {
                if (instance == null) {
                    SymbolLookup lib;
                    try {
                        lib = SymbolLookup.libraryLookup(CudaDeviceProvider.DRIVER, Arena.global());
                    } catch (IllegalArgumentException e) {
                        throw new CudaException("no " + CudaDeviceProvider.DRIVER + " found (no NVIDIA driver on this machine)", -1);
                    }
                    CudaDriver created = new CudaDriver(lib);
                    created.check("cuInit", call(() -> (int) created.cuInit.invokeExact(0)));
                    instance = created;
                }
                d = instance;
            }
        }
        return d;
    }

    private MethodHandle handle(String name, java.lang.foreign.MemoryLayout... args) {
        MemorySegment symbol = lib.find(name).orElseThrow(() -> new CudaException(
                CudaDeviceProvider.DRIVER + " has no entry point " + name + " (the driver is older than Kiln needs)", -1));
        return LINKER.downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, args));
    }

    @FunctionalInterface
    private interface Call { int invoke() throws Throwable; }

    private static int call(Call c) {
        try {
            return c.invoke();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("CUDA driver call failed to run: " + t, t);
        }
    }

    /** Throws unless {@code result} is {@code CUDA_SUCCESS}. */
    void check(String what, int result) {
        if (result != 0) throw new CudaException(what + " failed: " + errorName(result), result);
    }

    /** The driver's name of a {@code CUresult} ({@code CUDA_ERROR_OUT_OF_MEMORY}), with its number. */
    String errorName(int result) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int r = (int) cuGetErrorName.invokeExact(result, out);
            if (r != 0) return "CUresult " + result;
            return out.get(ADDRESS, 0).reinterpret(256).getString(0) + " (" + result + ")";
        } catch (Throwable t) {
            return "CUresult " + result;
        }
    }

    // ------------------------------------------------------------------ devices and contexts

    int deviceCount() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment n = a.allocate(JAVA_INT);
            check("cuDeviceGetCount", call(() -> (int) cuDeviceGetCount.invokeExact(n)));
            return n.get(JAVA_INT, 0);
        }
    }

    int driverVersion() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment n = a.allocate(JAVA_INT);
            check("cuDriverGetVersion", call(() -> (int) cuDriverGetVersion.invokeExact(n)));
            return n.get(JAVA_INT, 0);
        }
    }

    int device(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment d = a.allocate(JAVA_INT);
            check("cuDeviceGet(" + ordinal + ")", call(() -> (int) cuDeviceGet.invokeExact(d, ordinal)));
            return d.get(JAVA_INT, 0);
        }
    }

    String deviceName(int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(256);
            check("cuDeviceGetName", call(() -> (int) cuDeviceGetName.invokeExact(s, 256, device)));
            return s.getString(0);
        }
    }

    int attribute(int device, int attribute) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(JAVA_INT);
            check("cuDeviceGetAttribute(" + attribute + ")", call(() -> (int) cuDeviceGetAttribute.invokeExact(v, attribute, device)));
            return v.get(JAVA_INT, 0);
        }
    }

    long totalMemory(int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(JAVA_LONG);
            check("cuDeviceTotalMem", call(() -> (int) cuDeviceTotalMem.invokeExact(v, device)));
            return v.get(JAVA_LONG, 0);
        }
    }

    /** The device's primary context (retained; {@link #releasePrimaryContext} once per retain). */
    MemorySegment retainPrimaryContext(int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment c = a.allocate(ADDRESS);
            check("cuDevicePrimaryCtxRetain", call(() -> (int) cuDevicePrimaryCtxRetain.invokeExact(c, device)));
            return c.get(ADDRESS, 0);
        }
    }

    void releasePrimaryContext(int device) { check("cuDevicePrimaryCtxRelease", call(() -> (int) cuDevicePrimaryCtxRelease.invokeExact(device))); }

    void setCurrent(MemorySegment context) { check("cuCtxSetCurrent", call(() -> (int) cuCtxSetCurrent.invokeExact(context))); }

    /** Free and total bytes of the current context's device. */
    long[] memoryInfo() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment free = a.allocate(JAVA_LONG), total = a.allocate(JAVA_LONG);
            check("cuMemGetInfo", call(() -> (int) cuMemGetInfo.invokeExact(free, total)));
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        }
    }

    // ------------------------------------------------------------------ streams and events

    MemorySegment createStream(int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(ADDRESS);
            check("cuStreamCreate", call(() -> (int) cuStreamCreate.invokeExact(s, flags)));
            return s.get(ADDRESS, 0);
        }
    }

    void synchronize(MemorySegment stream) { check("cuStreamSynchronize", call(() -> (int) cuStreamSynchronize.invokeExact(stream))); }

    void destroyStream(MemorySegment stream) { check("cuStreamDestroy", call(() -> (int) cuStreamDestroy.invokeExact(stream))); }

    void waitEvent(MemorySegment stream, MemorySegment event) {
        check("cuStreamWaitEvent", call(() -> (int) cuStreamWaitEvent.invokeExact(stream, event, 0)));
    }

    MemorySegment createEvent(int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment e = a.allocate(ADDRESS);
            check("cuEventCreate", call(() -> (int) cuEventCreate.invokeExact(e, flags)));
            return e.get(ADDRESS, 0);
        }
    }

    void record(MemorySegment event, MemorySegment stream) { check("cuEventRecord", call(() -> (int) cuEventRecord.invokeExact(event, stream))); }

    void synchronizeEvent(MemorySegment event) { check("cuEventSynchronize", call(() -> (int) cuEventSynchronize.invokeExact(event))); }

    /** Whether the work before {@code event} has finished. */
    boolean eventDone(MemorySegment event) {
        int r = call(() -> (int) cuEventQuery.invokeExact(event));
        if (r == NOT_READY) return false;
        check("cuEventQuery", r);
        return true;
    }

    /** Milliseconds between two recorded (and finished) timing events. */
    float elapsedMillis(MemorySegment start, MemorySegment end) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ms = a.allocate(JAVA_FLOAT);
            check("cuEventElapsedTime", call(() -> (int) cuEventElapsedTime.invokeExact(ms, start, end)));
            return ms.get(JAVA_FLOAT, 0);
        }
    }

    void destroyEvent(MemorySegment event) { check("cuEventDestroy", call(() -> (int) cuEventDestroy.invokeExact(event))); }

    // ------------------------------------------------------------------ memory

    long allocate(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(JAVA_LONG);
            check("cuMemAlloc(" + bytes + " bytes)", call(() -> (int) cuMemAlloc.invokeExact(p, bytes)));
            return p.get(JAVA_LONG, 0);
        }
    }

    void free(long pointer) { check("cuMemFree", call(() -> (int) cuMemFree.invokeExact(pointer))); }

    /** Page-locked host memory, {@code bytes} long (the source or target of an asynchronous copy). */
    MemorySegment allocatePinned(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(ADDRESS);
            check("cuMemHostAlloc(" + bytes + " bytes)", call(() -> (int) cuMemHostAlloc.invokeExact(p, bytes, 0)));
            return p.get(ADDRESS, 0).reinterpret(bytes);
        }
    }

    void freePinned(MemorySegment host) { check("cuMemFreeHost", call(() -> (int) cuMemFreeHost.invokeExact(host))); }

    void memsetAsync(long pointer, byte value, long bytes, MemorySegment stream) {
        check("cuMemsetD8Async", call(() -> (int) cuMemsetD8Async.invokeExact(pointer, value, bytes, stream)));
    }

    void copyToDeviceAsync(long dst, MemorySegment src, long bytes, MemorySegment stream) {
        check("cuMemcpyHtoDAsync", call(() -> (int) cuMemcpyHtoDAsync.invokeExact(dst, src, bytes, stream)));
    }

    void copyToHostAsync(MemorySegment dst, long src, long bytes, MemorySegment stream) {
        check("cuMemcpyDtoHAsync", call(() -> (int) cuMemcpyDtoHAsync.invokeExact(dst, src, bytes, stream)));
    }

    void copyWithinAsync(long dst, long src, long bytes, MemorySegment stream) {
        check("cuMemcpyDtoDAsync", call(() -> (int) cuMemcpyDtoDAsync.invokeExact(dst, src, bytes, stream)));
    }

    // ------------------------------------------------------------------ modules and launches

    /** Loads a PTX module (the driver compiles it for the device). */
    MemorySegment loadModule(String ptx) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = a.allocate(ADDRESS);
            MemorySegment image = a.allocateFrom(ptx); // NUL-terminated, as cuModuleLoadData takes PTX text
            check("cuModuleLoadData", call(() -> (int) cuModuleLoadData.invokeExact(m, image)));
            return m.get(ADDRESS, 0);
        }
    }

    void unloadModule(MemorySegment module) { check("cuModuleUnload", call(() -> (int) cuModuleUnload.invokeExact(module))); }

    MemorySegment function(MemorySegment module, String symbol) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment f = a.allocate(ADDRESS);
            MemorySegment name = a.allocateFrom(symbol);
            check("cuModuleGetFunction(" + symbol + ")", call(() -> (int) cuModuleGetFunction.invokeExact(f, module, name)));
            return f.get(ADDRESS, 0);
        }
    }

    /** Launches {@code function} on a 1-d grid; {@code params} is the array of pointers to each argument. */
    void launch(MemorySegment function, int blocks, int threads, MemorySegment stream, MemorySegment params) {
        launch(function, blocks, 1, 1, threads, stream, params);
    }

    /** Launches {@code function} on a 3-d grid of 1-d blocks. */
    void launch(MemorySegment function, int x, int y, int z, int threads, MemorySegment stream, MemorySegment params) {
        int r = call(() -> (int) cuLaunchKernel.invokeExact(function, x, y, z, threads, 1, 1, 0, stream, params, MemorySegment.NULL));
        if (r != 0) check("cuLaunchKernel(" + x + "x" + y + "x" + z + " blocks of " + threads + ")", r);
    }

    // ------------------------------------------------------------------ graphs

    void beginCapture(MemorySegment stream) {
        check("cuStreamBeginCapture", call(() -> (int) cuStreamBeginCapture.invokeExact(stream, CAPTURE_THREAD_LOCAL)));
    }

    /** Ends a capture: the graph of the work queued since {@link #beginCapture}. */
    MemorySegment endCaptureGraph(MemorySegment stream) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment g = a.allocate(ADDRESS);
            check("cuStreamEndCapture", call(() -> (int) cuStreamEndCapture.invokeExact(stream, g)));
            return g.get(ADDRESS, 0);
        }
    }

    /** Ends a capture and instantiates its graph; returns {graph, executable graph}. */
    MemorySegment[] endCapture(MemorySegment stream) {
        MemorySegment graph = endCaptureGraph(stream);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment e = a.allocate(ADDRESS);
            check("cuGraphInstantiateWithFlags", call(() -> (int) cuGraphInstantiate.invokeExact(e, graph, 0L)));
            return new MemorySegment[] {graph, e.get(ADDRESS, 0)};
        } catch (CudaException ex) {
            destroyGraph(graph);
            throw ex;
        }
    }

    void launchGraph(MemorySegment exec, MemorySegment stream) { check("cuGraphLaunch", call(() -> (int) cuGraphLaunch.invokeExact(exec, stream))); }

    void destroyGraphExec(MemorySegment exec) { check("cuGraphExecDestroy", call(() -> (int) cuGraphExecDestroy.invokeExact(exec))); }

    void destroyGraph(MemorySegment graph) { check("cuGraphDestroy", call(() -> (int) cuGraphDestroy.invokeExact(graph))); }
}
