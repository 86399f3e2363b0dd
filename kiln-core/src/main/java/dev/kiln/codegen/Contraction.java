package dev.kiln.codegen;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A kernel recognised as a contraction of two strided, possibly gated, views of its buffers:
 * <pre>
 *   C[batch, m, n] = sum over k of A[batch, m, k] * B[batch, k, n]
 * </pre>
 * where every index is a multi-index over loop variables (the kernel's output and reduction loops). Matmul in
 * every layout, batched matmul (attention), linear layers and convolutions (their padding as gates, their
 * windows as affine indices: an implicit im2col) all have this form. A device may run it as a packed,
 * cache-blocked GEMM instead of the kernel's loops ({@link ContractionMatcher} finds it).
 *
 * <p>Variables are numbered {@code 0..vars().size()-1}; each has a {@link Role}. An operand's element for a
 * point of the variables is {@code buffer[param][offset + sum(strides[v] * v)]} where every gate holds, and
 * 0 where one does not (then the buffer is not read: the address may be out of bounds).
 *
 * @param vars the loop variables, each with its role and extent
 * @param a    the operand indexed by batch, M and K variables (its N strides are 0)
 * @param b    the operand indexed by batch, K and N variables (its M strides are 0)
 * @param c    where the sums go: parameter 0, indexed by batch, M and N variables (K strides 0, no gates)
 */
public record Contraction(List<Var> vars, Operand a, Operand b, Operand c) {
    public Contraction {
        vars = List.copyOf(vars);
        Objects.requireNonNull(a, "a");
        Objects.requireNonNull(b, "b");
        Objects.requireNonNull(c, "c");
        for (Operand o : List.of(a, b, c)) {
            if (o.strides().length != vars.size()) throw new IllegalArgumentException("operand of parameter " + o.param() + " has "
                    + o.strides().length + " strides for " + vars.size() + " variables");
            for (Gate g : o.gates()) {
                if (g.coeffs().length != vars.size()) throw new IllegalArgumentException("gate has " + g.coeffs().length
                        + " coefficients for " + vars.size() + " variables");
            }
        }
        for (int v = 0; v < vars.size(); v++) {
            Role r = vars.get(v).role();
            if (r == Role.N && a.usesVar(v) || r == Role.M && b.usesVar(v) || r == Role.K && c.usesVar(v)) {
                throw new IllegalArgumentException("variable " + vars.get(v).name() + " (" + r + ") indexes an operand it cannot");
            }
        }
        if (c.param() != 0 || !c.gates().isEmpty()) throw new IllegalArgumentException("the result is parameter 0, ungated");
    }

    /** What a variable ranges over in the contraction. */
    public enum Role {
        /** Indexes A, B and C alike: one independent GEMM per value (attention heads, groups). */
        BATCH,
        /** Rows of A and C. */
        M,
        /** Columns of B and C. */
        N,
        /** The reduction: columns of A, rows of B. */
        K
    }

    /**
     * A loop variable: {@code 0 <= v < extent}.
     *
     * @param limit index into the kernel's variable values ({@code long[] vars} at run time) of the symbolic
     *              size at which this variable's loop stops ({@code v < min(extent, vars[limit])}), or -1 for a
     *              loop that always runs its whole extent
     */
    public record Var(String name, Role role, long extent, int limit) {
        public Var {
            if (extent < 1) throw new IllegalArgumentException("variable " + name + " has extent " + extent);
        }

        /** Its extent at run time. */
        public long extent(long[] values) { return limit < 0 ? extent : Math.min(extent, values[limit]); }
    }

    /**
     * {@code lo <= sum(coeffs[v] * v) < hi}: one condition under which an operand is read.
     */
    public record Gate(long[] coeffs, long lo, long hi) {
        public Gate { coeffs = coeffs.clone(); }

        @Override
        public long[] coeffs() { return coeffs.clone(); }

        public long coeff(int v) { return coeffs[v]; }

        @Override
        public boolean equals(Object o) {
            return o instanceof Gate g && Arrays.equals(coeffs, g.coeffs) && lo == g.lo && hi == g.hi;
        }

        @Override
        public int hashCode() { return Objects.hash(Arrays.hashCode(coeffs), lo, hi); }

        @Override
        public String toString() { return lo + " <= " + Arrays.toString(coeffs) + " < " + hi; }
    }

    /**
     * A view of kernel parameter {@code param}: element {@code offset + sum(strides[v] * v)}, 0 where a gate fails.
     */
    public record Operand(int param, long offset, long[] strides, List<Gate> gates) {
        public Operand {
            strides = strides.clone();
            gates = List.copyOf(gates);
        }

        @Override
        public long[] strides() { return strides.clone(); }

        public long stride(int v) { return strides[v]; }

        /** Whether variable {@code v} moves the element read or a gate. */
        public boolean usesVar(int v) {
            if (strides[v] != 0) return true;
            for (Gate g : gates) if (g.coeff(v) != 0) return true;
            return false;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Operand x && param == x.param && offset == x.offset && Arrays.equals(strides, x.strides)
                    && gates.equals(x.gates);
        }

        @Override
        public int hashCode() { return Objects.hash(param, offset, Arrays.hashCode(strides), gates); }

        @Override
        public String toString() {
            return "p" + param + "[" + offset + " + " + Arrays.toString(strides) + "]" + (gates.isEmpty() ? "" : " if " + gates);
        }
    }

    /** Product of the extents of the variables with {@code role}. */
    public long extent(Role role) {
        long n = 1;
        for (Var v : vars) if (v.role() == role) n *= v.extent();
        return n;
    }

    /** Multiply-adds of one run at full extents. */
    public long multiplyAdds() { return extent(Role.BATCH) * extent(Role.M) * extent(Role.N) * extent(Role.K); }
}
