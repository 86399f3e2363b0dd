package dev.kiln.codegen;

import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Operand;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.codegen.Contraction.Var;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Recognises a lowered kernel (as {@link Lowerer} makes it, before any optimisation) that is an f32
 * {@link Contraction}:
 * <pre>
 *   for output loops:              (GLOBAL, possibly up to a symbolic limit)
 *     acc = -0.0
 *     for reduction loops:         (REDUCE)
 *       acc = sum(acc, x * y)      x, y: loads at affine indices, under affine interval gates
 *     p0[affine] = f(acc, ...)     f: the epilogue (bias, activation, residual), or acc itself
 * </pre>
 * The match carries the epilogue as a kernel of its own that reads the sums back from the output and
 * applies {@code f} in place, so a device that runs the contraction as a GEMM runs the epilogue's
 * generated code after it. Anything else (other dtypes, other reductions, indices that are not affine,
 * kernel variables inside an index) is not a match, and the kernel keeps its loops.
 */
public final class ContractionMatcher {
    /** Below these, the loops as generated are as fast as packing panels would be. */
    static final long MIN_M = 8, MIN_N = 16, MIN_MULTIPLY_ADDS = 1 << 16;

    private ContractionMatcher() {}

    /** Most multiply-adds per output element of a {@link Kind#STENCIL} (a 7 x 7 window is 49). */
    static final long MAX_STENCIL_TAPS = 64;

    /** How a device computes the sums of a match. */
    public enum Kind {
        /** A packed, cache-blocked GEMM: M, N and the work are large enough for register tiles. */
        GEMM,
        /**
         * Few rows (M below {@link #MIN_M}: depthwise and small-group convolutions) and a short window (K at most
         * {@link #MAX_STENCIL_TAPS}): per row of C, each tap's weight times a contiguous or every-other run of B,
         * summed in vector registers ({@link #stencilColumn} names the run's variable).
         */
        STENCIL,
        /**
         * Few rows (M below {@link #MIN_M}: a classifier's {@code x Wᵀ} at batch 1) and long sums (K at least
         * {@link #MIN_DOT_K}) along which A's rows and B's columns are contiguous: each output one dot product, read
         * straight from the operands (packing B would copy it whole for work that reads each column once).
         */
        DOTS
    }

    /** Fewest multiply-adds per output of a {@link Kind#DOTS}: shorter sums keep their loops. */
    static final long MIN_DOT_K = 256;

    /**
     * A recognised contraction and its epilogue.
     *
     * @param contraction the sums, as the device computes them into parameter 0
     * @param epilogue    the kernel that turns the sums in parameter 0 into the kernel's output, in place (same
     *                    parameters, same variables)
     * @param identity    whether the epilogue stores the sums unchanged (a device may skip it)
     * @param kind        how the sums are computed
     * @param storeEpilogue the epilogue as parts a GEMM applies while it stores its tiles, when it is that simple
     */
    public record Match(Contraction contraction, KernelProgram epilogue, boolean identity, Kind kind, Optional<StoreEpilogue> storeEpilogue) {}

    /**
     * The N variable a {@link Kind#STENCIL} vectorises over: unit stride in C and a stride of 1 or 2 in B (a stride-2
     * convolution), with no symbolic limit; -1 if there is none.
     */
    public static int stencilColumn(Contraction c) {
        for (int v = 0; v < c.vars().size(); v++) {
            Contraction.Var var = c.vars().get(v);
            long sb = c.b().stride(v);
            if (var.role() == Role.N && var.limit() < 0 && c.c().stride(v) == 1 && (sb == 1 || sb == 2)) return v;
        }
        return -1;
    }

    /** How {@code c} is worth computing, or null if its loops as generated are as fast. */
    static Kind kindOf(Contraction c) {
        if (c.multiplyAdds() < MIN_MULTIPLY_ADDS || c.extent(Role.N) < MIN_N) return null;
        if (c.extent(Role.M) >= MIN_M) return Kind.GEMM;
        if (c.extent(Role.K) <= MAX_STENCIL_TAPS && stencilColumn(c) >= 0) return Kind.STENCIL;
        if (c.extent(Role.K) >= MIN_DOT_K && contiguousAlongK(c)) return Kind.DOTS;
        return null;
    }

