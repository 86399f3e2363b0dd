package dev.kiln.ir;

import dev.kiln.types.Variable;

import java.util.IdentityHashMap;
import java.util.Map;

/** A direct evaluator of scalar integer and bool IR (index math) with {@link Alu}'s semantics. */
final class Eval {
    private Eval() {}

    /** The value of every node reachable from {@code root} for the given variable values. */
    static Map<UOp, Long> all(UOp root, Map<Variable, Long> env) {
        Map<UOp, Long> v = new IdentityHashMap<>();
        for (UOp u : root.toposort()) v.put(u, node(u, v, env));
        return v;
    }

    static long value(UOp root, Map<Variable, Long> env) { return all(root, env).get(root); }

    private static long node(UOp u, Map<UOp, Long> v, Map<Variable, Long> env) {
        return switch (u.op()) {
            case CONST -> u.constLong();
            case DEFINE_VAR -> {
                Long x = env.get((Variable) u.arg());
                if (x == null) throw new IllegalArgumentException("no value for " + u.arg());
                yield x;
            }
            case CAST -> Alu.wrap(u.dtype(), v.get(u.src(0)));
            case WHERE -> v.get(u.src(0)) != 0 ? v.get(u.src(1)) : v.get(u.src(2));
            default -> switch (u.op().group()) {
                case UNARY -> Alu.unary(u.op(), u.dtype(), v.get(u.src(0)));
                case BINARY -> Alu.binary(u.op(), u.src(0).dtype(), v.get(u.src(0)), v.get(u.src(1)));
                default -> throw new IllegalArgumentException("cannot evaluate " + u.op());
            };
        };
    }
}
