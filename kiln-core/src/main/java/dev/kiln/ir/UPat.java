package dev.kiln.ir;

import dev.kiln.types.DType;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * A pattern over {@link UOp} graphs: which ops, which dtypes, which sources (themselves patterns), and
 * a name under which the matched node is bound. Sources of commutative ops also match swapped.
 *
 * <pre>{@code
 * // x + 0 -> x
 * UPat.op(Op.ADD, UPat.var("x"), UPat.cvar("c")).where(b -> b.get("c").constDouble() == 0)
 * }</pre>
 */
public final class UPat {
    private final Set<Op> ops; // null: any op
    private final List<UPat> src; // null: any sources
    private final String name;
    private final Predicate<UOp> filter;

    private UPat(Set<Op> ops, List<UPat> src, String name, Predicate<UOp> filter) {
        this.ops = ops;
        this.src = src;
        this.name = name;
        this.filter = filter;
    }

    /** Any node, bound to {@code name}. */
    public static UPat var(String name) { return new UPat(null, null, name, null); }

    /** A constant, bound to {@code name}. */
    public static UPat cvar(String name) { return new UPat(EnumSet.of(Op.CONST), List.of(), name, null); }

    /** A node of {@code op} with exactly these sources. */
    public static UPat op(Op op, UPat... src) { return new UPat(EnumSet.of(op), List.of(src), null, null); }

    /** A node of any of {@code ops} with any sources. */
    public static UPat anyOf(Set<Op> ops) { return new UPat(EnumSet.copyOf(ops), null, null, null); }

    /** This pattern, binding the matched node to {@code newName}. */
    public UPat named(String newName) { return new UPat(ops, src, newName, filter); }

    /** This pattern, matching only nodes that also satisfy {@code test}. */
    public UPat where(Predicate<UOp> test) {
        return new UPat(ops, src, name, filter == null ? test : filter.and(test));
    }

    /** This pattern, matching only nodes of one of the given dtypes. */
    public UPat dtype(Set<DType> dtypes) { return where(u -> dtypes.contains(u.dtype())); }

    /** The ops this pattern can match at its root, or null for any. */
    Set<Op> rootOps() { return ops; }

    /** Matches {@code u}, returning the bindings or null. */
    public Map<String, UOp> match(UOp u) {
        Map<String, UOp> b = new HashMap<>();
        return match(u, b) ? b : null;
    }

    private boolean match(UOp u, Map<String, UOp> b) {
        if (ops != null && !ops.contains(u.op())) return false;
        if (filter != null && !filter.test(u)) return false;
        if (name != null) {
            UOp bound = b.get(name);
            if (bound != null && bound != u) return false;
        }
        if (src != null) {
            if (src.size() != u.src().size()) return false;
            if (!matchSources(u.src(), b, false)) {
                if (!(u.op().isCommutative() && src.size() == 2 && matchSources(u.src(), b, true))) return false;
            }
        }
        if (name != null) b.put(name, u);
        return true;
    }

    private boolean matchSources(List<UOp> s, Map<String, UOp> b, boolean swapped) {
        Map<String, UOp> trial = new HashMap<>(b);
        for (int i = 0; i < src.size(); i++) {
            if (!src.get(i).match(s.get(swapped ? 1 - i : i), trial)) return false;
        }
        b.putAll(trial);
        return true;
    }
}