    /** Whether the sums run along one K variable of unit stride in A and B, neither gated: each output a dot product. */
    private static boolean contiguousAlongK(Contraction c) {
        if (!c.a().gates().isEmpty() || !c.b().gates().isEmpty()) return false;
        int k = -1;
        for (int v = 0; v < c.vars().size(); v++) {
            if (c.vars().get(v).role() != Role.K) continue;
            if (k >= 0) return false;
            k = v;
        }
        return k >= 0 && c.a().stride(k) == 1 && c.b().stride(k) == 1;
    }

    /**
     * {@link #match} when the process's {@link ReductionOrder} lets reductions reorder (a GEMM sums in its own order),
     * else empty: the test every device that runs contractions as GEMMs applies.
     */
    public static Optional<Match> matchReorderable(KernelProgram lowered) {
        return ReductionOrder.current().mayReorder() ? match(lowered) : Optional.empty();
    }

    /** {@code lowered} as a contraction worth a GEMM, if it is one. */
    public static Optional<Match> match(KernelProgram lowered) {
        try {
            return Optional.ofNullable(new Reader(lowered).read());
        } catch (NotAffine e) {
            return Optional.empty();
        }
    }

    /** Thrown inside the reader when an expression is not of the form the contraction needs. */
    private static final class NotAffine extends Exception {
        NotAffine() { super(null, null, false, false); }
    }

    /** An affine integer expression over loop variables: {@code constant + sum(coeff * var)}. */
    private record Affine(Map<Variable, Long> coeffs, long constant) {
        static Affine of(long c) { return new Affine(Map.of(), c); }

        Affine plus(Affine o) {
            Map<Variable, Long> m = new LinkedHashMap<>(coeffs);
            o.coeffs.forEach((v, c) -> m.merge(v, c, Long::sum));
            return new Affine(m, Math.addExact(constant, o.constant));
        }

        Affine times(long k) {
            Map<Variable, Long> m = new LinkedHashMap<>();
            coeffs.forEach((v, c) -> m.put(v, Math.multiplyExact(c, k)));
            return new Affine(m, Math.multiplyExact(constant, k));
        }

        long coeff(Variable v) { return coeffs.getOrDefault(v, 0L); }
    }

    private static final class Reader {
        private final KernelProgram p;
        private final List<Variable> outer = new ArrayList<>(), reduce = new ArrayList<>();
        private final Map<Variable, Variable> limits = new LinkedHashMap<>();
        /**
         * Loop variables read through divisions by constants: {@code v // d}, {@code v % m}, {@code (v // d) % m} (grouped
         * convolutions; attention's heads and their groups merged into one output axis), each v as its digits.
         */
        private final Map<Variable, Digits> splits = new LinkedHashMap<>();

        Reader(KernelProgram p) { this.p = p; }

