package dev.kiln.ir;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one rewrite engine, in its two shapes. {@link #rewrite} rewrites a graph bottom-up to a fixed point:
 * every node's sources are rewritten first, then the matcher's rules are applied to the node until none
 * fires (the simplifier, the lowering rules). {@link #substitute} is one top-down pass that replaces the
 * nodes a rule matches and rebuilds everything above them (inputs by placeholders, variables by
 * expressions, graph placeholders by buffers). Results are memoised per node, so shared subgraphs are
 * visited once.
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

    /**
     * {@code roots} with every node that a rule of {@code matcher} matches replaced by the rule's result, in
     * one pass from the roots down: a replaced node's sources are not visited, and its replacement is taken as
     * it is (not rewritten again); every other node is rebuilt on its sources' substitutes, so nodes above no
     * replacement stay the same (interned) nodes.
     */
    public static List<UOp> substitute(List<UOp> roots, PatternMatcher matcher) {
        Map<UOp, UOp> done = new IdentityHashMap<>();
        Set<UOp> expanded = Collections.newSetFromMap(new IdentityHashMap<>());
        Deque<UOp> stack = new ArrayDeque<>(roots);
        while (!stack.isEmpty()) { // iterative: a graph can be deeper than the thread's stack
            UOp u = stack.peek();
            if (done.containsKey(u)) {
                stack.pop();
            } else if (expanded.add(u)) {
                UOp replacement = matcher.rewrite(u);
                if (replacement != null) {
                    done.put(u, replacement);
                    stack.pop();
                } else {
                    for (UOp s : u.src()) if (!done.containsKey(s)) stack.push(s);
                }
            } else { // every source is done: in a DAG nothing above u on the stack can be u again before then
                stack.pop();
                List<UOp> src = new ArrayList<>(u.src().size());
                for (UOp s : u.src()) src.add(done.get(s));
                done.put(u, u.withSrc(src));
            }
        }
        List<UOp> out = new ArrayList<>(roots.size());
        for (UOp r : roots) out.add(done.get(r));
        return out;
    }

    /** {@link #substitute(List, PatternMatcher)} of one root. */
    public static UOp substitute(UOp root, PatternMatcher matcher) { return substitute(List.of(root), matcher).getFirst(); }

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
