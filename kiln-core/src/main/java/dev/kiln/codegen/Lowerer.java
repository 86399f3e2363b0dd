package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Ints;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.Symbolic;
import dev.kiln.ir.UOp;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Lowers one scheduled kernel to loops. The output gets one loop per axis; every node of the kernel's
 * tensor-level subgraph becomes a scalar expression at the current loop indices:
 *
 * <ul>
 *   <li>realised inputs become {@code LOAD}s at the flat index of the (transformed) indices;</li>
 *   <li>movement ops transform the indices on the way down (a reshape through a flat index with
 *       floor division and modulo, which the simplifier folds);</li>
 *   <li>{@code PAD} masks its whole subtree: loads below it are gated by the in-bounds condition and the
 *       subtree's value is replaced by 0 outside, so any op may be padded;</li>
 *   <li>a fused {@code REDUCE} becomes a register, a nest of reduction loops and an accumulate.</li>
 * </ul>
 *
 * Index expressions are simplified with {@link Symbolic}; loop variables carry their bounds, so
 * division and modulo by the dimensions fold away.
 */
public final class Lowerer {
    private final Map<UOp, Slot> inputs = new IdentityHashMap<>();
    /** Each CHECK of the kernel's graph by its site (see {@link KernelLowering#indexChecks}). */
    private final Map<UOp, Integer> checkSites = new IdentityHashMap<>();
    private final Set<Variable> variables = new LinkedHashSet<>();
    private final Deque<Frame> frames = new ArrayDeque<>();
    private int registers;
    private int loopVars;

    /** A block being filled, with the reductions already computed in it (visible to nested blocks). */
    private record Frame(List<Stmt> stmts, Map<List<Object>, UOp> reduces) {}

    private Lowerer() {}

    /**
     * The loop program of a kernel: {@code output}'s graph down to (not into) {@code inputs}, the realised
     * values it reads (a scheduled kernel's output and inputs). Parameter 0 is the output, then the inputs.
     */
    public static KernelProgram lower(UOp output, List<UOp> inputs, String name) {
        return new Lowerer().run(output, inputs, name);
    }

    private KernelProgram run(UOp output, List<UOp> kernelInputs, String name) {
        UOp root = output;
        UOp value = switch (root.op()) {
            case ASSIGN -> root.src(1);
            case CONTIGUOUS -> root.src(0);
            default -> root;
        };
        List<Slot> params = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        params.add(new Slot(Slot.Kind.PARAM, 0, root.dtype()));
        sizes.add(root.shape().numel());
        for (UOp in : kernelInputs) {
            Slot s = new Slot(Slot.Kind.PARAM, params.size(), in.dtype());
            inputs.put(in, s);
            params.add(s);
            sizes.add(in.shape().numel());
        }

        for (UOp c : KernelLowering.indexChecks(root, kernelInputs)) checkSites.put(c, checkSites.size());

        Frame top = new Frame(new ArrayList<>(), new HashMap<>());
        frames.push(top);
        Shape shape = root.shape();
        UOp[] idx = new UOp[shape.rank()];
        List<Variable> outer = new ArrayList<>();
        List<Variable> outerLimits = new ArrayList<>();
        boolean empty = shape.numel() == 0;
        for (int k = 0; k < idx.length; k++) {
            if (shape.dim(k) == 1 && shape.variable(k) == null || empty) {
                idx[k] = UOp.index(0);
            } else {
                Variable v = new Variable("i" + k, 0, shape.dim(k) - 1);
                outer.add(v);
                outerLimits.add(limit(shape, k));
                idx[k] = UOp.variable(v);
            }
        }
        List<Stmt> body;
        if (empty) {
            body = List.of(); // nothing to compute for a zero-size output
        } else {
            UOp v = simplify(lowerNode(value, idx, null)), index = simplify(flatIndex(idx, shape));
            UOp[] changed = root.op() == Op.ASSIGN ? changedOnly(root, v, index) : null;
            top.stmts().add(changed == null ? new Stmt.Store(params.getFirst(), index, v) : new Stmt.Store(params.getFirst(), index, changed[1], changed[0]));
            body = top.stmts();
        }
        Stmt.Block block = new Stmt.Block(body);
        for (int k = outer.size() - 1; k >= 0; k--) {
            block = new Stmt.Block(List.of(new Stmt.Loop(outer.get(k), Stmt.LoopKind.GLOBAL, block, outerLimits.get(k))));
        }
        return new KernelProgram(name, params, sizes, List.copyOf(variables), block);
    }

    private static UOp simplify(UOp u) { return Symbolic.simplify(u); }