        Match read() throws NotAffine {
            if (p.outputDType() != DType.F32) return null;
            List<Stmt> body = p.body().body();
            // output loops: each block holds exactly one loop until the statements of one output element
            while (body.size() == 1 && body.getFirst() instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.REDUCE) {
                outer.add(loop(l));
                body = l.body().body();
            }
            if (body.size() != 3 || !(body.get(0) instanceof Stmt.Define define) || !(body.get(2) instanceof Stmt.Store store) || store.gate() != null
                    || !(body.get(1) instanceof Stmt.Loop first) || first.kind() != Stmt.LoopKind.REDUCE) return null;
            Slot acc = define.register();
            if (acc.dtype() != DType.F32 || !define.init().isConst() || define.init().constDouble() != 0.0) return null;
            Stmt inner = first;
            while (inner instanceof Stmt.Loop l && l.kind() == Stmt.LoopKind.REDUCE && l.body().body().size() == 1) {
                reduce.add(loop(l));
                inner = l.body().body().getFirst();
            }
            if (!(inner instanceof Stmt.Accumulate a) || !a.register().equals(acc)
                    || a.kind() != ReduceArg.Kind.SUM || a.value().op() != Op.MUL) return null;
            if (store.param().index() != 0) return null;

            findSplits(a.value(), store.index());
            List<Variable> all = new ArrayList<>(), reduceParts = new ArrayList<>();
            for (Variable v : outer) all.addAll(parts(v));
            for (Variable v : reduce) reduceParts.addAll(parts(v));
            all.addAll(reduceParts);
            Load x = operand(a.value().src(0)), y = operand(a.value().src(1));
            if (x == null || y == null) return null;
            Affine c = affine(store.index());
            for (Variable v : c.coeffs().keySet()) if (reduceParts.contains(v) && c.coeff(v) != 0) return null;

            // roles: the operand holding C's unit-stride variable gives the columns (B), so C's rows are contiguous runs
            Variable unit = null;
            for (Variable v : all) if (c.coeff(v) == 1 && !reduceParts.contains(v)) unit = v;
            boolean swap = unit != null && x.uses(unit) && !y.uses(unit);
            Load aLoad = swap ? y : x, bLoad = swap ? x : y;
            List<Var> vars = new ArrayList<>();
            for (Variable v : all) {
                Role role;
                if (reduceParts.contains(v)) role = Role.K;
                else if (aLoad.uses(v) && bLoad.uses(v)) role = Role.BATCH;
                else if (aLoad.uses(v)) role = Role.M;
                else if (bLoad.uses(v)) role = Role.N;
                else role = Role.BATCH; // only C moves with it: each value is its own (identical) product
                Variable limit = limits.get(v);
                vars.add(new Var(v.name(), role, v.max() + 1, limit == null ? -1 : p.variables().indexOf(limit)));
            }
            Contraction contraction = new Contraction(vars, aLoad.operand(all), bLoad.operand(all),
                    new Operand(0, c.constant(), strides(c, all), List.of()));
            Kind kind = kindOf(contraction);
            if (kind == null) return null;

            UOp sums = UOp.of(Op.LOAD, DType.F32, null, p.params().getFirst().uop(), store.index());
            UOp value = Optimizer.substitute(store.value(), Map.<Object, UOp>of(acc, sums));
            if (value.toposort().stream().anyMatch(u -> u.op() == Op.DEFINE_VAR && u.arg() instanceof Slot s && s.kind() == Slot.Kind.REGISTER)) {
                return null; // the epilogue reads another register: not a lone contraction
            }
            Stmt.Block epilogueBody = new Stmt.Block(List.of(new Stmt.Store(store.param(), store.index(), value)));
            for (int i = outer.size() - 1; i >= 0; i--) {
                Variable v = outer.get(i);
                epilogueBody = new Stmt.Block(List.of(new Stmt.Loop(v, Stmt.LoopKind.GLOBAL, epilogueBody, limits.get(v))));
            }
            KernelProgram epilogue = new KernelProgram(p.name() + "_epilogue", p.params(), p.sizes(), p.variables(), epilogueBody);
            return new Match(contraction, epilogue, value.equals(sums), kind, Optional.ofNullable(storeEpilogue(store.value(), acc, all, reduceParts)));
        }

        /**
         * {@code value} (over the sums in register {@code acc}) as a {@link StoreEpilogue}, or null: an optional clamp
         * ({@code WHERE(OR(CMPLT(y, hi), CMPNE(y, y)), y, hi)}, as {@code minimum} lowers) over an optional
         * {@code MAX(x, lo)} over the sums plus at most two ungated f32 loads at affine indices of the output loops.
         */
        private StoreEpilogue storeEpilogue(UOp value, Slot acc, List<Variable> all, List<Variable> reduceParts) {
            UOp v = value;
            boolean hasUpper = false, hasLower = false;
            float upper = 0, lower = 0;
            StoreEpilogue.Bound lowerFrom = null, upperFrom = null;
            if (v.op() == Op.WHERE && v.src(0).op() == Op.OR && (v.src(2).isConst() || bound(v.src(2)) != null) && v.src(2).dtype() == DType.F32) {
                UOp y = v.src(1), lt = v.src(0).src(0), ne = v.src(0).src(1);
                if (lt.op() != Op.CMPLT || !lt.src(0).equals(y) || !lt.src(1).equals(v.src(2))
                        || ne.op() != Op.CMPNE || !ne.src(0).equals(y) || !ne.src(1).equals(y)) return null;
                upperFrom = bound(v.src(2));
                if (upperFrom == null) {
                    upper = (float) v.src(2).constDouble();
                    if (upper == 0 || Float.isNaN(upper)) return null;
                }
                hasUpper = true;
                v = y;
            }
            if (v.op() == Op.MAX && v.dtype() == DType.F32) {
                UOp c = v.src(1).isConst() || bound(v.src(1)) != null ? v.src(1) : v.src(0).isConst() || bound(v.src(0)) != null ? v.src(0) : null;
                if (c != null) {
                    lowerFrom = bound(c);
                    if (lowerFrom == null) lower = (float) c.constDouble();
                    hasLower = true;
                    v = c == v.src(1) ? v.src(0) : v.src(1);
                }
            }
            List<Contraction.Operand> addends = new ArrayList<>();
            try {
                if (!sumsPlus(v, acc, all, reduceParts, addends)) return null;
            } catch (NotAffine e) {
                return null;
            }
            return addends.size() > 2 ? null : new StoreEpilogue(addends, hasLower, lower, hasUpper, upper, lowerFrom, upperFrom);
        }

