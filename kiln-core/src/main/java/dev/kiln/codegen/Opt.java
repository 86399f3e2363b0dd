package dev.kiln.codegen;

/**
 * One optimisation action on a kernel's loops, applied by {@link Optimizer#apply}. Each names an axis:
 * an index into {@link Optimizer#axes(KernelProgram)} of the program the action is applied to (the
 * loops in the order their headers appear in the text, skipping UPCAST and UNROLL loops). Every
 * action keeps the kernel's result bit for bit, except GROUP on a float reduction, which changes the
 * order of the float operations.
 */
public sealed interface Opt {
    /** The axis the action applies to. */
    int axis();

    /**
     * The action's name in messages: {@code UPCAST}, {@code UPCAST_REMAINDER}, {@code UPCAST_OVERLAP}, {@code SPLIT}, {@code UNROLL}, {@code TILE},
     * {@code GROUP}, {@code THREAD}.
     */
    String kind();

    /** The action's amount: the split factor, tile size or number of workers. */
    int amount();

    /** {@code KIND(axis=a, amount=n)}, as messages name the action. */
    default String describe() { return kind() + "(axis=" + axis() + ", amount=" + amount() + ")"; }

    /**
     * Splits an output loop {@code i} (extent n) into {@code i_o} (n / amount) in place and an
     * {@link Stmt.LoopKind#UPCAST} loop {@code i_up} (amount) moved innermost among the output loops,
     * so the body computes {@code amount} neighbouring outputs at once (vector lanes when the stores are
     * contiguous in {@code i}). {@code i = i_o * amount + i_up}.
     */
    record Upcast(int axis, int amount) implements Opt {
        @Override
        public String kind() { return "UPCAST"; }
    }

    /**
     * UPCAST of an innermost output loop {@code i} (extent n) that {@code amount} does not divide: the whole
     * multiples as {@code i_o} (n / amount) around an {@link Stmt.LoopKind#UPCAST} loop {@code i_up} (amount),
     * then a loop {@code i_r} of the same kind over the {@code n % amount} iterations left, one at a time
     * ({@code i = i_o * amount + i_up}, then {@code i = n - n % amount + i_r}). A row of 55 becomes three
     * 16-lane vectors and 7 single iterations instead of 55 single iterations.
     */
    record UpcastRemainder(int axis, int amount) implements Opt {
        @Override
        public String kind() { return "UPCAST_REMAINDER"; }
    }

    /**
     * UPCAST of an innermost output loop {@code i} (extent n) that {@code amount} does not divide, with no
     * single iterations: the whole multiples as {@code i_o} (n / amount) around an {@link Stmt.LoopKind#UPCAST}
     * loop {@code i_up} (amount), then one more UPCAST loop {@code i_last} (amount) over the last {@code amount}
     * iterations ({@code i = n - amount + i_last}), which repeats some of the group before it. Only for a kernel
     * that reads no buffer it stores into, so an iteration run twice stores the same values: a row of 55 becomes
     * four 16-lane vectors.
     */
    record UpcastOverlap(int axis, int amount) implements Opt {
        @Override
        public String kind() { return "UPCAST_OVERLAP"; }
    }

    /**
     * Splits an innermost output loop {@code i} (extent n) at {@code at}: {@code i_a} over the first {@code at}
     * iterations, then {@code i_b} over the {@code n - at} left ({@code i = i_b + at}), each a loop of the same
     * kind. What holds on only one part folds there: a padding gate true for every interior column disappears
     * from the interior loop, which can then be vector lanes (see {@link Heuristics}).
     */
    record Split(int axis, int at) implements Opt {
        @Override
        public String kind() { return "SPLIT"; }

        @Override
        public int amount() { return at; }
    }

    /**
     * Splits a reduce loop {@code r} (extent n) into {@code r_o} (n / amount) and, directly inside it,
     * an {@link Stmt.LoopKind#UNROLL} loop {@code r_ur} (amount) that the renderer expands in order:
     * the accumulation order is unchanged.
     */
    record Unroll(int axis, int amount) implements Opt {
        @Override
        public String kind() { return "UNROLL"; }
    }

    /**
     * LOCAL: splits an output loop {@code i} (extent n) into tiles: {@code i_o} (n / size) in place
     * and {@code i_t} (size), a GLOBAL loop moved innermost among the GLOBAL loops (outside any UPCAST
     * loops), so consecutive iterations stay within one tile of {@code i}. Tiling two loops in nesting
     * order gives the classic blocked nest {@code i_o, j_o, i_t, j_t}.
     */
    record Tile(int axis, int size) implements Opt {
        @Override
        public String kind() { return "TILE"; }

        @Override
        public int amount() { return size; }
    }

    /**
     * Splits a reduce loop {@code r} (extent n) into {@code amount} interleaved partial reductions:
     * lane {@code l} accumulates the elements {@code r = r_o * amount + l} into its own register, the
     * loop {@code r_o} (n / amount, rounded up) runs the lanes' bodies one after another, and the lanes are
     * combined into the original register after the loop. Where {@code amount} does not divide n, the last
     * group's lanes past n are masked off (they read nothing and add the reduction's identity), as past a
     * symbolic size. Independent accumulators give instruction-level
     * parallelism and vectorisable reductions; float sums and products round differently.
     */
    record Group(int axis, int amount) implements Opt {
        @Override
        public String kind() { return "GROUP"; }
    }

    /**
     * Marks the kernel's outermost loop (axis 0, a GLOBAL loop that is the kernel's only top-level
     * statement) as {@link Stmt.LoopKind#THREAD}: the runtime splits its iterations across
     * {@code workers} threads ({@link KernelProgram#workers()}). At most once per kernel.
     */
    record Thread(int axis, int workers) implements Opt {
        @Override
        public String kind() { return "THREAD"; }

        @Override
        public int amount() { return workers; }
    }
}
