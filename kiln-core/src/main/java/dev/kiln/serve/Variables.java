package dev.kiln.serve;

import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.VariableSource;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.List;

/**
 * The values a compiled graph gives its plan's variables before every run. A variable of an input's
 * symbolic axis starts at its maximum (the whole extent) until told otherwise; one a host step of the plan
 * produces ({@link dev.kiln.Tensor#hostSized}: a data-dependent count) is the plan's own, read back after each
 * run and never given; any other must be set.
 */
final class Variables {
    private final SharedGraphState shared;
    private final ExecutionPlan plan;
    private final long[] values;     // per plan variable, its value for the next runs
    private final boolean[] set;     // per plan variable, whether it has one
    private final boolean[] produced; // per plan variable, whether a step of the plan binds it while it runs

    Variables(SharedGraphState shared, ExecutionPlan plan) {
        this.shared = shared;
        this.plan = plan;
        this.values = new long[plan.variables().size()];
        this.set = new boolean[values.length];
        this.produced = new boolean[values.length];
        for (int v = 0; v < values.length; v++) {
            Variable var = plan.variables().get(v);
            produced[v] = plan.variableSource(v) instanceof VariableSource.Step;
            set[v] = produced[v];
            if (shared.extentVariables.contains(var)) {
                values[v] = var.max();
                set[v] = true;
            }
        }
    }

    /** Takes the values of {@code other} (a replica starts as its original). */
    void copyFrom(Variables other) { // produced is the plan's, the same in a replica
        System.arraycopy(other.values, 0, values, 0, values.length);
        System.arraycopy(other.set, 0, set, 0, set.length);
    }

    void set(String name, long value) {
        for (int i = 0; i < values.length; i++) {
            Variable v = plan.variables().get(i);
            if (v.name().equals(name)) {
                if (produced[i]) {
                    throw new IllegalArgumentException("setVariable: variable '" + name + "' is the extent the graph's host step "
                            + ((VariableSource.Step) plan.variableSource(i)).name() + " gives when it runs; it cannot be set");
                }
                values[i] = v.bind(value).value();
                set[i] = true;
                return;
            }
        }
        throw new IllegalArgumentException("setVariable: the graph has no variable '" + name + "'; its variables are "
                + plan.variables().stream().map(v -> v.name() + "[" + v.min() + ", " + v.max() + "]").toList());
    }

    /** Checks {@code actual} and {@code upper} against the extent variable and returns it, for the caller to set. */
    Variable checkActiveExtent(int actual, int upper) {
        Variable v = extentVariable("setActiveExtent");
        if (upper != v.max()) {
            throw new IllegalArgumentException("setActiveExtent: the graph was compiled at extent " + v.max() + " of '" + v.name()
                    + "', given upper " + upper);
        }
        if (actual < v.min() || actual > upper) {
            throw new IllegalArgumentException("setActiveExtent: actual " + actual + " is outside [" + v.min() + ", " + upper + "] of '"
                    + v.name() + "'");
        }
        return v;
    }

    /** The one variable of the inputs' symbolic axes: the axis an active extent applies to. */
    Variable extentVariable(String op) {
        if (shared.extentVariables.size() != 1) {
            throw new IllegalStateException(op + ": " + (shared.extentVariables.isEmpty()
                    ? "the graph's inputs have no symbolic axis; declare the bucketed axis with a Variable (Shape.symbolic) so kernels can stop at the active extent"
                    : "the graph's inputs have several symbolic axes " + shared.extentVariables.stream().map(Variable::name).toList()
                            + "; give each its value with setVariable"));
        }
        return shared.extentVariables.getFirst();
    }

    /** Fails unless every variable has a value. */
    void checkAllSet(String op) {
        for (boolean s : set) {
            if (s) continue;
            List<String> missing = new ArrayList<>();
            for (int i = 0; i < set.length; i++) if (!set[i]) missing.add(plan.variables().get(i).name());
            throw new IllegalStateException(op + ": variables without a value: " + missing + " (setVariable before running)");
        }
    }

    /**
     * The value the plan's variable {@code index} ({@code v}) has for the next runs, or, for one a step produces, had in
     * the last run; -1 (a variable no kernel reads), or one not set, stands for {@code v}'s maximum.
     */
    long value(int index, Variable v) {
        if (index >= 0 && produced[index]) return plan.variableValue(index);
        return index >= 0 && set[index] ? values[index] : v.max();
    }

    /** Whether the plan's variable {@code index} is bound by one of its steps while it runs. */
    boolean isProduced(int index) { return index >= 0 && produced[index]; }

    /** Gives the plan the values for its next run. */
    void bind() {
        for (int i = 0; i < values.length; i++) if (!produced[i]) plan.setVariable(i, values[i]);
    }
}