        /** {@code u} as an f32 element of a parameter at a constant index (a bound given as a tensor), or null. */
        private static StoreEpilogue.Bound bound(UOp u) {
            if (u.op() != Op.LOAD || u.dtype() != DType.F32 || u.src().size() != 2 || !u.src(1).isConst()) return null;
            if (!(u.src(0).arg() instanceof Slot s) || s.kind() != Slot.Kind.PARAM || s.index() == 0) return null;
            return new StoreEpilogue.Bound(s.index(), u.src(1).constLong());
        }

        /** Whether {@code v} is the sums plus loads, each added after the ones below it (collected in that order). */
        private boolean sumsPlus(UOp v, Slot acc, List<Variable> all, List<Variable> reduceParts, List<Contraction.Operand> addends) throws NotAffine {
            if (v.op() == Op.DEFINE_VAR && acc.equals(v.arg())) return true;
            if (v.op() != Op.ADD || v.dtype() != DType.F32) return false;
            // IEEE addition is commutative: the sums may be either operand
            boolean left = v.src(0).toposort().stream().anyMatch(u -> u.op() == Op.DEFINE_VAR && acc.equals(u.arg()));
            UOp inner = left ? v.src(0) : v.src(1), term = left ? v.src(1) : v.src(0);
            if (!sumsPlus(inner, acc, all, reduceParts, addends)) return false;
            if (term.op() != Op.LOAD || term.dtype() != DType.F32 || term.src().size() != 2 || !(term.src(0).arg() instanceof Slot s)
                    || s.kind() != Slot.Kind.PARAM || s.index() == 0) return false;
            Affine index = affine(term.src(1));
            for (Variable r : reduceParts) if (index.coeff(r) != 0) return false;
            addends.add(new Operand(s.index(), index.constant(), strides(index, all), List.of()));
            return true;
        }

        private Variable loop(Stmt.Loop l) throws NotAffine {
            if (l.limitStep() != 1) throw new NotAffine(); // a split loop (not a lowered kernel's): its limit is in groups
            if (l.limit() != null) limits.put(l.index(), l.limit());
            return l.index();
        }

        /** The variables {@code v} is read as: itself, or its digits, most significant first. */
        private List<Variable> parts(Variable v) {
            Digits s = splits.get(v);
            return s == null ? List.of(v) : s.parts();
        }

        /**
         * Records the divisors of every {@code v // d}, {@code v % m}, {@code (v // d) % m} and {@code v // d // e} of a loop
         * variable: the cut points of its digits, which must each divide the next and the extent.
         */
        private void findSplits(UOp... expressions) throws NotAffine {
            Map<Variable, TreeSet<Long>> cuts = new LinkedHashMap<>();
            for (UOp e : expressions) for (UOp u : e.toposort()) {
                Division division = division(u);
                if (division == null) continue;
                Variable v = division.v();
                for (long c : division.m() == 0 ? new long[] {division.d()} : new long[] {division.d(), Math.multiplyExact(division.d(), division.m())}) {
                    if (c == 1 || c >= v.max() + 1) continue; // v // c is 0 (or v), v % c is v (or 0): no digit
                    if (limits.containsKey(v)) throw new NotAffine();
                    cuts.computeIfAbsent(v, k -> new TreeSet<>()).add(c);
                }
            }
            for (Map.Entry<Variable, TreeSet<Long>> entry : cuts.entrySet()) {
                Variable v = entry.getKey();
                List<Long> points = new ArrayList<>(entry.getValue());
                points.addFirst(1L);
                points.add(v.max() + 1);
                List<Variable> parts = new ArrayList<>();
                long[] weights = new long[points.size() - 1];
                for (int j = points.size() - 2, l = 0; j >= 0; j--, l++) {
                    if (points.get(j + 1) % points.get(j) != 0) throw new NotAffine(); // not one mixed radix
                    parts.add(new Variable(v.name() + "_d" + j, 0, points.get(j + 1) / points.get(j) - 1));
                    weights[l] = points.get(j);
                }
                splits.put(v, new Digits(parts, weights));
            }
        }

        /** {@code (v // d) % m} of a loop variable v (no modulus when m is 0). */
        private record Division(Variable v, long d, long m) {}

