package dev.kiln.runtime;

/**
 * A request for memory larger than the {@link MemoryBudget}: a tensor, a buffer or a whole plan whose bytes
 * were known before anything was allocated, and refused then. Nothing was allocated. The one-line message
 * gives what was asked for, both figures (bytes needed, bytes of the budget) and how to change the budget.
 * A size that a model file or a caller chose is bad input, hence an {@link IllegalArgumentException}.
 */
public final class MemoryBudgetException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final long neededBytes;
    private final long budgetBytes;

    /**
     * A refusal of {@code neededBytes} for {@code what} (e.g. "execution plan on CPU") against a budget of
     * {@code budgetBytes}, with {@code detail} (where the budget comes from) appended.
     */
    MemoryBudgetException(String what, long neededBytes, long budgetBytes, String detail) {
        super(what + " needs " + MemoryBudget.format(neededBytes) + ", over the memory budget of "
                + MemoryBudget.format(budgetBytes) + " (" + detail + ")");
        this.neededBytes = neededBytes;
        this.budgetBytes = budgetBytes;
    }

    /** Bytes the refused request needed. */
    public long neededBytes() { return neededBytes; }

    /** Bytes of the budget it was refused against. */
    public long budgetBytes() { return budgetBytes; }
}