    /**
     * For {@code assign(target, where(c, x, target))} lowered to {@code v} (stored at {@code index}): {@code {c, x}}, so
     * that x is stored where c holds and the other elements, which would get their own value back, are neither read nor
     * written; else null. A KV cache's append is this form: without it, every decode step read and rewrote each cache
     * row up to the length (two caches a layer, 1 MB each at 512 positions of a 1B Llama: 2.8-3.7 ms of a step at 520
     * positions, 0.75-0.85 with it). The rewrite also left the cache in L2 for the attention after it: attention that
     * reads a head's rows 2 KB apart (the tensors' batched GEMM) is slower cold, one that reads the rows in order
     * (CLANG's native attention) barely. The kept operand must be a load of the target's own buffer (the target is that
     * buffer reshaped, as an assignment's target is) at the store's own index.
     */
    private UOp[] changedOnly(UOp root, UOp v, UOp index) {
        if (v.op() != Op.WHERE) return null;
        UOp kept = v.src(2), target = root.src(0);
        while (target.op() == Op.RESHAPE && !inputs.containsKey(target)) target = target.src(0);
        Slot buffer = inputs.get(target);
        if (buffer == null || kept.op() != Op.LOAD || kept.src().size() != 2 || kept.src(0) != buffer.uop() || kept.src(1) != index) return null;
        return new UOp[] {v.src(0), v.src(1)};
    }

    /** The variable a loop over {@code shape}'s axis {@code k} stops at (a parameter of the kernel), or null for a fixed axis. */
    private Variable limit(Shape shape, int k) {
        Variable v = shape.variable(k);
        if (v != null) variables.add(v);
        return v;
    }

    // ---------------------------------------------------------------- nodes

    private UOp lowerNode(UOp u, UOp[] idx, UOp gate) {
        Slot input = inputs.get(u);
        if (input != null) {
            UOp index = simplify(flatIndex(idx, u.shape()));
            return gate == null ? UOp.of(Op.LOAD, u.dtype(), null, input.uop(), index)
                    : UOp.of(Op.LOAD, u.dtype(), null, input.uop(), index, gate);
        }
        Op op = u.op();
        if (op == Op.CHECK) return check(u, idx, gate);
        return switch (op.group()) {
            case UNARY, BINARY, TERNARY -> {
                List<UOp> src = new ArrayList<>();
                for (UOp s : u.src()) src.add(lowerNode(s, idx, gate));
                yield UOp.of(op, u.dtype(), u.arg(), src);
            }
            case REDUCE -> reduce(u, idx, gate);
            case MOVEMENT -> movement(u, idx, gate);
            case BUFFER -> switch (op) {
                case CONST -> u;
                case ARANGE -> UOp.of(Op.CAST, u.dtype(), null, idx[0]); // the loop index itself: no memory
                case DEFINE_VAR -> {
                    if (u.arg() instanceof Variable v) variables.add(v);
                    yield u;
                }
                default -> throw new IllegalStateException(op + " inside a kernel body; the scheduler should have realised it");
            };
        };
    }

    /**
     * A checked index at these indices: numbered by its site, without names, and gated like the loads below it, so
     * that a padded region, whose indices are never used, checks nothing.
     */
    private UOp check(UOp u, UOp[] idx, UOp gate) {
        Integer site = checkSites.get(u);
        if (site == null) throw new IllegalStateException("a CHECK outside the kernel's graph: " + u);
        UOp index = lowerNode(u.src(0), idx, gate), size = lowerNode(u.src(1), idx, gate);
        IndexCheck c = u.indexCheckArg().atSite(site);
        return gate == null ? UOp.of(Op.CHECK, u.dtype(), c, index, size) : UOp.of(Op.CHECK, u.dtype(), c, index, size, gate);
    }

    private UOp movement(UOp u, UOp[] idx, UOp gate) {
        UOp src = u.src(0);
        int[] in = src.shape().toArray();
        UOp[] j = new UOp[in.length];
        switch (u.op()) {
            case RESHAPE -> {
                UOp flat = flatIndex(idx, u.shape());
                long[] strides = src.shape().strides();
                for (int k = 0; k < in.length; k++) {
                    j[k] = in[k] == 1 ? UOp.index(0) : flat.floorDiv(strides[k]).floorMod(in[k]);
                }
            }
            case PERMUTE -> {
                Ints p = u.intsArg();
                for (int k = 0; k < idx.length; k++) j[p.get(k)] = idx[k];
            }
            case EXPAND -> {
                for (int k = 0; k < in.length; k++) j[k] = in[k] == 1 ? UOp.index(0) : idx[k];
            }
            case SHRINK -> {
                Ints b = u.intsArg();
                for (int k = 0; k < in.length; k++) j[k] = idx[k].add(b.get(2 * k));
            }
            case FLIP -> {
                Ints axes = u.intsArg();
                for (int k = 0; k < in.length; k++) j[k] = axes.contains(k) ? UOp.index(in[k] - 1).sub(idx[k]) : idx[k];
            }
            case PAD -> {
                Ints b = u.intsArg();
                UOp valid = null;
                for (int k = 0; k < in.length; k++) {
                    int before = b.get(2 * k), after = b.get(2 * k + 1);
                    j[k] = idx[k].add(-before);
                    if (before == 0 && after == 0) continue;
                    UOp inside = idx[k].lt(UOp.index(before)).where(UOp.constant(DType.BOOL, 0), idx[k].lt(UOp.index(before + in[k])));
                    valid = valid == null ? inside : UOp.of(Op.AND, DType.BOOL, null, valid, inside);
                }
                if (valid == null) return lowerNode(src, j, gate);
                valid = simplify(valid);
                UOp inner = gate == null ? valid : simplify(UOp.of(Op.AND, DType.BOOL, null, gate, valid));
                UOp value = insideBounds(src, j, in, b, inner);
                return valid.where(value, zero(u.dtype()));
            }
            default -> throw new AssertionError(u.op());
        }
        for (int k = 0; k < j.length; k++) j[k] = simplify(j[k]);
        return lowerNode(src, j, gate);
    }