        /**
         * {@code u} as a {@link Division} if it is {@code v // d}, {@code v % m}, {@code (v // d) % m} or {@code v // d // e}
         * of a loop variable, else null.
         *
         * @throws NotAffine if a divisor is not positive
         */
        private Division division(UOp u) throws NotAffine {
            if (u.op() != Op.FLOORDIV && u.op() != Op.FLOORMOD || !u.src(1).isConst()) return null;
            long c = u.src(1).constLong(), d = u.op() == Op.FLOORDIV ? c : 1, m = u.op() == Op.FLOORMOD ? c : 0;
            UOp x = u.src(0);
            if (x.op() == Op.FLOORDIV && x.src(1).isConst()) {
                d = Math.multiplyExact(d, x.src(1).constLong());
                x = x.src(0);
            }
            if (x.op() != Op.DEFINE_VAR || !(x.arg() instanceof Variable v) || !outer.contains(v) && !reduce.contains(v)) return null;
            if (d <= 0 || m < 0 || u.op() == Op.FLOORMOD && m == 0) throw new NotAffine();
            return new Division(v, d, m);
        }

        /** v as digits: {@code v = sum(parts[l] * weights[l])}, most significant first (the last weight is 1). */
        private record Digits(List<Variable> parts, long[] weights) {
            /**
             * {@code (v // d) % m} (no modulus when m is 0) as the digits of weight in [d, d * m), each over d; d and d * m
             * must be cut points (or past the extent).
             */
            Affine digits(long d, long m) throws NotAffine {
                long extent = weights[0] * (parts.getFirst().max() + 1);
                long top = m == 0 ? Long.MAX_VALUE : Math.multiplyExact(d, m);
                if (d >= extent) return Affine.of(0);
                boolean cutAtD = false, cutAtTop = top >= extent;
                Map<Variable, Long> coeffs = new LinkedHashMap<>();
                for (int l = 0; l < parts.size(); l++) {
                    long w = weights[l];
                    cutAtD |= w == d;
                    cutAtTop |= w == top;
                    if (w >= d && w < top) coeffs.put(parts.get(l), w / d);
                }
                if (!cutAtD || !cutAtTop) throw new NotAffine();
                return new Affine(coeffs, 0);
            }
        }

        /** A read of an f32 parameter at an affine index, under interval gates. */
        private record Load(int param, Affine index, List<Affine[]> gates) {
            boolean uses(Variable v) {
                if (index.coeff(v) != 0) return true;
                for (Affine[] g : gates) if (g[0].coeff(v) != 0) return true;
                return false;
            }

            Operand operand(List<Variable> all) {
                List<Gate> gs = new ArrayList<>();
                for (Affine[] g : gates) {
                    // g = {e, lo, hi} with lo <= e < hi and e's constant folded into the bounds
                    long k = g[0].constant();
                    long[] coeffs = strides(g[0], all);
                    long lo = sat(g[1].constant() - k), hi = sat(g[2].constant() - k);
                    if (Arrays.stream(coeffs).filter(c -> c != 0).findFirst().orElse(0) < 0) {
                        // one sign per expression, so both bounds of a padded axis meet in one gate: lo <= e < hi == 1-hi <= -e < 1-lo
                        for (int i = 0; i < coeffs.length; i++) coeffs[i] = -coeffs[i];
                        long l = lo;
                        lo = sat(1 - hi);
                        hi = sat(1 - l);
                    }
                    gs.add(new Gate(coeffs, lo, hi));
                }
                return new Operand(param, index.constant(), strides(index, all), merge(gs));
            }
        }

        /** x or y of the product: WHERE(gate, load, 0) layers over a LOAD, possibly gated itself. */
        private Load operand(UOp u) throws NotAffine {
            List<Affine[]> gates = new ArrayList<>();
            while (u.op() == Op.WHERE) {
                if (!isZero(u.src(2))) return null;
                gates(u.src(0), false, gates);
                u = u.src(1);
            }
            if (u.op() != Op.LOAD || u.dtype() != DType.F32 || !(u.src(0).arg() instanceof Slot s) || s.kind() != Slot.Kind.PARAM) return null;
            if (s.index() == 0) return null; // reads the output: not a plain contraction
            if (u.src().size() == 3) gates(u.src(2), false, gates);
            return new Load(s.index(), affine(u.src(1)), gates);
        }

