package dev.kiln.ir;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * An ordered list of rewrite rules: a {@link UPat} and a function of its bindings that returns the
 * replacement node, or null to decline. The first rule that matches and does not decline wins.
 */
public final class PatternMatcher {
    /** One rule. */
    public record Rule(UPat pattern, Function<Map<String, UOp>, UOp> rewrite) {}

    private final List<Rule> rules;
    private final Map<Op, List<Rule>> byOp = new EnumMap<>(Op.class);

    public PatternMatcher(List<Rule> rules) {
        this.rules = List.copyOf(rules);
        for (Op op : Op.values()) byOp.put(op, new ArrayList<>());
        for (Rule r : this.rules) {
            for (Op op : r.pattern().rootOps() == null ? List.of(Op.values()) : r.pattern().rootOps()) byOp.get(op).add(r);
        }
    }

    /** Rule shorthand. */
    public static Rule rule(UPat pattern, Function<Map<String, UOp>, UOp> rewrite) { return new Rule(pattern, rewrite); }

    /** A matcher that replaces exactly the keys of {@code nodes} (compared by identity) by their values. */
    public static PatternMatcher replacing(Map<UOp, UOp> nodes) {
        return new PatternMatcher(List.of(rule(UPat.var("u").where(nodes::containsKey), m -> nodes.get(m.get("u")))));
    }

    /** A matcher with this matcher's rules followed by {@code other}'s. */
    public PatternMatcher plus(PatternMatcher other) {
        List<Rule> all = new ArrayList<>(rules);
        all.addAll(other.rules);
        return new PatternMatcher(all);
    }

    /** The first rule's replacement for {@code u}, or null if no rule applies. */
    public UOp rewrite(UOp u) {
        for (Rule r : byOp.get(u.op())) {
            Map<String, UOp> b = r.pattern().match(u);
            if (b != null) {
                UOp out = r.rewrite().apply(b);
                if (out != null && out != u) return out;
            }
        }
        return null;
    }
}
