package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.ir.Alu;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.ir.Elements;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs a {@link KernelProgram} statement by statement with {@link Alu} semantics. It checks every
 * buffer index against the parameter's size, so a lowering bug shows up as an exception, never as a
 * stray read or write. It is the reference for the lowering and the renderers, not a fast path.
 */
public final class KernelEvaluator {
    private final KernelProgram program;
    private final List<MemorySegment> buffers;
    private final Map<Variable, Long> vars = new HashMap<>();
    private final Map<Integer, long[]> intRegs = new HashMap<>();
    private final Map<Integer, double[]> floatRegs = new HashMap<>();
    private final Map<UOp, Boolean> holdsCheck = new IdentityHashMap<>();

    private KernelEvaluator(KernelProgram program, List<MemorySegment> buffers, Map<Variable, Long> bindings) {
        if (buffers.size() != program.params().size()) {
            throw new IllegalArgumentException("kernel " + program.name() + " takes " + program.params().size() + " buffers, got " + buffers.size());
        }
        for (int i = 0; i < buffers.size(); i++) {
            long need = program.params().get(i).dtype().byteSize(program.sizes().get(i));
            if (buffers.get(i).byteSize() < need) {
                throw new IllegalArgumentException("kernel " + program.name() + " buffer " + i + " needs " + need + " bytes, got " + buffers.get(i).byteSize());
            }
        }
        this.program = program;
        this.buffers = buffers;
        for (Variable v : program.variables()) {
            Long value = bindings.get(v);
            if (value == null) throw new IllegalArgumentException("kernel " + program.name() + " needs a value for variable '" + v.name() + "'");
            vars.put(v, v.bind(value).value());
        }
    }

    /** Runs {@code program} over {@code buffers} (output first) with values for its variables. */
    public static void run(KernelProgram program, List<MemorySegment> buffers, Map<Variable, Long> bindings) {
        new KernelEvaluator(program, buffers, bindings).exec(program.body());
    }