    /**
     * The padded subtree {@code src} at indices {@code j}, which its gate {@code inner} keeps inside
     * {@code [0, in[k])} wherever the value is used. Each padded index is lowered as a fresh variable with
     * exactly those bounds and substituted back afterwards, so the reshapes below fold to plain affine
     * indices (a convolution's window reads {@code x[c*HW + (oh+kh-1)*W + ow+kw-1]} instead of a modulo of
     * a shifted flat index): exact where the gate holds, and nothing is read where it does not. A subtree
     * with a reduction keeps the indices as they are, because its loops are statements outside the value.
     */
    private UOp insideBounds(UOp src, UOp[] j, int[] in, Ints pad, UOp inner) {
        for (UOp n : src.toposort()) if (n.op() == Op.REDUCE) return lowerNode(src, j, inner);
        Map<Object, UOp> back = new HashMap<>();
        UOp[] fresh = j.clone();
        for (int k = 0; k < in.length; k++) {
            if (pad.get(2 * k) == 0 && pad.get(2 * k + 1) == 0 || in[k] <= 1) continue;
            Variable p = new Variable("pad" + loopVars++, 0, in[k] - 1);
            back.put(p, j[k]);
            fresh[k] = UOp.variable(p);
        }
        UOp value = lowerNode(src, fresh, inner);
        return back.isEmpty() ? value : Optimizer.substitute(value, back);
    }

    private UOp reduce(UOp u, UOp[] idx, UOp gate) {
        ReduceArg arg = u.reduceArg();
        UOp src = u.src(0);
        int[] in = src.shape().toArray();
        List<Object> key = new ArrayList<>(List.of(u, gate == null ? "" : gate));
        key.addAll(List.of(idx));
        for (Frame f : frames) { // innermost first; registers of enclosing blocks are in scope
            UOp done = f.reduces().get(key);
            if (done != null) return done;
        }
        UOp[] j = idx.clone();
        List<Variable> loops = new ArrayList<>();
        List<Variable> limits = new ArrayList<>();
        for (int k = 0; k < in.length; k++) {
            if (!arg.axes().contains(k)) continue;
            if (in[k] == 0) return emptyResult(arg.kind(), u.dtype()); // a reduction over nothing
            if (in[k] == 1 && src.shape().variable(k) == null) {
                j[k] = UOp.index(0);
                continue;
            }
            Variable r = new Variable("r" + loopVars++, 0, in[k] - 1);
            loops.add(r);
            limits.add(limit(src.shape(), k));
            j[k] = UOp.variable(r);
        }
        Slot acc = new Slot(Slot.Kind.REGISTER, registers++, u.dtype());
        Frame outer = frames.peek();
        outer.stmts().add(new Stmt.Define(acc, identity(arg.kind(), u.dtype())));
        Frame inner = new Frame(new ArrayList<>(), new HashMap<>());
        frames.push(inner);
        UOp value = simplify(lowerNode(src, j, gate));
        if (arg.kind() == ReduceArg.Kind.SUM && inner.stmts().isEmpty()) { // nothing else runs per iteration
            for (int k = loops.size() - 1; k >= 0; k--) {
                UOp folded = foldOneHot(value, loops.get(k), limits.get(k), u.dtype());
                if (folded == null) continue;
                value = folded;
                loops.remove(k);
                limits.remove(k);
            }
        }
        inner.stmts().add(new Stmt.Accumulate(acc, arg.kind(), value));
        frames.pop();
        Stmt.Block body = new Stmt.Block(inner.stmts());
        for (int k = loops.size() - 1; k >= 0; k--) {
            body = new Stmt.Block(List.of(new Stmt.Loop(loops.get(k), Stmt.LoopKind.REDUCE, body, limits.get(k))));
        }
        outer.stmts().addAll(body.body());
        outer.reduces().put(key, acc.uop());
        return acc.uop();
    }

