package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.ir.GraphRewriter;
import dev.kiln.ir.Op;
import dev.kiln.ir.PatternMatcher;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.Symbolic;
import dev.kiln.ir.UOp;
import dev.kiln.ir.UPat;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import static dev.kiln.ir.PatternMatcher.rule;

/**
 * Applies {@link Opt optimisation actions} to a kernel's loops. Every action is a transform of the
 * loop IR that the {@link KernelEvaluator} runs like any other program.
 *
 * <h2>Axes</h2>
 * The axes of a program are its loops in pre-order (the order their headers appear in the text,
 * outermost first), skipping UPCAST and UNROLL loops, which are finished and cannot be split again.
 * For a lowered kernel that is the output loops from outermost to innermost, then the reduction loops
 * of each register in the order the registers are defined, each nest outermost first. An action
 * addresses the axes of the program it is applied to: {@link #apply(KernelProgram, List)} applies its
 * actions in order, each to the result of the previous ones. UPCAST, UNROLL and GROUP of an innermost
 * reduce loop leave the numbering unchanged; TILE adds an output axis after the GLOBAL ones, shifting
 * the reduce axes by one.
 *
 * <h2>Splitting</h2>
 * A split of a loop {@code i} (extent n) by {@code a} makes an outer loop {@code i_o} (n / a) and an
 * inner one (a) and replaces {@code i} everywhere by {@code i_o * a + i_inner}, through the rewrite
 * engine and then {@link Symbolic#simplify}; the new loop variables carry their bounds, so range
 * analysis still folds the index math. Amounts must divide the extent: this step rejects remainders
 * rather than guarding them, and the heuristics only pick divisors.
 *
 * <h2>Validation</h2>
 * An invalid action is an {@link IllegalArgumentException} naming the kernel, the action, the loop
 * (its variable, extent and kind) and why: an unknown axis, an amount below 2 or not dividing the
 * extent, UPCAST, UNROLL or GROUP above {@link #MAX_EXPANSION}, UPCAST or TILE of a reduce loop,
 * UNROLL or GROUP of an output loop, THREAD twice or on a loop that is not the kernel's outermost
 * statement, or any action but THREAD, UPCAST and GROUP on a loop with a symbolic limit (or a second split
 * of a loop already split in groups).
 *
 * <h2>Symbolic sizes</h2>
 * UPCAST of an output loop and GROUP of a reduce loop with a limit (a symbolic size) keep it as the outer
 * loop's limit in groups ({@link Stmt.Loop#limitStep}): the loop runs every group that holds an iteration
 * below the size, and in the last group the lanes at or past it are masked in the loop IR itself, so every
 * backend and the evaluator run them alike: their loads and index checks are gated off, their stores gated
 * ({@link Stmt.Store#gate}), and a GROUP's lanes add their reduction's identity (see {@code LiveLanes}). A
 * reduce loop that stores is not grouped over a symbolic size.
 * THREAD's worker count is a hint: a later split may leave the threaded loop fewer
 * iterations than workers, and the runtime then uses one worker per iteration.
 */
public final class Optimizer {
    /** The largest amount UPCAST, UNROLL and GROUP accept: each writes the loop body that many times. */
    public static final int MAX_EXPANSION = 32;

    private final KernelProgram program;
    private final Opt opt;
    private final Set<String> names = new HashSet<>();
    private int registers;

