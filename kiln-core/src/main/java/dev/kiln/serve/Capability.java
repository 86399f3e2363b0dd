package dev.kiln.serve;

/** A feature of the serving API that a device may or may not offer; see {@link Capabilities}. */
public enum Capability {
    /** {@link ExecutableGraph#copy()}: replicas sharing kernels and weights, one per thread. */
    REPLICAS,
    /** {@link ExecutableGraph#commitNoWait}, {@link ExecutableGraph#runPipelined}: runs overlapping the caller. */
    ASYNC_COMMIT,
    /** {@link ExecutableGraph#bindHandle}: persistent named buffers fed as inputs. */
    HANDLES,
    /** Handles that stay in device memory and are refreshed from an output on the device ({@link ExecutableGraph#setHandleFeed}). */
    DEVICE_RESIDENT_HANDLES,
    /** {@link ExecutableGraph#runRaw} and {@link ExecutableGraph#runSlots}: outputs read in device memory, which the host can address. */
    HOST_READABLE_OUTPUTS,
    /** {@link ExecutableGraph#runTyped}, {@link ExecutableGraph#setParamTyped} with every non-packed dtype. */
    TYPED_IO,
    /** Packed Q8_0 / Q4_0 weights given to {@link ExecutableGraph#setParamTyped} (dequantised into the param). */
    PACKED_WEIGHTS,
    /** A kernel split across worker threads (a THREAD loop) inside one run. */
    THREADED_KERNELS,
    /** {@link ExecutableGraph#setActiveExtent}: runs whose kernels process only the active rows of a symbolic axis. */
    ACTIVE_EXTENT,
    /** Mixture-of-experts residency masks, top-k capture and residency statistics ({@link ExecutableGraph#setMoeResidentExperts}). */
    MOE_RESIDENCY
}
