package dev.kiln.serve;

import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import dev.kiln.runtime.ExecutionPlan;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The memory a compiled graph reads and writes per run: the input buffers the plan reads, where the plan
 * writes each output, and the output block (every output at a fixed, aligned offset) that
 * {@link CompiledGraph#arena()} shows and the raw views of {@link CompiledGraph#runRaw} re-scope.
 */
final class IoBlock {
    private final SharedGraphState shared;
    final MemorySegment[] inputs;      // per input, the plan reads it
    final MemorySegment[] planOutputs; // per output, where the plan writes it
    final MemorySegment[] outputs;     // per output, its slice of the block
    final MemorySegment arenaView;
    final OutputSlots slots;
    /** Per output: the variable of its first axis when that axis is symbolic (the rows a run computes), else null. */
    private final Variable[] leading;
    /** Per output: bytes of one index of its first axis. */
    private final long[] rowBytes;
    /** Per output: the bytes of its rows the last run computed (all of them unless its first axis is symbolic). */
    private final long[] activeBytes;
    /** Per output: the index of {@link #leading}'s variable among the plan's (-1: none, or the plan has no such variable). */
    private final int[] leadingIndex;
    /**
     * Per output with an axis whose extent a host step of the plan produces (a data-dependent count), the plan's index of
     * each axis's variable (-1 for a fixed axis); null for the others. Such an output is read back at its extent.
     */
    private final int[][] producedAxes;
    /** Per output of {@link #producedAxes}, its dims in the last run; null before a run and for the others. */
    private final int[][] extentDims;
    private Arena rawArena;

    IoBlock(SharedGraphState shared, ExecutionPlan plan, Arena arena, MemorySegment[] inputs) {
        this.shared = shared;
        this.inputs = inputs;
        int n = shared.outputs.size();
        this.planOutputs = new MemorySegment[n];
        long[] offsets = new long[n], lengths = new long[n];
        long end = 0;
        for (int i = 0; i < n; i++) {
            TensorSpec o = shared.outputs.get(i);
            planOutputs[i] = plan.outputBuffer(i).segment().asSlice(0, o.byteSize());
            offsets[i] = end;
            lengths[i] = o.numel();
            end = SharedGraphState.align(end + o.byteSize());
        }
        this.leading = new Variable[n];
        this.rowBytes = new long[n];
        this.activeBytes = new long[n];
        this.leadingIndex = new int[n];
        for (int i = 0; i < n; i++) {
            TensorSpec o = shared.outputs.get(i);
            activeBytes[i] = o.byteSize();
            if (o.shape().rank() > 0 && o.shape().variable(0) != null && o.shape().dim(0) > 0) {
                leading[i] = o.shape().variable(0);
                rowBytes[i] = o.byteSize() / o.shape().dim(0);
                leadingIndex[i] = plan.variables().indexOf(leading[i]);
            }
        }
        this.producedAxes = new int[n][];
        this.extentDims = new int[n][];
        for (int i = 0; i < n; i++) {
            Shape s = shared.outputs.get(i).shape();
            int[] vars = new int[s.rank()];
            boolean any = false;
            for (int a = 0; a < s.rank(); a++) {
                vars[a] = s.variable(a) == null ? -1 : plan.variables().indexOf(s.variable(a));
                any |= vars[a] >= 0 && plan.variableSource(vars[a]) instanceof dev.kiln.runtime.VariableSource.Step;
            }
            if (any) producedAxes[i] = vars;
        }
        MemorySegment outputBlock = arena.allocate(Math.max(end, 1), SharedGraphState.ALIGN);
        this.outputs = new MemorySegment[n];
        for (int i = 0; i < n; i++) outputs[i] = outputBlock.asSlice(offsets[i], shared.outputs.get(i).byteSize());
        this.arenaView = outputBlock.asReadOnly();
        this.slots = new OutputSlots(offsets, lengths, shared.outputs.stream().map(TensorSpec::dtype).toList());
    }

    /** Writes the given float inputs (checked beforehand) into the plan's input buffers. */
    void writeInputs(Map<String, float[]> in) {
        for (var e : in.entrySet()) {
            int i = shared.inputIndex.get(e.getKey());
            writeInput(i, e.getValue());
        }
    }

    void writeInput(int i, float[] values) { DTypeCodec.writeFloats(values, inputs[i], shared.inputs.get(i).dtype()); }

    /** Writes the given typed inputs (checked beforehand: each in its input's dtype) into the plan's input buffers. */
    void writeTypedInputs(Map<String, TypedValues> in) {
        for (var e : in.entrySet()) {
            int i = shared.inputIndex.get(e.getKey());
            TensorSpec s = shared.inputs.get(i);
            DTypeCodec.typedToBuffer(MemorySegment.ofArray(e.getValue().bytes()), s.dtype(), inputs[i], s.dtype(), s.numel());
        }
    }

    /** Input {@code i} as it is now (a handle's value), as floats. */
    float[] readInput(int i) {
        float[] out = new float[Math.toIntExact(shared.inputs.get(i).numel())];
        DTypeCodec.readFloats(inputs[i], shared.inputs.get(i).dtype(), out);
        return out;
    }

    /** Copies output {@code output} as the plan wrote it into input {@code input} (a handle fed by the run). */
    void feed(int input, int output) { MemorySegment.copy(planOutputs[output], 0, inputs[input], 0, activeBytes[output]); }

    /**
     * Notes which rows of each output the coming copies take: an output whose first axis is symbolic holds only the rows
     * below its variable's value (a run computes no others), so feeds and the output block copy just those, not the
     * maximum extent (a KV cache of the whole context, on every decode step).
     */
    void setExtents(Variables variables) {
        for (int i = 0; i < leading.length; i++) {
            if (leading[i] != null) activeBytes[i] = Math.min(planOutputs[i].byteSize(), variables.value(leadingIndex[i], leading[i]) * rowBytes[i]);
            if (producedAxes[i] == null) continue;
            Shape s = shared.outputs.get(i).shape();
            int[] d = s.toArray();
            for (int a = 0; a < d.length; a++) if (producedAxes[i][a] >= 0) d[a] = Math.toIntExact(variables.value(producedAxes[i][a], s.variable(a)));
            extentDims[i] = d;
        }
    }

    /** The dims of output {@code i} in the last run: an extent a host step produced at its count, others at their maximum. */
    int[] outputDims(int i) { return extentDims[i] != null ? extentDims[i].clone() : shared.outputs.get(i).shape().toArray(); }

    /**
     * Output {@code i}'s bytes: its slice of the block, or, where a host step produced an extent, its leading corner of
     * the last run's dims, compacted into C order (the rows past a count are not values).
     */
    private MemorySegment valuesOf(int i) {
        if (extentDims[i] == null) return outputs[i];
        TensorSpec s = shared.outputs.get(i);
        int[] max = s.shape().toArray(), d = extentDims[i];
        long item = s.dtype().byteSize(1), n = Shape.of(d).numel();
        MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(Math.max(1, n * item))]);
        if (n == 0) return out.asSlice(0, 0);
        long[] from = Shape.of(max).strides(), to = Shape.of(d).strides();
        int[] idx = new int[d.length];
        for (long k = 0; k < n; k++) {
            long src = 0;
            for (int a = 0; a < d.length; a++) src += idx[a] * from[a];
            MemorySegment.copy(outputs[i], src * item, out, k * item, item);
            for (int a = d.length - 1; a >= 0 && ++idx[a] == d[a]; a--) idx[a] = 0;
        }
        return out;
    }

    /** Copies every output the plan wrote (its computed rows) into its slice of the output block. */
    void fillOutputBlock() {
        for (int i = 0; i < outputs.length; i++) MemorySegment.copy(planOutputs[i], 0, outputs[i], 0, activeBytes[i]);
    }

    float[] readOutput(int i) {
        MemorySegment v = valuesOf(i);
        float[] out = new float[Math.toIntExact(v.byteSize() / shared.outputs.get(i).dtype().byteSize(1))];
        DTypeCodec.readFloats(v, shared.outputs.get(i).dtype(), out);
        return out;
    }

    List<float[]> readOutputs() {
        List<float[]> out = new ArrayList<>(outputs.length);
        for (int i = 0; i < outputs.length; i++) out.add(readOutput(i));
        return out;
    }

    List<TypedValues> readTypedOutputs() {
        List<TypedValues> out = new ArrayList<>(outputs.length);
        for (int i = 0; i < outputs.length; i++) {
            TensorSpec s = shared.outputs.get(i);
            MemorySegment v = valuesOf(i);
            out.add(new TypedValues(s.dtype(), DTypeCodec.bufferToTyped(v, s.dtype(), v.byteSize() / s.dtype().byteSize(1))));
        }
        return out;
    }

    /** Read-only views of the output block, valid until {@link #invalidateRaw()}. */
    List<MemorySegment> rawViews() {
        // Views of the output block itself, re-scoped to an arena of this run: closing that arena at the next
        // run kills the views, while the block's memory stays owned (and freed) by the graph's own arena.
        rawArena = Arena.ofShared();
        List<MemorySegment> views = new ArrayList<>(outputs.length);
        for (MemorySegment o : outputs) views.add(o.reinterpret(o.byteSize(), rawArena, null).asReadOnly());
        return List.copyOf(views);
    }

    void invalidateRaw() {
        if (rawArena != null) {
            rawArena.close();
            rawArena = null;
        }
    }
}