        /** Adds the interval conditions of boolean {@code g} (negated if {@code not}); only conjunctions are accepted. */
        private void gates(UOp g, boolean not, List<Affine[]> out) throws NotAffine {
            switch (g.op()) {
                case CONST -> {
                    if ((g.constLong() != 0) == not) throw new NotAffine(); // always false: the operand is 0
                }
                case AND -> {
                    if (not) throw new NotAffine();
                    gates(g.src(0), false, out);
                    gates(g.src(1), false, out);
                }
                case WHERE -> { // c ? d : false == c && d;  c ? false : d == !c && d
                    if (not) throw new NotAffine();
                    if (isFalse(g.src(2))) {
                        gates(g.src(0), false, out);
                        gates(g.src(1), false, out);
                    } else if (isFalse(g.src(1))) {
                        gates(g.src(0), true, out);
                        gates(g.src(2), false, out);
                    } else {
                        throw new NotAffine();
                    }
                }
                case CMPLT -> {
                    Affine l = affine(g.src(0)), r = affine(g.src(1));
                    Affine e = l.plus(r.times(-1)); // l < r  <=>  l - r < 0
                    if (e.coeffs().values().stream().allMatch(c -> c == 0)) { // a constant condition
                        if ((e.constant() < 0) == not) throw new NotAffine();
                        return;
                    }
                    Affine zero = Affine.of(0);
                    out.add(not ? new Affine[]{e, zero, Affine.of(Long.MAX_VALUE / 4)} : new Affine[]{e, Affine.of(Long.MIN_VALUE / 4), zero});
                }
                default -> throw new NotAffine();
            }
        }

        private Affine affine(UOp u) throws NotAffine {
            return switch (u.op()) {
                case CONST -> {
                    if (!u.dtype().isInt()) throw new NotAffine();
                    yield Affine.of(u.constLong());
                }
                case DEFINE_VAR -> {
                    if (!(u.arg() instanceof Variable v) || !outer.contains(v) && !reduce.contains(v)) throw new NotAffine();
                    Digits s = splits.get(v);
                    yield s == null ? new Affine(Map.of(v, 1L), 0) : s.digits(1, 0);
                }
                case FLOORDIV, FLOORMOD -> {
                    Division division = division(u);
                    if (division == null) throw new NotAffine();
                    Digits s = splits.get(division.v());
                    if (s == null) s = new Digits(List.of(division.v()), new long[] {1}); // every divisor at or past the extent
                    yield s.digits(division.d(), division.m());
                }
                case ADD -> affine(u.src(0)).plus(affine(u.src(1)));
                case NEG -> affine(u.src(0)).times(-1);
                case MUL -> {
                    if (u.src(1).isConst()) yield affine(u.src(0)).times(constant(u.src(1)));
                    if (u.src(0).isConst()) yield affine(u.src(1)).times(constant(u.src(0)));
                    throw new NotAffine();
                }
                case CAST -> {
                    if (!u.dtype().isInt() || !u.src(0).dtype().isInt()) throw new NotAffine();
                    yield affine(u.src(0)); // index casts keep every value (range analysis chose the width)
                }
                default -> throw new NotAffine();
            };
        }

        private static long constant(UOp c) throws NotAffine {
            if (!c.dtype().isInt()) throw new NotAffine();
            return c.constLong();
        }
    }

    private static boolean isZero(UOp u) { return u.isConst() && u.constDouble() == 0.0; }

    private static boolean isFalse(UOp u) { return u.isConst() && u.constLong() == 0; }

    private static long sat(long v) { return Math.max(Long.MIN_VALUE / 4, Math.min(Long.MAX_VALUE / 4, v)); }

    private static long[] strides(Affine a, List<Variable> all) {
        long[] s = new long[all.size()];
        for (int i = 0; i < s.length; i++) s[i] = a.coeff(all.get(i));
        return s;
    }

    /** Gates over the same expression intersected into one; gates that always hold dropped later by the engine. */
    private static List<Gate> merge(List<Gate> gates) {
        Map<List<Long>, long[]> byExpr = new LinkedHashMap<>();
        for (Gate g : gates) {
            List<Long> key = Arrays.stream(g.coeffs()).boxed().toList();
            long[] b = byExpr.get(key);
            if (b == null) byExpr.put(key, new long[]{g.lo(), g.hi()});
            else {
                b[0] = Math.max(b[0], g.lo());
                b[1] = Math.min(b[1], g.hi());
            }
        }
        List<Gate> out = new ArrayList<>();
        byExpr.forEach((k, b) -> out.add(new Gate(k.stream().mapToLong(Long::longValue).toArray(), b[0], b[1])));
        return out;
    }
}