    private Optimizer(KernelProgram program, Opt opt) {
        this.program = program;
        this.opt = opt;
        names.addAll(program.variables().stream().map(Variable::name).toList());
        walk(program.body(), s -> {
            switch (s) {
                case Stmt.Loop l -> names.add(l.index().name());
                case Stmt.Define d -> registers = Math.max(registers, d.register().index() + 1);
                default -> { }
            }
            for (UOp e : expressions(s)) {
                for (UOp u : e.toposort()) {
                    if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Variable v) names.add(v.name());
                    if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Slot r && r.kind() == Slot.Kind.REGISTER) {
                        registers = Math.max(registers, r.index() + 1);
                    }
                }
            }
        });
    }

    /** {@code program} with {@code opts} applied in order, each to the result of the previous ones. */
    public static KernelProgram apply(KernelProgram program, List<Opt> opts) {
        KernelProgram p = program;
        for (Opt o : opts) p = apply(p, o);
        return p;
    }

    /**
     * {@code program} with {@code opt} applied; {@link KernelProgram#opts()} of the result ends with it.
     *
     * @throws IllegalArgumentException if the action does not apply to the program (see the class comment)
     */
    public static KernelProgram apply(KernelProgram program, Opt opt) {
        return new Optimizer(program, opt).run();
    }

    /** The loops an {@link Opt#axis()} indexes: pre-order, skipping UPCAST and UNROLL loops. */
    public static List<Stmt.Loop> axes(KernelProgram program) {
        List<Stmt.Loop> out = new ArrayList<>();
        walk(program.body(), s -> {
            if (s instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.UPCAST && l.kind() != Stmt.LoopKind.UNROLL) out.add(l);
        });
        return out;
    }

    /** Visits every statement of {@code s} in pre-order. */
    public static void walk(Stmt s, Consumer<Stmt> visit) {
        visit.accept(s);
        switch (s) {
            case Stmt.Block b -> b.body().forEach(x -> walk(x, visit));
            case Stmt.Loop l -> walk(l.body(), visit);
            default -> { }
        }
    }

    /** The registers the expressions of {@code s} and of its nested statements read, in the order they are met. */
    public static Set<Slot> registersRead(Stmt s) {
        Set<Slot> read = new LinkedHashSet<>();
        walk(s, x -> {
            for (UOp e : expressions(x)) {
                for (UOp u : e.toposort()) {
                    if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Slot r && r.kind() == Slot.Kind.REGISTER) read.add(r);
                }
            }
        });
        return read;
    }

    /** The expressions a statement holds directly (not those of nested statements). */
    public static List<UOp> expressions(Stmt s) {
        return switch (s) {
            case Stmt.Define d -> List.of(d.init());
            case Stmt.Accumulate a -> List.of(a.value());
            case Stmt.Store st -> st.gate() == null ? List.of(st.index(), st.value()) : List.of(st.index(), st.value(), st.gate());
            case Stmt.Block b -> List.of();
            case Stmt.Loop l -> List.of();
        };
    }

    // ---------------------------------------------------------------- validation

    private KernelProgram run() {
        List<Stmt.Loop> axes = axes(program);
        if (opt.axis() < 0 || opt.axis() >= axes.size()) {
            StringBuilder have = new StringBuilder();
            for (int k = 0; k < axes.size(); k++) have.append(k == 0 ? "" : ", ").append(k).append(": ").append(describe(axes.get(k)));
            throw new IllegalArgumentException("kernel " + program.name() + ": " + opt.describe() + ": no axis " + opt.axis()
                    + (axes.isEmpty() ? "; the kernel has no loops" : "; the kernel's axes are " + have));
        }
        Stmt.Loop loop = axes.get(opt.axis());
        Stmt.LoopKind kind = loop.kind();
        boolean output = kind == Stmt.LoopKind.GLOBAL || kind == Stmt.LoopKind.THREAD;
        if (opt.amount() < (opt instanceof Opt.Split ? 1 : 2)) throw fail(loop, "the amount must be at least 2, got " + opt.amount());
        if (loop.limit() != null && !(opt instanceof Opt.Thread) && !((opt instanceof Opt.Group || opt instanceof Opt.Upcast) && loop.limitStep() == 1)) {
            throw fail(loop, "the loop runs to the symbolic size " + loop.limit().name() + (loop.limitStep() == 1 ? "" : " in groups of " + loop.limitStep())
                    + ", so it cannot be split; only THREAD, UPCAST and GROUP apply");
        }
        Stmt.Block body = switch (opt) {
            case Opt.Upcast u -> {
                if (!output) throw fail(loop, "UPCAST needs an output loop with independent iterations; use UNROLL or GROUP on a reduce loop");
                checkSplit(loop, u.amount(), true);
                if (!inNest(loop)) { // a part of a SPLIT: its lanes stay where it is
                    checkInnermostOutput(loop, "UPCAST of a loop outside the chain of output loops");
                    yield upcastInPlace(loop, u.amount());
                }
                yield splitOutput(loop, u.amount(), "_up", Stmt.LoopKind.UPCAST);
            }
            case Opt.UpcastRemainder u -> {
                checkRowEnd(loop, output, u);
                yield upcastRemainder(loop, u.amount());
            }
            case Opt.UpcastOverlap u -> {
                checkRowEnd(loop, output, u);
                checkRecomputable(loop);
                yield upcastOverlap(loop, u.amount());
            }
            case Opt.Split sp -> {
                if (!output) throw fail(loop, "SPLIT needs an output loop with independent iterations");
                if (sp.at() < 1 || sp.at() >= loop.extent()) {
                    throw fail(loop, "the split point must be within 1.." + (loop.extent() - 1) + ", got " + sp.at());
                }
                checkInnermostOutput(loop, "SPLIT");
                yield split(loop, sp.at());
            }
            case Opt.Tile t -> {
                if (!output) throw fail(loop, "TILE needs an output loop with independent iterations, and a reduce loop's order is fixed");
                checkSplit(loop, t.size(), false);
                yield splitOutput(loop, t.size(), "_t", Stmt.LoopKind.GLOBAL);
            }
            case Opt.Unroll u -> {
                if (kind != Stmt.LoopKind.REDUCE) throw fail(loop, "UNROLL applies to reduce loops; use UPCAST on an output loop");
                checkSplit(loop, u.amount(), true);
                yield unroll(loop, u.amount());
            }
            case Opt.Group g -> {
                if (kind != Stmt.LoopKind.REDUCE) throw fail(loop, "GROUP splits a reduction and needs a reduce loop");
                checkExpansion(loop, g.amount()); // a remainder is masked in the last group
                checkOneGroup(loop, g.amount());
                yield group(loop, g.amount());
            }
            case Opt.Thread t -> thread(loop, axes, t.workers());
        };
        List<Opt> opts = new ArrayList<>(program.opts());
        opts.add(opt);
        return new KernelProgram(program.name(), program.params(), program.sizes(), program.variables(), body, opts);
    }

    /** UPCAST_REMAINDER and UPCAST_OVERLAP: vectors over an innermost output loop that their amount does not divide. */
    private void checkRowEnd(Stmt.Loop loop, boolean output, Opt u) {
        if (!output) throw fail(loop, u.kind() + " needs an output loop with independent iterations");
        checkExpansion(loop, u.amount());
        if (loop.extent() % u.amount() == 0) throw fail(loop, u.amount() + " divides the extent " + loop.extent() + "; use UPCAST");
        checkOneGroup(loop, u.amount());
        checkInnermostOutput(loop, u.kind());
    }

    /** A loop that becomes two: not the range the runtime splits, and with no output loop inside. */
    private void checkInnermostOutput(Stmt.Loop loop, String action) {
        if (loop.kind() == Stmt.LoopKind.THREAD || program.body().body().contains(loop)) {
            throw fail(loop, "the kernel's outermost loop is the range the runtime splits and must stay one loop");
        }
        boolean[] inner = {false};
        walk(loop.body(), x -> inner[0] |= x instanceof Stmt.Loop l && (l.kind() == Stmt.LoopKind.GLOBAL || l.kind() == Stmt.LoopKind.THREAD));
        if (inner[0]) throw fail(loop, action + " applies to an innermost output loop");
    }

    private void checkSplit(Stmt.Loop loop, int amount, boolean expands) {
        if (expands) checkExpansion(loop, amount);
        if (loop.extent() % amount != 0) {
            throw fail(loop, amount + " does not divide the extent " + loop.extent() + " (remainders are not supported; pick a divisor)");
        }
    }

    private void checkExpansion(Stmt.Loop loop, int amount) {
        if (amount > MAX_EXPANSION) throw fail(loop, "the amount " + amount + " is above the limit of " + MAX_EXPANSION + " copies of the loop body");
    }

    private void checkOneGroup(Stmt.Loop loop, int amount) {
        if (loop.extent() < amount) throw fail(loop, "the extent " + loop.extent() + " is less than one group of " + amount);
    }

    private IllegalArgumentException fail(Stmt.Loop loop, String why) {
        return new IllegalArgumentException("kernel " + program.name() + ": " + opt.describe() + " on loop " + describe(loop) + ": " + why);
    }

    private static String describe(Stmt.Loop l) { return l.index().name() + " (extent " + l.extent() + ", " + l.kind() + ")"; }

    // ---------------------------------------------------------------- output loops

    /** The loop headers of the output nest: the chain of single GLOBAL, THREAD or UPCAST loops from the top. */
    private record Nest(List<Header> headers, Stmt.Block inner) {}

    private record Header(Variable index, Stmt.LoopKind kind, Variable limit, int limitStep) {}

    private static boolean isNestLoop(Stmt.Block b) {
        return b.body().size() == 1 && b.body().getFirst() instanceof Stmt.Loop l
                && (l.kind() == Stmt.LoopKind.GLOBAL || l.kind() == Stmt.LoopKind.THREAD || l.kind() == Stmt.LoopKind.UPCAST);
    }

    private Nest nest() {
        List<Header> headers = new ArrayList<>();
        Stmt.Block b = program.body();
        while (isNestLoop(b)) {
            Stmt.Loop l = (Stmt.Loop) b.body().getFirst();
            headers.add(new Header(l.index(), l.kind(), l.limit(), l.limitStep()));
            b = l.body();
        }
        return new Nest(headers, b);
    }

    private static Stmt.Block build(List<Header> headers, Stmt.Block inner) {
        Stmt.Block b = inner;
        for (Header h : headers.reversed()) b = new Stmt.Block(List.of(new Stmt.Loop(h.index(), h.kind(), b, h.limit(), h.limitStep())));
        return b;
    }

    private int position(List<Header> headers, Stmt.Loop loop) {
        for (int k = 0; k < headers.size(); k++) if (headers.get(k).index().equals(loop.index())) return k;
        throw fail(loop, "the loop is not in the kernel's output nest (the chain of output loops around its body)");
    }

    /**
     * UPCAST and TILE: the outer loop keeps the loop's place and kind; the inner one goes innermost
     * among the output loops (an UPCAST loop after every other, a TILE loop before the UPCAST loops).
     * Output iterations are independent, so the interchange keeps every value.
     */
    private Stmt.Block splitOutput(Stmt.Loop loop, int amount, String suffix, Stmt.LoopKind innerKind) {
        Nest nest = nest();
        List<Header> headers = new ArrayList<>(nest.headers());
        int at = position(headers, loop);
        Variable outer = fresh(loop.index().name() + "_o", loop.extent() / amount);
        Variable inner = fresh(loop.index().name() + suffix, amount);
        headers.set(at, new Header(outer, loop.kind(), loop.limit(), loop.limit() == null ? 1 : amount));
        int insert = headers.size();
        if (innerKind != Stmt.LoopKind.UPCAST) {
            while (insert > 0 && headers.get(insert - 1).kind() == Stmt.LoopKind.UPCAST) insert--;
        }
        headers.add(insert, new Header(inner, innerKind, null, 1));
        UOp replacement = UOp.variable(outer).mul(amount).add(UOp.variable(inner));
        return build(headers, liveLanes(loop, substitute(nest.inner(), Map.of(loop.index(), replacement)), replacement, inner, Map.of()));
    }

    private boolean inNest(Stmt.Loop loop) {
        return nest().headers().stream().anyMatch(h -> h.index().equals(loop.index()));
    }

    /** UPCAST of an innermost output loop beside others: {@code i_o} in its place around the UPCAST loop {@code i_up}. */
    private Stmt.Block upcastInPlace(Stmt.Loop loop, int amount) {
        return replace(program.body(), loop, List.of(wholeVectors(loop, amount)));
    }

    /** The whole groups of {@code amount} iterations of {@code loop}: {@code i_o} around the UPCAST loop {@code i_up}. */
    private Stmt.Loop wholeVectors(Stmt.Loop loop, int amount) {
        Variable outer = fresh(loop.index().name() + "_o", loop.extent() / amount);
        Variable lane = fresh(loop.index().name() + "_up", amount);
        UOp i = UOp.variable(outer).mul(amount).add(UOp.variable(lane));
        Stmt.Block lanes = liveLanes(loop, substitute(loop.body(), Map.of(loop.index(), i)), i, lane, Map.of());
        return new Stmt.Loop(outer, loop.kind(), new Stmt.Block(List.of(new Stmt.Loop(lane, Stmt.LoopKind.UPCAST, lanes))), loop.limit(),
                loop.limit() == null ? 1 : amount);
    }

    /**
     * {@code body}, the body of {@code loop} at iteration {@code i} of a split into groups with lane variable
     * {@code lane}: as it is for a loop without a limit whose extent the lanes divide, else with the lanes at or past
     * the limit or the extent masked off
     * ({@link LiveLanes}); {@code partials} are the registers GROUP accumulates per lane, by reduction.
     */
    private Stmt.Block liveLanes(Stmt.Loop loop, Stmt.Block body, UOp i, Variable lane, Map<Slot, ReduceArg.Kind> partials) {
        // the last group also runs past a constant extent its lanes do not divide (GROUP with a remainder)
        boolean pastExtent = loop.extent() % (lane.max() + 1) != 0;
        if (loop.limit() == null && !pastExtent) return body;
        Set<Object> perLane = new HashSet<>();
        perLane.add(lane);
        walk(body, s -> {
            if (s instanceof Stmt.Define d) perLane.add(d.register());
        });
        UOp belowLimit = loop.limit() == null ? null : i.lt(UOp.variable(loop.limit())), belowEnd = pastExtent ? i.lt(UOp.constant(i.dtype(), loop.extent())) : null;
        UOp live = Symbolic.simplify(belowLimit == null ? belowEnd : belowEnd == null ? belowLimit : UOp.of(Op.AND, DType.BOOL, null, belowEnd, belowLimit));
        return new LiveLanes(loop, live, partials, perLane).block(body);
    }

    /** UPCAST_REMAINDER: the loop becomes the vector part and, after it, the single iterations left. */
    private Stmt.Block upcastRemainder(Stmt.Loop loop, int amount) {
        long n = loop.extent(), whole = n - n % amount;
        Stmt.Loop vector = wholeVectors(loop, amount);
        Variable rest = fresh(loop.index().name() + "_r", n % amount);
        Stmt.Block single = substitute(loop.body(), Map.of(loop.index(), UOp.variable(rest).add(whole)));
        return replace(program.body(), loop, List.of(vector, new Stmt.Loop(rest, loop.kind(), single)));
    }

    /** SPLIT: the first {@code at} iterations, then the rest, each its own loop. */
    private Stmt.Block split(Stmt.Loop loop, long at) {
        Variable first = fresh(loop.index().name() + "_a", at);
        Variable rest = fresh(loop.index().name() + "_b", loop.extent() - at);
        // a part of one iteration is no loop in the source: its registers would share the enclosing scope with the tail's
        Stmt.Block head = substitute(loop.body(), renamingRegisters(loop.body(), Map.of(loop.index(), UOp.variable(first))));
        Stmt.Block tail = substitute(loop.body(), Map.of(loop.index(), UOp.variable(rest).add(at)));
        return replace(program.body(), loop, List.of(new Stmt.Loop(first, loop.kind(), head), new Stmt.Loop(rest, loop.kind(), tail)));
    }

    /**
     * UPCAST_OVERLAP: the whole multiples as vector groups, then one more group that ends at the loop's last
     * iteration and so repeats some before it. Repeating them stores the same values again only if no
     * iteration reads what any stores: {@link #checkRecomputable}.
     */
    private Stmt.Block upcastOverlap(Stmt.Loop loop, int amount) {
        Stmt.Loop vector = wholeVectors(loop, amount);
        Variable last = fresh(loop.index().name() + "_last", amount);
        Stmt.Block tail = substitute(loop.body(), renamingRegisters(loop.body(), Map.of(loop.index(), UOp.variable(last).add(loop.extent() - amount))));
        return replace(program.body(), loop, List.of(vector, new Stmt.Loop(last, Stmt.LoopKind.UPCAST, tail)));
    }

    /** Iterations of {@code loop} may run twice: it stores into no buffer the kernel reads, and accumulates only its own registers. */
    private void checkRecomputable(Stmt.Loop loop) {
        Set<Slot> stored = new HashSet<>(), defined = new HashSet<>();
        walk(program.body(), x -> {
            if (x instanceof Stmt.Store st) stored.add(st.param());
        });
        walk(loop.body(), x -> {
            if (x instanceof Stmt.Define d) defined.add(d.register());
        });
        walk(program.body(), x -> {
            for (UOp e : expressions(x)) {
                for (UOp u : e.toposort()) {
                    if (u.op() == Op.LOAD && stored.contains(u.src(0).slotArg())) {
                        throw fail(loop, "the kernel reads " + u.src(0).slotArg().name() + ", which it stores into, so an iteration must not run twice");
                    }
                }
            }
        });
        walk(loop.body(), x -> {
            if (x instanceof Stmt.Accumulate a && !defined.contains(a.register())) {
                throw fail(loop, "the loop accumulates register " + a.register().name() + " across iterations, so an iteration must not run twice");
            }
        });
    }

    /** {@code map} and a new register for each register {@code body} defines. */
    private Map<Object, UOp> renamingRegisters(Stmt.Block body, Map<Object, UOp> map) {
        Map<Object, UOp> out = new HashMap<>(map);
        walk(body, s -> {
            if (s instanceof Stmt.Define d) out.put(d.register(), newRegister(d.register()).uop());
        });
        return out;
    }

    private Stmt.Block thread(Stmt.Loop loop, List<Stmt.Loop> axes, int workers) {
        for (Stmt.Loop l : axes) {
            if (l.kind() == Stmt.LoopKind.THREAD) throw fail(loop, "the kernel is already threaded on loop " + describe(l));
        }
        List<Stmt> top = program.body().body();
        if (opt.axis() != 0 || top.size() != 1 || top.getFirst() != loop) {
            throw fail(loop, "THREAD applies to the kernel's outermost loop (axis 0, its only top-level statement)");
        }
        if (loop.kind() != Stmt.LoopKind.GLOBAL) throw fail(loop, "THREAD needs an output loop with independent iterations");
        return new Stmt.Block(List.of(loop.with(Stmt.LoopKind.THREAD, loop.body())));
    }

    // ---------------------------------------------------------------- reduce loops

    private Stmt.Block unroll(Stmt.Loop loop, int amount) {
        Variable outer = fresh(loop.index().name() + "_o", loop.extent() / amount);
        Variable inner = fresh(loop.index().name() + "_ur", amount);
        Stmt.Block body = substitute(loop.body(), Map.of(loop.index(), UOp.variable(outer).mul(amount).add(UOp.variable(inner))));
        Stmt.Block unrolled = amount > 1 && extremum(body) instanceof Stmt.Accumulate a
                ? extremumOfUnrolled(a, inner, amount)
                : new Stmt.Block(List.of(new Stmt.Loop(inner, Stmt.LoopKind.UNROLL, body)));
        return replace(program.body(), loop, List.of(new Stmt.Loop(outer, Stmt.LoopKind.REDUCE, unrolled)));
    }

    /** The body's one statement where it is a max or min accumulation of a value that does not read its register, else null. */
    private static Stmt.Accumulate extremum(Stmt.Block body) {
        return body.body().size() == 1 && body.body().getFirst() instanceof Stmt.Accumulate a
                && (a.kind() == ReduceArg.Kind.MAX || a.kind() == ReduceArg.Kind.MIN) && !a.value().toposort().contains(a.register().uop()) ? a : null;
    }

    /**
     * The unrolled copies of {@code acc = max(acc, value(inner))} (or min) as {@code t = value(0); t = max(t, value(k))}
     * for the other copies, then {@code acc = max(acc, t)}: one step per group on the register's chain instead of one
     * per copy, and the copies' own chain free to overlap the previous group's (a 3 x 3 max pooling waited on the
     * latency of nine dependent maxima, each several instructions with Java's NaN and signed-zero rules). The same
     * left-to-right fold, regrouped: max and min with those rules are associative, the first NaN included, so the
     * result is bit for bit the chain's.
     */
    private Stmt.Block extremumOfUnrolled(Stmt.Accumulate a, Variable inner, int amount) {
        Slot t = newRegister(a.register());
        Variable rest = fresh(inner.name() + "_r", amount - 1);
        UOp value = a.value();
        return new Stmt.Block(List.of(
                new Stmt.Define(t, substitute(value, Map.of(inner, UOp.index(0)))),
                new Stmt.Loop(rest, Stmt.LoopKind.UNROLL, new Stmt.Block(List.of(
                        new Stmt.Accumulate(t, a.kind(), substitute(value, Map.of(inner, UOp.variable(rest).add(1))))))),
                new Stmt.Accumulate(a.register(), a.kind(), t.uop())));
    }

    /**
     * GROUP: iteration {@code r} of the loop accumulates into the partial register of lane
     * {@code r % lanes} instead of the loop's carried registers (those it accumulates but does not
     * define), and the partials are combined into the carried registers in lane order after the loop:
     *
     * <pre>
     * UPCAST g in [0, lanes):
     *     Define p = identity                     (one partial per carried register)
     *     REDUCE r_o in [0, n / lanes): body(r = r_o * lanes + g), accumulating into p
     *     Accumulate carried += p
     * </pre>
     *
     * The lanes are independent but for the last statement, which every backend runs for lane 0, 1, ...
     * in order, whether it runs the lanes one after another, interleaved statement by statement, or as
     * vector lanes (a vector partial, folded lane by lane): so the sums are those of {@code lanes}
     * interleaved partial sums, the same on every device.
     */
    private Stmt.Block group(Stmt.Loop loop, int lanes) {
        Map<Slot, ReduceArg.Kind> carried = new LinkedHashMap<>();
        Set<Slot> local = new HashSet<>();
        walk(loop.body(), s -> {
            if (s instanceof Stmt.Define d) local.add(d.register());
        });
        walk(loop.body(), s -> {
            if (s instanceof Stmt.Accumulate a && !local.contains(a.register())) {
                ReduceArg.Kind before = carried.putIfAbsent(a.register(), a.kind());
                if (before != null && before != a.kind()) {
                    throw fail(loop, "register " + a.register().name() + " is accumulated with both " + before + " and " + a.kind());
                }
            }
        });
        if (carried.isEmpty()) throw fail(loop, "the loop accumulates no register defined outside it");
        boolean pastExtent = loop.extent() % lanes != 0;
        if (loop.limit() != null || pastExtent) {
            walk(loop.body(), s -> {
                if (s instanceof Stmt.Store st) {
                    throw fail(loop, "the loop stores into " + st.param().name() + ", which a lane past its "
                            + (loop.limit() != null ? "symbolic size " + loop.limit().name() : "extent") + " must not do, and a store has no gate");
                }
            });
        }
        for (Slot r : registersRead(loop.body())) {
            if (carried.containsKey(r)) {
                throw fail(loop, "the loop reads register " + r.name() + ", which it accumulates, so partial lanes would change what it reads");
            }
        }
        Variable outer = fresh(loop.index().name() + "_o", (loop.extent() + lanes - 1) / lanes);
        Variable lane = fresh(loop.index().name() + "_g", lanes);
        Map<Object, UOp> map = new HashMap<>();
        UOp r = UOp.variable(outer).mul(lanes).add(UOp.variable(lane));
        map.put(loop.index(), r);
        List<Stmt> inLane = new ArrayList<>();
        Map<Slot, Slot> partials = new LinkedHashMap<>();
        for (var c : carried.entrySet()) {
            Slot p = newRegister(c.getKey());
            partials.put(c.getKey(), p);
            map.put(c.getKey(), p.uop());
            inLane.add(new Stmt.Define(p, Lowerer.identity(c.getValue(), p.dtype())));
        }
        // a symbolic size: the groups that hold an iteration below it, the lanes past it masked off (see LiveLanes)
        Map<Slot, ReduceArg.Kind> kinds = new HashMap<>();
        partials.forEach((c, p) -> kinds.put(p, carried.get(c)));
        Stmt.Block body = liveLanes(loop, substitute(loop.body(), map), r, lane, kinds);
        inLane.add(new Stmt.Loop(outer, Stmt.LoopKind.REDUCE, body, loop.limit(), loop.limit() == null ? 1 : lanes));
        for (var p : partials.entrySet()) inLane.add(new Stmt.Accumulate(p.getKey(), carried.get(p.getKey()), p.getValue().uop()));
        return replace(program.body(), loop, List.of(new Stmt.Loop(lane, Stmt.LoopKind.UPCAST, new Stmt.Block(inLane))));
    }

    /**
     * The body of a loop split in groups whose last group runs past the loop's limit: where {@code live} is false
     * (an iteration at or past the limit) the body reads no memory (every load that differs between the lanes is
     * gated by {@code live}, so a vector lane's load is masked and a gathered index from a row past the limit is
     * never read), checks no index ({@code CHECK}'s gate), and adds the identity of its reduction to each of
     * {@code partials}, so they hold what the loop without those iterations would. A load or check the same for
     * every lane of a group (it reads neither the lane nor a register of the body) stays as it is: lane 0 of every
     * group that runs is live and makes the same one. What else a dead iteration computes from its zeros goes
     * nowhere, and no op traps on it (integer division by zero is 0, as {@link dev.kiln.ir.Alu} defines it). A store
     * (an output loop's lanes, UPCAST) is gated by {@code live}: a dead lane writes nothing.
     *
     * @param perLane the lane variable and the registers the body defines (a value read through one may differ between lanes)
     */
    private record LiveLanes(Stmt.Loop loop, UOp live, Map<Slot, ReduceArg.Kind> partials, Set<Object> perLane, Map<UOp, UOp> memo) {
        LiveLanes(Stmt.Loop loop, UOp live, Map<Slot, ReduceArg.Kind> partials, Set<Object> perLane) {
            this(loop, live, partials, perLane, new HashMap<>());
        }

        Stmt.Block block(Stmt.Block body) {
            List<Stmt> out = new ArrayList<>();
            for (Stmt s : body.body()) {
                out.add(switch (s) {
                    case Stmt.Block b -> block(b);
                    case Stmt.Loop l -> l.with(l.kind(), block(l.body()));
                    case Stmt.Define d -> new Stmt.Define(d.register(), gate(d.init()));
                    case Stmt.Accumulate a -> {
                        UOp v = gate(a.value());
                        ReduceArg.Kind kind = partials.get(a.register());
                        yield new Stmt.Accumulate(a.register(), a.kind(), kind == null ? v : live.where(v, Lowerer.identity(kind, v.dtype())));
                    }
                    // an output loop's lanes (UPCAST); GROUP refuses a reduce loop that stores
                    case Stmt.Store st -> new Stmt.Store(st.param(), gate(st.index()), gate(st.value()),
                            st.gate() == null ? live : UOp.of(Op.AND, DType.BOOL, null, gate(st.gate()), live));
                });
            }
            return new Stmt.Block(out);
        }

        /** {@code e} with every load and index check that may differ between lanes gated by {@link #live} as well. */
        private UOp gate(UOp e) {
            UOp known = memo.get(e);
            if (known != null) return known;
            List<UOp> src = new ArrayList<>(e.src().size());
            boolean changed = false;
            for (UOp s : e.src()) {
                UOp g = gate(s);
                src.add(g);
                changed |= g != s;
            }
            // LOAD(buffer, index[, gate]) and CHECK(index, size[, gate])
            if ((e.op() == Op.LOAD || e.op() == Op.CHECK) && e.toposort().stream().anyMatch(u -> u.op() == Op.DEFINE_VAR && perLane.contains(u.arg()))) {
                UOp gate = src.size() > 2 ? UOp.of(Op.AND, DType.BOOL, null, src.get(2), live) : live;
                if (src.size() > 2) src.set(2, gate);
                else src.add(gate);
                changed = true;
            }
            UOp out = changed ? e.withSrc(src) : e;
            memo.put(e, out);
            return out;
        }
    }

    private Slot newRegister(Slot like) { return new Slot(Slot.Kind.REGISTER, registers++, like.dtype()); }

    /** {@code b} with the statement {@code target} (by identity) replaced by {@code with}. */
    private static Stmt.Block replace(Stmt.Block b, Stmt target, List<Stmt> with) {
        List<Stmt> out = new ArrayList<>();
        for (Stmt s : b.body()) {
            if (s == target) out.addAll(with);
            else if (s instanceof Stmt.Loop l) out.add(l.with(l.kind(), replace(l.body(), target, with)));
            else out.add(s);
        }
        return new Stmt.Block(out);
    }

    // ---------------------------------------------------------------- substitution

    /** A loop variable of {@code extent} iterations whose name no variable of the kernel has. */
    private Variable fresh(String base, long extent) {
        String name = base;
        for (int k = 2; names.contains(name); k++) name = base + k;
        names.add(name);
        return new Variable(name, 0, extent - 1);
    }

    /**
     * {@code b} with every DEFINE_VAR whose argument (a {@link Variable} or register {@link Slot}) is a
     * key of {@code map} replaced by its value, in expressions, in the registers statements define and
     * accumulate, and in loop headers (a variable's replacement must then be another variable).
     */
    public static Stmt.Block substitute(Stmt.Block b, Map<Object, UOp> map) {
        PatternMatcher pm = substitution(map);
        Map<UOp, UOp> memo = new HashMap<>();
        return new Substitution(map, e -> memo.computeIfAbsent(e, x -> Symbolic.simplify(GraphRewriter.substitute(x, pm)))).block(b);
    }

    /** {@code e} with the DEFINE_VARs of {@code map}'s keys replaced, simplified. */
    public static UOp substitute(UOp e, Map<Object, UOp> map) {
        return Symbolic.simplify(GraphRewriter.substitute(e, substitution(map)));
    }

    private static PatternMatcher substitution(Map<Object, UOp> map) {
        return new PatternMatcher(List.of(rule(
                UPat.anyOf(EnumSet.of(Op.DEFINE_VAR)).where(u -> map.containsKey(u.arg())).named("v"),
                m -> map.get(m.get("v").arg()))));
    }

    private record Substitution(Map<Object, UOp> map, java.util.function.UnaryOperator<UOp> expr) {
        Stmt.Block block(Stmt.Block b) {
            List<Stmt> out = new ArrayList<>();
            for (Stmt s : b.body()) out.add(stmt(s));
            return new Stmt.Block(out);
        }

        Stmt stmt(Stmt s) {
            return switch (s) {
                case Stmt.Block b -> block(b);
                case Stmt.Loop l -> new Stmt.Loop(map.containsKey(l.index()) ? map.get(l.index()).variableArg() : l.index(), l.kind(),
                        block(l.body()), l.limit(), l.limitStep());
                case Stmt.Define d -> new Stmt.Define(slot(d.register()), expr.apply(d.init()));
                case Stmt.Accumulate a -> new Stmt.Accumulate(slot(a.register()), a.kind(), expr.apply(a.value()));
                case Stmt.Store st -> new Stmt.Store(st.param(), expr.apply(st.index()), expr.apply(st.value()),
                        st.gate() == null ? null : expr.apply(st.gate()));
            };
        }

        Slot slot(Slot r) { return map.containsKey(r) ? map.get(r).slotArg() : r; }
    }
}
