package dev.kiln.ir;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;

/**
 * Bounds [vmin, vmax] of integer and boolean scalar nodes over every value their variables may take.
 * The bounds are sound (every reachable value lies within them) but not always tight; when arithmetic
 * could overflow the dtype, the bounds widen to the dtype's range.
 */
final class RangeAnalysis {
    private RangeAnalysis() {}

    static long[] bounds(UOp u) {
        DType dt = u.dtype();
        if (!(dt.isInt() || dt.isBool())) return new long[] {Long.MIN_VALUE, Long.MAX_VALUE};
        long[] full = {dt.minInt(), dt.maxInt()};
        long[] r = compute(u);
        if (r == null || r[0] < full[0] || r[1] > full[1] || r[0] > r[1]) return full;
        return r;
    }

    private static long[] compute(UOp u) {
        return switch (u.op()) {
            case CONST -> new long[] {u.constLong(), u.constLong()};
            case DEFINE_VAR -> u.arg() instanceof Variable v ? new long[] {v.min(), v.max()} : null;
            case CAST -> {
                UOp x = u.src(0);
                yield x.dtype().isInt() || x.dtype().isBool() ? new long[] {x.vmin(), x.vmax()} : null;
            }
            // the range of what is checked, not the valid range: an index out of range still flows on (the run then fails)
            case CHECK -> new long[] {u.src(0).vmin(), u.src(0).vmax()};
            case NEG -> u.src(0).vmin() == Long.MIN_VALUE ? null : new long[] {-u.src(0).vmax(), -u.src(0).vmin()};
            case ADD -> {
                try {
                    yield new long[] {Math.addExact(u.src(0).vmin(), u.src(1).vmin()),
                            Math.addExact(u.src(0).vmax(), u.src(1).vmax())};
                } catch (ArithmeticException overflow) {
                    yield null;
                }
            }
            case MUL -> corners(u, Math::multiplyExact);
            case FLOORDIV -> divisorSignFixed(u.src(1)) ? corners(u, Math::floorDiv) : null;
            case DIV -> divisorSignFixed(u.src(1)) ? corners(u, (a, b) -> a / b) : null;
            case FLOORMOD -> floorMod(u.src(0), u.src(1));
            case MOD -> truncMod(u.src(0), u.src(1));
            case MAX -> new long[] {Math.max(u.src(0).vmin(), u.src(1).vmin()), Math.max(u.src(0).vmax(), u.src(1).vmax())};
            case CMPLT -> decide(u.src(0).vmax() < u.src(1).vmin(), u.src(0).vmin() >= u.src(1).vmax());
            case CMPEQ -> decide(isSingle(u.src(0)) && isSingle(u.src(1)) && u.src(0).vmin() == u.src(1).vmin(),
                    disjoint(u.src(0), u.src(1)));
            case CMPNE -> decide(disjoint(u.src(0), u.src(1)),
                    isSingle(u.src(0)) && isSingle(u.src(1)) && u.src(0).vmin() == u.src(1).vmin());
            case WHERE -> {
                UOp c = u.src(0), t = u.src(1), f = u.src(2);
                if (c.vmin() == 1) yield new long[] {t.vmin(), t.vmax()};
                if (c.vmax() == 0) yield new long[] {f.vmin(), f.vmax()};
                yield new long[] {Math.min(t.vmin(), f.vmin()), Math.max(t.vmax(), f.vmax())};
            }
            case AND -> u.dtype().isBool() ? new long[] {u.src(0).vmin() & u.src(1).vmin(), u.src(0).vmax() & u.src(1).vmax()}
                    : u.src(0).vmin() >= 0 && u.src(1).vmin() >= 0
                    ? new long[] {0, Math.min(u.src(0).vmax(), u.src(1).vmax())} : null;
            case OR -> u.dtype().isBool() ? new long[] {u.src(0).vmin() | u.src(1).vmin(), u.src(0).vmax() | u.src(1).vmax()} : null;
            default -> null;
        };
    }

    private interface LongOp { long apply(long a, long b); }

    private static long[] corners(UOp u, LongOp f) {
        UOp a = u.src(0), b = u.src(1);
        long lo = Long.MAX_VALUE, hi = Long.MIN_VALUE;
        try {
            for (long x : new long[] {a.vmin(), a.vmax()}) {
                for (long y : new long[] {b.vmin(), b.vmax()}) {
                    long v = f.apply(x, y);
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
            }
        } catch (ArithmeticException overflow) {
            return null;
        }
        return new long[] {lo, hi};
    }

    private static boolean divisorSignFixed(UOp d) { return d.vmin() > 0 || d.vmax() < 0; }

    private static long[] floorMod(UOp a, UOp b) {
        if (b.vmin() <= 0) return null;
        if (isSingle(b)) {
            long c = b.vmin();
            if (Math.floorDiv(a.vmin(), c) == Math.floorDiv(a.vmax(), c)) {
                return new long[] {Math.floorMod(a.vmin(), c), Math.floorMod(a.vmax(), c)};
            }
        }
        long hi = b.vmax() - 1;
        return new long[] {0, a.vmin() >= 0 ? Math.min(hi, a.vmax()) : hi};
    }

    private static long[] truncMod(UOp a, UOp b) {
        if (b.vmin() <= 0) return null;
        long m = b.vmax() - 1;
        if (a.vmin() >= 0) return floorMod(a, b);
        if (a.vmax() <= 0) return new long[] {Math.max(-m, a.vmin()), 0};
        return new long[] {Math.max(-m, a.vmin()), Math.min(m, a.vmax())};
    }

    private static boolean isSingle(UOp u) { return u.vmin() == u.vmax(); }

    private static boolean disjoint(UOp a, UOp b) { return a.vmax() < b.vmin() || b.vmax() < a.vmin(); }

    private static long[] decide(boolean alwaysTrue, boolean alwaysFalse) {
        return alwaysTrue ? new long[] {1, 1} : alwaysFalse ? new long[] {0, 0} : new long[] {0, 1};
    }
}
