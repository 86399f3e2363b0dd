package dev.kiln.llm.model;

import dev.kiln.Tensor;
import dev.kiln.codegen.ReductionOrder;
import dev.kiln.llm.gguf.BlockTensor;
import dev.kiln.llm.gguf.NativeBlockProducts;
import dev.kiln.llm.gguf.QuantizedMatmul;
import dev.kiln.serve.Graph;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The Llama family (Llama 2 and 3, Mistral, Qwen2, SmolLM) as one Kiln {@link Graph}: a chunk of tokens at the end
 * of a sequence whose earlier keys and values sit in KV caches. Prefill is the graph run on a whole prompt (or on
 * pieces of it), decode the same graph run on one token; one compiled plan serves both, since the chunk's length
 * and the sequence's length are symbolic variables.
 *
 * <p><b>Inputs.</b> {@value #TOKENS}: i32 ids, (chunk). {@code k<i>}, {@code v<i>}: layer i's caches,
 * (context, kvHeads * headDim) of the cache dtype, bound as handles, which the graph updates in place.
 * <b>Variables.</b> {@value #CHUNK} (1 to maxChunk): the tokens given; {@value #LENGTH} (1 to context): the sequence's
 * length after them, so the chunk holds positions {@code [length - chunk, length)}.
 * <b>Outputs.</b> the logits of the chunk's last token (1, vocab), or of all its tokens (chunk, vocab) when built with
 * {@code allLogits}. The caches are written in place: each run writes the chunk's rows into the cache inputs' buffers.
 *
 * <p><b>Per block</b> (pre-norm): {@code x += o(attention(rope(q(n(x))), rope(k(n(x))), v(n(x))))},
 * {@code x += down(silu(gate(n(x))) * up(n(x)))}, {@code n} an RMSNorm; the logits are
 * {@code output(norm(x))}. Attention is causal, grouped-query (each key/value head serves
 * {@code heads / kvHeads} query heads), scaled by {@code 1/sqrt(headDim)}, and sees only the last
 * {@code slidingWindow} positions when there is a window (a key j is visible to a query at position p when
 * {@code j <= p} and {@code p - j < window}, as transformers masks it). The cache and the attention run over the
 * first {@code length} rows only: rows past it are neither computed nor read.
 *
 * <p>Weights are graph constants (read in place, shared by every compiled copy); every product runs and accumulates in
 * f32 ({@link LlamaWeights} widens half-precision weights when they load). Block-quantised weights are multiplied and
 * looked up in place, from their blocks ({@link BlockTensor}).
 */
public final class LlamaGraph {
    /** The input of token ids. */
    public static final String TOKENS = "tokens";
    /** The variable of the chunk's length. */
    public static final String CHUNK = "chunk";
    /** The variable of the sequence's length after the chunk. */
    public static final String LENGTH = "length";

    private final LlamaSpec spec;
    private final LlamaWeights w;
    private final int maxChunk, context;
    private final DType cacheType;
    /** Native dot products for block-quantised weights (the CLANG device's), or null for the Vector API. */
    private final NativeBlockProducts natives;
    private final Graph g = new Graph();
    private final Variable chunk, length;
    private final Tensor start;      // the chunk's first position (i64 scalar)
    private final Tensor rowPosition; // (chunk): each row's position in the sequence
    private final Tensor cos, sin;   // (chunk, 1, headDim / 2)
    private final Tensor cosTable, sinTable; // (context, headDim / 2): every position's rotation

    private LlamaGraph(LlamaSpec spec, LlamaWeights w, int maxChunk, int context, DType cacheType, NativeBlockProducts natives) {
        this.natives = natives;
        this.spec = spec;
        this.w = w;
        this.maxChunk = maxChunk;
        this.context = context;
        this.cacheType = cacheType;
        this.chunk = new Variable(CHUNK, 1, maxChunk);
        this.length = new Variable(LENGTH, 1, context);
        this.start = Tensor.variable(length).sub(Tensor.variable(chunk));
        // clamped: a kernel that computes the table at its full extent must not index past the context
        this.rowPosition = Tensor.arange(maxChunk).cast(DType.I64).add(start).minimum(context - 1).withSymbolicDim(0, chunk);
        int half = spec.headDim() / 2;
        float[][] tables = Rope.cosSinTables(spec.inverseFrequencies(), context);
        this.cosTable = Tensor.of(tables[0], context, half);
        this.sinTable = Tensor.of(tables[1], context, half);
        this.cos = cosTable.indexSelect(0, rowPosition).reshape(maxChunk, 1, half);
        this.sin = sinTable.indexSelect(0, rowPosition).reshape(maxChunk, 1, half);
    }

    /** Name of layer {@code i}'s key cache input. */
    public static String keyCache(int i) { return "k" + i; }

    /** Name of layer {@code i}'s value cache input. */
    public static String valueCache(int i) { return "v" + i; }

    /**
     * The graph for chunks of up to {@code maxChunk} tokens in sequences of up to {@code context} tokens, caches of
     * {@code cacheType} (f32, or f16 to halve their memory), decode's products with block-quantised weights by
     * {@code natives} (the CLANG device's native code, {@link NativeBlockProducts#forDevice}) or, when null, the Vector API.
     */
    public static Graph build(LlamaSpec spec, LlamaWeights weights, int maxChunk, int context, DType cacheType, boolean allLogits, NativeBlockProducts natives) {
        weights.requireF32();
        if (maxChunk < 1 || maxChunk > context) throw new IllegalArgumentException("maxChunk " + maxChunk + " must be in [1, context " + context + "]");
        if (cacheType != DType.F32 && cacheType != DType.F16) throw new IllegalArgumentException("KV cache dtype must be f32 or f16, got " + cacheType);
        return new LlamaGraph(spec, weights, maxChunk, context, cacheType, natives).build(allLogits);
    }

    /** The input of a batched graph giving each row's slot (i32, (active)). */
    public static final String SLOT_OF_ROW = "slot_of_row";
    /** The input of a batched graph giving each slot's row (i32, (slots)); any row for a slot out of the step. */
    public static final String ROW_OF_SLOT = "row_of_slot";
    /** The variable of a batched graph's rows in use: the slots taking part in the step. */
    public static final String ACTIVE = "active";

    /** Name of slot {@code s}'s length variable in a batched graph ({@link #buildBatched}). */
    public static String slotLength(int s) { return LENGTH + s; }

    /** Name of layer {@code i}'s key cache of slot {@code s} in a batched graph. */
    public static String keyCache(int i, int s) { return keyCache(i) + "_" + s; }

    /** Name of layer {@code i}'s value cache of slot {@code s} in a batched graph. */
    public static String valueCache(int i, int s) { return valueCache(i) + "_" + s; }

    /**
     * One decode step of up to {@code slots} sequences at once (continuous batching): the next token of each slot
     * taking part, at that slot's own position and over its own KV caches, with every weight read once for all of them.
     * <b>Inputs</b>: {@value #TOKENS}, i32 (active), the token of each row; {@value #SLOT_OF_ROW}, i32 (active), the
     * slot of each row; {@value #ROW_OF_SLOT}, i32 (slots), each slot's row; {@code k<i>_<s>} and {@code v<i>_<s>}, slot
     * s's caches of layer i (context, kvDim), updated in place. <b>Variables</b>: {@value #ACTIVE} (1 to slots), the
     * rows in use; {@code length<s>} (1 to context), slot s's length after its token. <b>Output</b>: (active, vocab),
     * each row's next-token logits. The products take the rows in use together and no others; the attention runs per
     * slot (its own length and caches), every slot's, a slot out of the step on some row at its own length (what it
     * writes there its next step overwrites before reading). Products by {@code natives}, as {@link #build}.
     */
    public static Graph buildBatched(LlamaSpec spec, LlamaWeights weights, int slots, int context, DType cacheType, NativeBlockProducts natives) {
        weights.requireF32();
        if (slots < 1) throw new IllegalArgumentException("a batched decode needs at least one slot, got " + slots);
        if (cacheType != DType.F32 && cacheType != DType.F16) throw new IllegalArgumentException("KV cache dtype must be f32 or f16, got " + cacheType);
        return new LlamaGraph(spec, weights, 1, context, cacheType, natives).batched(slots);
    }

    private Graph batched(int slots) {
        Variable active = new Variable(ACTIVE, 1, slots);
        Tensor tokens = g.input(TOKENS, DType.I32, Shape.symbolic(active));
        Tensor slotOfRow = g.input(SLOT_OF_ROW, DType.I32, Shape.symbolic(active));
        Tensor rowOfSlot = g.input(ROW_OF_SLOT, DType.I32, slots);
        int half = spec.headDim() / 2;
        Tensor firstRow = Tensor.of(new long[] {0}, 1).reshape(); // a slot's one row is row 0 of its own
        Variable[] lengths = new Variable[slots];
        Tensor[] position = new Tensor[slots], cosRow = new Tensor[slots], sinRow = new Tensor[slots], row = new Tensor[slots];
        for (int s = 0; s < slots; s++) {
            lengths[s] = new Variable(slotLength(s), 1, context);
            position[s] = Tensor.variable(lengths[s]).sub(1);
            cosRow[s] = cosTable.indexSelect(0, position[s].reshape(1)).reshape(1, 1, half);
            sinRow[s] = sinTable.indexSelect(0, position[s].reshape(1)).reshape(1, 1, half);
            row[s] = rowOfSlot.slice(0, s, s + 1, 1);
        }
        Tensor x = embed(tokens, active); // (active, hidden)
        for (int i = 0; i < spec.layers(); i++) {
            LlamaWeights.Layer layer = w.layers().get(i);
            Tensor h = norm(x, layer.attnNorm());
            List<Tensor> qkv = linears(h, active, new Tensor[] {layer.q(), layer.k(), layer.v()}, layer.qBias(), layer.kBias(), layer.vBias());
            Tensor q = qkv.get(0), k = qkv.get(1), v = qkv.get(2);
            Tensor[] heads = new Tensor[slots];
            for (int s = 0; s < slots; s++) {
                Tensor qs = rope(q.indexSelect(0, row[s]).reshape(1, spec.heads(), spec.headDim()), cosRow[s], sinRow[s]);
                Tensor ks = rope(k.indexSelect(0, row[s]).reshape(1, spec.kvHeads(), spec.headDim()), cosRow[s], sinRow[s]).reshape(1, spec.kvDim());
                Tensor kc = g.input(keyCache(i, s), cacheType, context, spec.kvDim());
                Tensor vc = g.input(valueCache(i, s), cacheType, context, spec.kvDim());
                Tensor keys = append(kc, ks, position[s], firstRow, lengths[s]);
                Tensor values = append(vc, v.indexSelect(0, row[s]), position[s], firstRow, lengths[s]);
                heads[s] = attention(qs, keys, values, 1, position[s].reshape(1), lengths[s], null);
            }
            Tensor attended = Tensor.cat(0, heads).indexSelect(0, slotOfRow); // (active, qDim): back in the rows' order
            x = x.add(linear(attended, layer.attnOutput(), null, active));
            x = feedForward(x, layer, active);
        }
        return g.outputs(linear(norm(x, w.outputNorm()), w.output(), null, active));
    }

    private Graph build(boolean allLogits) {
        Tensor tokens = g.input(TOKENS, DType.I32, Shape.symbolic(chunk));
        Tensor x = embed(tokens, chunk); // (chunk, hidden)
        Tensor lastRow = Tensor.variable(chunk).sub(1); // the chunk's last row, where the caches' new rows end
        for (int i = 0; i < spec.layers(); i++) {
            LlamaWeights.Layer layer = w.layers().get(i);
            Tensor kc = g.input(keyCache(i), cacheType, context, spec.kvDim());
            Tensor vc = g.input(valueCache(i), cacheType, context, spec.kvDim());
            Tensor h = norm(x, layer.attnNorm());
            List<Tensor> qkv = linears(h, chunk, new Tensor[] {layer.q(), layer.k(), layer.v()}, layer.qBias(), layer.kBias(), layer.vBias());
            Tensor q = rope(qkv.get(0).reshape(maxChunk, spec.heads(), spec.headDim()), cos, sin);
            Tensor k = rope(qkv.get(1).reshape(maxChunk, spec.kvHeads(), spec.headDim()), cos, sin);
            Tensor v = qkv.get(2);
            Tensor keys = append(kc, k.reshape(maxChunk, spec.kvDim()), start, lastRow, length), values = append(vc, v, start, lastRow, length);
            x = x.add(linear(attention(q, keys, values, maxChunk, rowPosition, length, chunk), layer.attnOutput(), null, chunk));
            x = feedForward(x, layer, chunk);
        }
        Tensor last = allLogits ? x : x.indexSelect(0, lastRow.reshape(1));
        Tensor logits = linear(norm(last, w.outputNorm()), w.output(), null, allLogits ? chunk : null);
        return g.outputs(logits);
    }

    /** {@code x + down(silu(gate(n(x))) * up(n(x)))} over the first {@code rows} rows of x (all when null). */
    private Tensor feedForward(Tensor x, LlamaWeights.Layer layer, Variable rows) {
        Tensor m = norm(x, layer.ffnNorm());
        List<Tensor> gateUp = linears(m, rows, new Tensor[] {layer.gate(), layer.up()}, null, null);
        return x.add(linear(gateUp.get(0).silu().mul(gateUp.get(1)), layer.down(), null, rows));
    }

    private Tensor norm(Tensor x, Tensor weight) { return x.rmsNorm(new int[] {spec.hidden()}, weight, spec.rmsNormEps()); }

    /**
     * {@code x · weightᵀ + bias}; a block-quantised weight is read in place ({@link BlockTensor#linear}), over the first
     * {@code rows} rows of x when given (the chunk's tokens).
     */
    private Tensor linear(Tensor x, Tensor weight, Tensor bias, Variable rows) {
        Optional<BlockTensor> blocks = BlockTensor.of(weight);
        if (blocks.isEmpty()) return x.linear(weight, bias);
        Tensor y = blocks.get().linear(x, rows, natives);
        return bias == null ? y : y.add(bias);
    }

    /**
     * {@code x · weights[i]ᵀ + biases[i]} for each i (a null bias: none), as one product of the weights stacked where the
     * native products take them so ({@link BlockTensor#linearStacked}: the same bits), else one {@link #linear} each.
     */
    private List<Tensor> linears(Tensor x, Variable rows, Tensor[] weights, Tensor... biases) {
        List<BlockTensor> blocks = Arrays.stream(weights).map(BlockTensor::of).flatMap(Optional::stream).toList();
        List<Tensor> out = new ArrayList<>();
        if (blocks.size() == weights.length && BlockTensor.stackable(natives, blocks)) {
            List<Tensor> parts = BlockTensor.linearStacked(x, rows, natives, blocks).split(blocks.stream().mapToInt(BlockTensor::rows).toArray(), 1);
            for (int i = 0; i < weights.length; i++) out.add(biases[i] == null ? parts.get(i) : parts.get(i).add(biases[i]));
        } else {
            for (int i = 0; i < weights.length; i++) out.add(linear(x, weights[i], biases[i], rows));
        }
        return out;
    }

    /** The tokens' embeddings (the first {@code rows}, all when null): rows of the table, read in place when it is block-quantised. */
    private Tensor embed(Tensor tokens, Variable rows) {
        Optional<BlockTensor> blocks = BlockTensor.of(w.tokenEmbedding());
        return blocks.isPresent() ? blocks.get().embedding(tokens, rows) : Tensor.embedding(tokens, w.tokenEmbedding());
    }

    private static Tensor f32(Tensor t) { return t.dtype() == DType.F32 ? t : t.cast(DType.F32); }

    /** (rows, heads, headDim) rotated by each row's position (cos, sin: (rows, 1, headDim / 2)), in the layout the weights' rows are in. */
    private Tensor rope(Tensor x, Tensor cos, Tensor sin) { return x.rotaryEmbedding(cos, sin, spec.interleavedRope()); }

    /**
     * The cache {@code cache} (context, kvDim) with rows {@code [start, length)} replaced by {@code rows} (at least
     * {@code last + 1} rows of kvDim), written into the cache's input buffer in place ({@link Tensor#assign}) and
     * symbolic in {@code length}: rows past it are neither computed nor written, and no output is fed back.
     */
    private Tensor append(Tensor cache, Tensor rows, Tensor start, Tensor last, Variable length) {
        Tensor r = Tensor.arange(context).cast(DType.I64);
        Tensor fresh = r.ge(start).reshape(context, 1);
        Tensor source = r.sub(start).clamp(0, last);
        // the chunk's rows are computed once (chunk x kvDim), not once per cache row inside the cache's kernel
        Tensor picked = rows.cast(cacheType).contiguous().indexSelect(0, source);
        return cache.withSymbolicDim(0, length).assign(Tensor.where(fresh, picked, cache).withSymbolicDim(0, length));
    }

    /**
     * Causal grouped-query attention of q (rows, heads, headDim), at positions {@code rowPosition} (rows), over the
     * caches' first {@code length} rows (the first {@code active} rows of q when given, else all). With native products
     * and reductions free to reorder, one native step a layer ({@link NativeBlockProducts#attention}): it reads each cache
     * row once, in order, where the tensors below (batched GEMMs over a head's 256 bytes of each row, 2 KB apart, and a
     * softmax in three passes) took 0.64 ms a layer at 530 positions of a 1B Llama.
     */
    private Tensor attention(Tensor q, Tensor keys, Tensor values, int rows, Tensor rowPosition, Variable length, Variable active) {
        int kv = spec.kvHeads(), group = spec.heads() / kv, hd = spec.headDim();
        if (natives != null && ReductionOrder.current().mayReorder()) {
            int heads = spec.heads(), window = spec.slidingWindow(), qDim = spec.qDim();
            float scale = (float) (1 / Math.sqrt(hd));
            boolean f16 = cacheType == DType.F16;
            Tensor attended = Tensor.host("attention", DType.F32, new int[] {rows, qDim}, (in, out) -> {
                int r = QuantizedMatmul.activeRows(in.get(4), rows);
                long len = in.get(5).get(ValueLayout.JAVA_LONG, 0);
                if (len < 1 || len > context) throw new IllegalStateException("attention: over " + len + " positions, expected 1 to " + context);
                natives.attention(in.get(0), r, heads, kv, hd, in.get(1), in.get(2), f16, in.get(3), (int) len, window, scale, out);
            }, q, keys, values, rowPosition, BlockTensor.count(active, rows), Tensor.variable(length).reshape(1));
            return active == null ? attended : attended.withSymbolicDim(0, active);
        }
        Tensor q4 = q.reshape(rows, kv, group, hd).permute(1, 2, 0, 3);                             // (kv, group, rows, hd)
        Tensor k4 = f32(keys).reshape(context, kv, hd).permute(1, 0, 2).unsqueeze(1);                 // (kv, 1, length, hd)
        Tensor v4 = f32(values).reshape(context, kv, hd).permute(1, 0, 2).unsqueeze(1);
        Tensor scores = q4.matmul(k4.mT()).mul(1 / Math.sqrt(hd));                                    // (kv, group, chunk, length)
        Tensor query = rowPosition.reshape(rows, 1), key = Tensor.arange(context).cast(DType.I64).reshape(1, context);
        Tensor visible = key.le(query);
        if (spec.slidingWindow() > 0) visible = visible.logicalAnd(query.sub(key).lt(spec.slidingWindow()));
        Tensor attn = Tensor.where(visible, scores, Float.NEGATIVE_INFINITY).softmax(-1).matmul(v4);  // (kv, group, chunk, hd)
        return attn.permute(2, 0, 1, 3).reshape(rows, spec.qDim());
    }
}
