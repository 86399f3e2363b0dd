package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

/**
 * A compiled graph ready to run on one device, fed by name: the serving contract of Kiln (DESIGN §5).
 * {@link CompiledGraph} is the implementation; {@link Session#compile} makes one.
 *
 * <p><b>Threads.</b> One graph serves one thread at a time; give every other thread its own
 * {@link #copy()}. Asynchronous commits run on the graph's own executor thread, and every other method
 * first waits for them ({@link #syncPending()}), so no call ever sees a half-finished run.
 *
 * <p><b>Errors.</b> An unknown name (the message lists the known ones), a wrong number of values
 * (expected and given), a wrong dtype, or a handle of the wrong size is an
 * {@link IllegalArgumentException}, raised before anything is written or run; a capability the device
 * lacks is an {@link UnsupportedCapabilityException}; a param never set, or a variable never given, is an
 * {@link IllegalStateException}. Nothing is ever silently ignored.
 *
 * <p><b>Values.</b> {@code float[]} values are converted to an input's declared dtype as a cast
 * (floats rounded to nearest even, integers truncated toward zero); outputs are converted to float. Use
 * {@link #runTyped} for exact bytes of any dtype.
 */
public interface ExecutableGraph extends AutoCloseable {
    // ---------------------------------------------------------------- description

    /** The device the graph runs on. */
    DeviceSpec device();

    /** What the device offers through this API. */
    Capabilities capabilities();

    /** The inputs, in declaration order (the order {@link #runSlots} takes them). */
    List<TensorSpec> inputs();

    /** The parameters, in declaration order. */
    List<TensorSpec> params();

    /** The outputs, in the order runs return them. */
    List<TensorSpec> outputs();

    // ---------------------------------------------------------------- parameters and variables

    /**
     * Sets a parameter from floats (converted to its dtype).
     *
     * @throws IllegalArgumentException if there is no such param or the length is wrong
     * @throws IllegalStateException    on a replica, whose params are shared read-only with its original
     */
    void setParam(String name, float[] values);

    /**
     * Sets a parameter from raw bytes of its own dtype, in native byte order (e.g. a memory-mapped weight
     * file); exactly {@code dtype.byteSize(numel)} bytes.
     */
    void setParam(String name, MemorySegment bytes);

    /**
     * Sets a parameter from little-endian bytes of {@code dtype}: the param's own dtype (copied exactly), or
     * packed {@link DType#Q8_0} / {@link DType#Q4_0} blocks for a float param (dequantised, then rounded to
     * the param's dtype). See {@link DTypeCodec} for the layouts.
     *
     * @throws IllegalArgumentException for another dtype, or a byte count that does not match
     */
    void setParamTyped(String name, byte[] bytes, DType dtype);

    /** As {@link #setParamTyped(String, byte[], DType)} with the bytes in a segment. */
    void setParamTyped(String name, MemorySegment bytes, DType dtype);

    /**
     * Gives a symbolic variable of the graph ({@link dev.kiln.Tensor#variable}) its value for the following
     * runs; checked against the variable's bounds now.
     *
     * @throws IllegalArgumentException if the graph has no such variable or the value is out of bounds
     */
    void setVariable(String name, long value);

    /**
     * Makes the following runs process only the first {@code actual} rows of the graph's symbolic axis,
     * which was compiled at {@code upper} rows (the maximum of its {@link dev.kiln.types.Variable}): every kernel
     * loops only over the active rows, so the work shrinks with {@code actual}, and rows past it are never
     * read. Outputs past {@code actual} rows hold stale values. Sticky until changed or
     * {@link #clearActiveExtent() cleared}; {@link BucketedCompileCache#runPadded} is the usual caller.
     *
     * @throws IllegalArgumentException if {@code upper} is not the extent the graph was compiled at, or
     *     {@code actual} is outside the variable's range
     * @throws IllegalStateException    if the graph's inputs have no symbolic axis, or several variables
     *     (give each its value with {@link #setVariable})
     */
    void setActiveExtent(int actual, int upper);

    /** Runs process the whole compiled extent again (the symbolic axis at its maximum). */
    void clearActiveExtent();

    // ---------------------------------------------------------------- runs

    /**
     * Runs with every input that is not bound to a handle given by name, and returns the outputs as new
     * arrays, in declared order.
     */
    List<float[]> run(Map<String, float[]> inputs);

    /**
     * Runs as {@link #run} and returns read-only views of the outputs (values of each output's dtype, native
     * order). The views belong to this run: the next run of this graph (of any kind), or closing it,
     * invalidates them, and any later access throws {@link IllegalStateException}.
     */
    List<MemorySegment> runRaw(Map<String, float[]> inputs);

    /**
     * The fastest run: inputs by position in {@link #inputs()} order ({@code null} for an input bound to a
     * handle), outputs left in {@link #arena()} at the offsets of the returned slots. Nothing is allocated
     * per call (pass an array rather than separate arguments, so that no varargs array is made).
     */
    OutputSlots runSlots(float[]... inputs);