    private void exec(Stmt s) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(this::exec);
            case Stmt.Loop l -> {
                // every kind runs in order here: THREAD, UPCAST and UNROLL only tell renderers how they may run
                long stop = l.limit() == null ? l.extent() : l.stop(vars.get(l.limit()));
                for (long i = 0; i < stop; i++) {
                    vars.put(l.index(), i);
                    exec(l.body());
                }
                vars.remove(l.index());
            }
            case Stmt.Define d -> {
                if (d.register().dtype().isFloat()) floatRegs.put(d.register().index(), new double[] {evalDouble(d.init())});
                else intRegs.put(d.register().index(), new long[] {evalLong(d.init())});
            }
            case Stmt.Accumulate a -> accumulate(a);
            case Stmt.Store st -> {
                if (st.gate() != null && evalLong(st.gate()) == 0) return;
                DType dt = st.param().dtype();
                long i = checkedIndex(st.param(), evalLong(st.index()));
                MemorySegment seg = buffers.get(st.param().index());
                if (dt.isFloat()) Elements.setDouble(seg, dt, i, evalDouble(st.value()));
                else Elements.setLong(seg, dt, i, evalLong(st.value()));
            }
        }
    }

    private void accumulate(Stmt.Accumulate a) {
        DType dt = a.register().dtype();
        Op combine = switch (a.kind()) {
            case SUM -> Op.ADD;
            case PROD -> Op.MUL;
            case MAX, MIN -> Op.MAX;
        };
        if (dt.isFloat()) {
            double[] r = floatRegs.get(a.register().index());
            double v = evalDouble(a.value());
            r[0] = a.kind() == ReduceArg.Kind.MIN ? (Double.isNaN(r[0]) || Double.isNaN(v) ? Double.NaN : Math.min(r[0], v))
                    : Alu.binary(combine, dt, r[0], v);
        } else {
            long[] r = intRegs.get(a.register().index());
            long v = evalLong(a.value());
            r[0] = a.kind() == ReduceArg.Kind.MIN ? (Alu.binary(Op.CMPLT, dt, v, r[0]) == 1 ? v : r[0]) : Alu.binary(combine, dt, r[0], v);
        }
    }

    private long checkedIndex(Slot param, long i) {
        long size = program.sizes().get(param.index());
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("kernel " + program.name() + " indexes " + param.name() + " at " + i + ", size " + size);
        }
        return i;
    }

    // ---------------------------------------------------------------- expressions

    private long evalLong(UOp u) {
        DType dt = u.dtype();
        return switch (u.op()) {
            case CONST -> u.constLong();
            case DEFINE_VAR -> u.arg() instanceof Variable v ? vars.get(v) : intRegs.get(u.slotArg().index())[0];
            case LOAD -> u.src().size() == 3 && gateClosed(u) ? 0
                    : Elements.getLong(buffers.get(u.src(0).slotArg().index()), dt, checkedIndex(u.src(0).slotArg(), evalLong(u.src(1))));
            case CAST -> Alu.castToLong(u.src(0).dtype(), dt, intOf(u.src(0)), floatOf(u.src(0)));
            case BITCAST -> Alu.wrap(dt, Alu.bitsOf(u.src(0).dtype(), intOf(u.src(0)), floatOf(u.src(0))));
            case WHERE -> evalLong(choose(u));
            case CHECK -> {
                long i = evalLong(u.src(0));
                if ((u.src().size() < 3 || evalLong(u.src(2)) != 0) && !u.indexCheckArg().admits(i, evalLong(u.src(1)))) {
                    throw IndexCheckFailure.inKernel(program.name(), u.indexCheckArg().site(), i);
                }
                yield i;
            }
            default -> {
                DType in = u.src(0).dtype();
                if (u.src().size() == 1) yield Alu.unary(u.op(), dt, evalLong(u.src(0)));
                if (in.isFloat()) yield (long) Alu.binary(u.op(), in, evalDouble(u.src(0)), evalDouble(u.src(1))); // comparisons
                yield Alu.binary(u.op(), in, evalLong(u.src(0)), evalLong(u.src(1)));
            }
        };
    }

    private double evalDouble(UOp u) {
        DType dt = u.dtype();
        return switch (u.op()) {
            case CONST -> u.constDouble();
            case DEFINE_VAR -> floatRegs.get(u.slotArg().index())[0];
            case LOAD -> u.src().size() == 3 && gateClosed(u) ? 0
                    : Elements.getDouble(buffers.get(u.src(0).slotArg().index()), dt, checkedIndex(u.src(0).slotArg(), evalLong(u.src(1))));
            case CAST -> Alu.castToDouble(u.src(0).dtype(), dt, intOf(u.src(0)), floatOf(u.src(0)));
            case BITCAST -> Alu.floatFromBits(dt, Alu.bitsOf(u.src(0).dtype(), intOf(u.src(0)), floatOf(u.src(0))));
            case WHERE -> evalDouble(choose(u));
            default -> u.src().size() == 1 ? Alu.unary(u.op(), dt, evalDouble(u.src(0)))
                    : Alu.binary(u.op(), dt, evalDouble(u.src(0)), evalDouble(u.src(1)));
        };
    }

    /**
     * The branch of a WHERE its condition takes. The other is evaluated too when it holds an index check: compiled
     * kernels compute both branches, so a check there fails on every device alike.
     */
    private UOp choose(UOp where) {
        boolean c = evalLong(where.src(0)) != 0;
        evalChecks(where.src(c ? 2 : 1));
        return where.src(c ? 1 : 2);
    }

    /** Whether a gated load's gate is false (then it reads nothing, but an index check in its index still runs, as in compiled kernels). */
    private boolean gateClosed(UOp load) {
        if (evalLong(load.src(2)) != 0) return false;
        evalChecks(load.src(1));
        return true;
    }

    /** Evaluates {@code u} for its index checks only, if it has any. */
    private void evalChecks(UOp u) {
        if (!holdsCheck(u)) return;
        if (u.dtype().isFloat()) evalDouble(u);
        else evalLong(u);
    }

    private boolean holdsCheck(UOp u) {
        Boolean known = holdsCheck.get(u);
        if (known != null) return known;
        boolean h = u.op() == Op.CHECK;
        for (int i = 0; !h && i < u.src().size(); i++) h = holdsCheck(u.src(i));
        holdsCheck.put(u, h);
        return h;
    }

    private long intOf(UOp u) { return u.dtype().isFloat() ? 0 : evalLong(u); }

    private double floatOf(UOp u) { return u.dtype().isFloat() ? evalDouble(u) : 0; }
}