    /**
     * Folds a one-hot sum, the form of every gather, embedding lookup and index select:
     * {@code sum over r of where(e == r, v(r), z)}, with {@code e} free of {@code r} and {@code z} the sum's
     * identity (after any casts between the select and the sum). Only the iteration {@code r == e} adds
     * something other than the identity, so the sum equals {@code where(0 <= e < n, v(e), z)} bit for bit
     * ({@code n} the loop's extent, or its limit on a symbolic axis), and the loop over {@code r}, n
     * iterations per element, disappears. {@code e} is clamped into the extent before it indexes anything,
     * so range analysis proves every read in bounds even for an index that selects nothing.
     *
     * @return the folded value, or null if {@code value} is not a one-hot sum over {@code r}
     */
    private static UOp foldOneHot(UOp value, Variable r, Variable limit, DType accumulator) {
        List<UOp> casts = new ArrayList<>();
        UOp select = value;
        while (select.op() == Op.CAST) {
            casts.add(select);
            select = select.src(0);
        }
        if (select.op() != Op.WHERE || select.src(0).op() != Op.CMPEQ) return null;
        if (!recast(select.src(2), casts).equals(identity(ReduceArg.Kind.SUM, accumulator))) return null;
        UOp cmp = select.src(0), e;
        if (isIndex(cmp.src(1), r)) e = cmp.src(0);
        else if (isIndex(cmp.src(0), r)) e = cmp.src(1);
        else return null;
        if (!e.dtype().isInt() || e.toposort().contains(UOp.variable(r))) return null;
        UOp at = e.dtype() == DType.I64 ? e : UOp.of(Op.CAST, DType.I64, null, e);
        UOp upper = limit != null ? UOp.variable(limit) : UOp.index(r.max() + 1);
        UOp valid = simplify(at.lt(UOp.index(0)).where(UOp.constant(DType.BOOL, 0), at.lt(upper)));
        UOp clamped = at.max(UOp.index(0)).min(UOp.index(r.max()));
        UOp picked = Optimizer.substitute(select.src(1), Map.of(r, clamped));
        return simplify(recast(valid.where(picked, select.src(2)), casts));
    }

    /** {@code u} under the casts of {@code casts} (outermost first), simplified. */
    private static UOp recast(UOp u, List<UOp> casts) {
        for (UOp c : casts.reversed()) u = UOp.of(Op.CAST, c.dtype(), null, u);
        return simplify(u);
    }

    /**
     * Whether {@code u} is the loop index {@code r} under integer casts that keep every value of {@code r}
     * (an arange read in the loop, widened or narrowed to the compared dtype).
     */
    private static boolean isIndex(UOp u, Variable r) {
        while (u.op() == Op.CAST && u.dtype().isInt() && !u.dtype().isBool() && u.dtype().maxInt() >= r.max()) u = u.src(0);
        return u.equals(UOp.variable(r));
    }

    // ---------------------------------------------------------------- helpers

    /** What a reduction over zero elements yields: the identity, except that an empty sum is +0.0 (as NumPy). */
    static UOp emptyResult(ReduceArg.Kind kind, DType dt) {
        return kind == ReduceArg.Kind.SUM ? zero(dt) : identity(kind, dt);
    }

    /** {@code sum(idx[k] * stride[k])} in C order. */
    static UOp flatIndex(UOp[] idx, Shape shape) {
        long[] strides = shape.strides();
        UOp flat = UOp.index(0);
        for (int k = 0; k < idx.length; k++) {
            if (shape.dim(k) != 1) flat = flat.add(idx[k].mul(strides[k]));
        }
        return flat;
    }

    static UOp zero(DType dt) { return UOp.constant(dt, 0); }

    /**
     * The value an accumulator starts from. A float sum starts at -0.0, the true identity of IEEE
     * addition ({@code -0 + x == x} for every x, +0 and -0 included), so a sum of negative zeros stays -0.0.
     */
    public static UOp identity(ReduceArg.Kind kind, DType dt) {
        return switch (kind) {
            case SUM -> dt.isFloat() ? UOp.constant(dt, -0.0) : zero(dt);
            case PROD -> UOp.constant(dt, 1);
            case MAX -> dt.isFloat() ? UOp.constant(dt, Double.NEGATIVE_INFINITY) : UOp.constant(dt, dt.minInt());
            case MIN -> dt.isFloat() ? UOp.constant(dt, Double.POSITIVE_INFINITY)
                    : UOp.constant(dt, dt.isUnsigned() ? -1L >>> (64 - dt.bits()) : dt.maxInt());
        };
    }
}