    /**
     * A read-only segment holding every output at the fixed offsets of {@link #runSlots}'s slots; valid
     * until the graph is closed, overwritten by every run.
     */
    MemorySegment arena();

    /**
     * Runs with inputs given as typed bytes, each exactly of its input's declared dtype, and returns every
     * output as little-endian bytes of its dtype.
     */
    List<TypedValues> runTyped(Map<String, TypedValues> inputs);

    // ---------------------------------------------------------------- replicas

    /**
     * An independent replica for another thread: the same compiled kernels and the same weights (shared,
     * read-only on the replica), its own inputs, handles (copied), intermediates and outputs. Close it
     * when done; weights are freed when the original and every replica are closed.
     */
    ExecutableGraph copy();

    /**
     * {@link #copy()}, with the replica's handles bound as the original's (and fed the same way) but holding zeros
     * instead of the original's values: a new sequence on a language model's graph needs the handles, not another
     * sequence's KV caches, which can be hundreds of megabytes. {@code copy(true)} is {@link #copy()}.
     */
    ExecutableGraph copy(boolean handleValues);

    // ---------------------------------------------------------------- handles

    /**
     * Binds input {@code name} to a persistent handle holding {@code values}: from now on every run reads
     * the handle as that input and the caller no longer gives it (e.g. a KV cache). Binding again
     * overwrites the values.
     *
     * @throws IllegalArgumentException if there is no such input or the size differs from the input's
     */
    void bindHandle(String name, float[] values);

    /**
     * {@link #bindHandle} to zeros, without a values array the size of the input (a KV cache of a long context is
     * hundreds of megabytes).
     *
     * @throws IllegalArgumentException if there is no such input
     */
    void bindZeroHandle(String name);

    /** The handle's current values. */
    float[] readHandle(String name);

    /** Whether input {@code name} is bound to a handle. */
    boolean hasHandle(String name);

    /**
     * After every following run, output {@code outputIndex} is copied into handle {@code handle} on the
     * device (the handle's next value, e.g. the updated KV cache). The output must have the handle's dtype
     * and size.
     */
    void setHandleFeed(String handle, int outputIndex);

    /** Stops the feed of {@link #setHandleFeed}; the handle keeps its value. */
    void clearHandleFeed(String handle);

    /**
     * Runs once, copies output {@code outputIndex} into {@code handle} on the device and returns that
     * output (as {@link #setHandleFeed} for one run).
     */
    float[] runFeedHandle(Map<String, float[]> inputs, String handle, int outputIndex);

    // ---------------------------------------------------------------- asynchronous runs

    /**
     * Starts a run and returns at once; the inputs are copied before it returns, so the caller may reuse
     * its arrays. Runs happen in commit order; each one's inputs are staged apart from the buffers the
     * running one reads. Outputs of all but the last are overwritten; use {@link #runPipelined} to keep
     * them. Errors are reported by {@link #syncPending}.
     */
    void commitNoWait(Map<String, float[]> inputs);

    /**
     * Waits for every committed run.
     *
     * @throws RuntimeException the first failure of a committed run (later committed runs were skipped)
     */
    void syncPending();

    /**
     * Runs every input set, overlapping the staging of each with the run before it, and returns each run's
     * outputs: {@code result.get(run).get(output)}. Equal to calling {@link #run} for each set in order.
     */
    List<List<float[]>> runPipelined(List<Map<String, float[]>> inputSets);

    /** Waits for pending runs and frees the graph's memory (weights once no replica uses them). */
    @Override
    void close();

    // ---------------------------------------------------------------- mixture of experts

    /**
     * The same residency mask for every mixture-of-experts layer of the graph: a resident expert's weights
     * are read in place; a token routed to a non-resident one stages its weights first (a miss). Results
     * do not depend on the masks.
     *
     * @throws IllegalArgumentException if the graph has no MoE layer or the mask's length is not the
     *     layers' expert count
     */
    void setMoeResidentExperts(boolean[] mask);

    /** One residency mask per MoE layer, in graph order (see {@link #setMoeResidentExperts}). */
    void setMoeResidentExpertsPerLayer(boolean[][] masks);

    /**
     * Records the router's chosen experts of every MoE layer on each following run.
     *
     * @return false if the graph has no MoE layer
     */
    boolean enableMoeTopkCapture(int numExperts);

    /** Per MoE layer in graph order, the experts chosen in the last run (tokens x k), then cleared; empty if none was captured. */
    java.util.Optional<List<int[]>> takeMoeTopkCapture();

    /** Expert hits, misses and bytes staged since the last call, per layer; empty if the graph has no MoE layer. */
    java.util.Optional<dev.kiln.serve.moe.MoeResidencyStats> takeMoeResidencyStats();
}
