package dev.kiln.codegen;

import dev.kiln.types.Variable;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.util.List;

/**
 * The statements of a lowered kernel. Values and indices are scalar {@link UOp} expressions over
 * loop variables ({@link Variable}s with the loop's bounds, so range analysis knows them), parameters
 * and registers ({@link Slot}s).
 */
public sealed interface Stmt {
    /** Statements in order. */
    record Block(List<Stmt> body) implements Stmt {
        public Block { body = List.copyOf(body); }
    }

    /**
     * {@code for (index = 0; index <= index.max(); index++) body}. {@code kind} says how a backend may run
     * the iterations (they are independent unless the kind is {@link LoopKind#REDUCE}).
     *
     * <p>A loop over a symbolic axis has a {@code limit}: a variable of the kernel at whose value the loop
     * stops, {@code for (index = 0; index < min(ceil(limit / limitStep), extent); index++)}. Null for a loop
     * that always runs its whole extent. {@code limitStep} is 1 for a loop over the axis itself; a loop
     * split into groups of {@code a} iterations (the outer loop of UPCAST or GROUP) has step {@code a} and
     * runs every group that holds an iteration below the limit: the iterations of its last group at or past
     * the limit are gated off in the body by the split ({@link Optimizer}), never by this header, so a
     * backend that ran the loop further would still compute the same values, only more slowly.
     */
    record Loop(Variable index, LoopKind kind, Block body, Variable limit, int limitStep) implements Stmt {
        public Loop {
            if (limitStep < 1 || limit == null && limitStep != 1) {
                throw new IllegalArgumentException("loop " + index.name() + ": limit step " + limitStep + (limit == null ? " without a limit" : ""));
            }
            if (limit != null && Math.ceilDiv(limit.max(), limitStep) > index.max() + 1) {
                throw new IllegalArgumentException("loop " + index.name() + " of extent " + (index.max() + 1) + " has limit "
                        + limit.name() + (limitStep == 1 ? "" : " / " + limitStep) + " up to " + Math.ceilDiv(limit.max(), limitStep));
            }
        }

        /** A loop over its whole extent. */
        public Loop(Variable index, LoopKind kind, Block body) { this(index, kind, body, null, 1); }

        /** A loop that stops at {@code limit} (if not null). */
        public Loop(Variable index, LoopKind kind, Block body, Variable limit) { this(index, kind, body, limit, 1); }

        /** Iteration count (the most iterations, for a loop with a limit). */
        public long extent() { return index.max() + 1; }

        /** The iterations it runs when its limit's variable is {@code limitValue} (its extent without a limit). */
        public long stop(long limitValue) {
            return limit == null ? extent() : Math.max(0, Math.min(extent(), Math.ceilDiv(limitValue, limitStep)));
        }

        /** This loop with another kind and body, keeping its index and limit. */
        public Loop with(LoopKind kind, Block body) { return new Loop(index, kind, body, limit, limitStep); }
    }

    /** Declares {@code register} with an initial value. */
    record Define(Slot register, UOp init) implements Stmt {}

    /** {@code register = combine(register, value)} for a reduction. */
    record Accumulate(Slot register, ReduceArg.Kind kind, UOp value) implements Stmt {}

    /**
     * {@code if (gate) param[index] = value}: the gate (a bool expression, null for none) is false only in the lanes
     * of a split loop past its symbolic size ({@link Loop#limitStep}), which must not write; what such a lane
     * computes is never stored.
     */
    record Store(Slot param, UOp index, UOp value, UOp gate) implements Stmt {
        public Store {
            if (gate != null && !gate.dtype().isBool()) throw new IllegalArgumentException("store into " + param.name() + " gated by a " + gate.dtype());
        }

        /** {@code param[index] = value}. */
        public Store(Slot param, UOp index, UOp value) { this(param, index, value, null); }
    }

    /** How a loop's iterations may run (see {@link Optimizer} for the actions that make each kind). */
    enum LoopKind {
        /** Output loop: iterations independent, in any order. */
        GLOBAL,
        /**
         * Output loop whose iterations the runtime splits across worker threads (at most one per kernel,
         * its outermost statement); {@link KernelProgram#workers()} is the suggested number of workers.
         */
        THREAD,
        /** Reduction loop: iterations update registers in order. */
        REDUCE,
        /**
         * Output loop of a small constant extent with independent iterations, to be expanded by the
         * renderer into one copy of the body per iteration or into vector lanes. Nothing an iteration
         * writes is read by another, so the copies may be interleaved (one register per lane, each
         * statement of the body for all lanes at once). The one exception is the lane loop of a GROUP
         * ({@link Optimizer}): its iterations also accumulate into registers defined outside it, which
         * nothing in the loop reads; every way of running the lanes makes those updates in lane order.
         */
        UPCAST,
        /**
         * Loop of a small constant extent whose iterations the renderer expands in order; inside a
         * reduction they may depend on each other, so they must stay in order.
         */
        UNROLL
    }
}
