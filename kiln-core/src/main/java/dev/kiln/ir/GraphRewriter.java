package dev.kiln.ir;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Rewrites a graph bottom-up to a fixed point: every node's sources are rewritten first, then the
 * matcher's rules are applied to the node until none fires. Results are memoised per node, so shared
 * subgraphs are rewritten once.
 */
public final class GraphRewriter {
    private static final int MAX_STEPS = 10_000;

    private final PatternMatcher matcher;
    private final Map<UOp, UOp> done = new IdentityHashMap<>();

    private GraphRewriter(PatternMatcher matcher) { this.matcher = matcher; }

    /** {@code root} rewritten with {@code matcher} until no rule applies anywhere. */
    public static UOp rewrite(UOp root, PatternMatcher matcher) {
        GraphRewriter g = new GraphRewriter(matcher);
        for (UOp u : root.toposort()) g.visit(u); // bottom-up, so recursion below stays shallow
        return g.visit(root);
    }

    private UOp visit(UOp u) {
        UOp cached = done.get(u);
        if (cached != null) return cached;
        UOp current = u;
        for (int step = 0; ; step++) {
            if (step > MAX_STEPS) throw new IllegalStateException("rewrite did not converge at " + u.op());
            List<UOp> src = new ArrayList<>(current.src().size());
            for (UOp s : current.src()) src.add(visit(s));
            current = current.withSrc(src);
            UOp next = matcher.rewrite(current);
            if (next == null) break;
            current = next;
        }
        done.put(u, current);
        done.put(current, current);
        return current;
    }
}
