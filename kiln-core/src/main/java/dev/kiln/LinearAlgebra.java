package dev.kiln;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Matrix products and Einstein summation, composed from broadcasting multiply and sum. */
final class LinearAlgebra {
    private LinearAlgebra() {}

    /** NumPy {@code matmul}: 1-D operands are promoted to matrices and the added axis removed again. */
    static Tensor matmul(Tensor a, Tensor b) {
        if (a.ndim() == 0 || b.ndim() == 0) {
            throw new IllegalArgumentException("matmul: operands must have at least 1 axis, got shapes " + a.shape() + " and " + b.shape());
        }
        boolean aVec = a.ndim() == 1, bVec = b.ndim() == 1;
        Tensor x = aVec ? a.unsqueeze(0) : a, y = bVec ? b.unsqueeze(1) : b;
        int k = x.dim(-1);
        if (y.dim(-2) != k) {
            throw new IllegalArgumentException("matmul: " + a.shape() + " @ " + b.shape() + ": inner dimensions " + k + " and " + y.dim(-2) + " differ");
        }
        // the batch axes broadcast: checked on the caller's shapes, before the product below would report its own
        if (x.ndim() > 2 || y.ndim() > 2) {
            int[] xs = x.dims(), ys = y.dims();
            try {
                Tensor.broadcastShape("matmul", Shape.of(Arrays.copyOf(xs, xs.length - 2)),
                        Shape.of(Arrays.copyOf(ys, ys.length - 2)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("matmul: " + a.shape() + " @ " + b.shape() + ": batch dimensions "
                        + Arrays.toString(Arrays.copyOf(xs, xs.length - 2)) + " and " + Arrays.toString(Arrays.copyOf(ys, ys.length - 2))
                        + " do not broadcast", e);
            }
        }
        DType dt = DType.promote(a.dtype(), b.dtype());
        // (..., n, 1, k) * (..., 1, m, k) summed over k
        Tensor prod = x.cast(dt).unsqueeze(-2).mul(y.cast(dt).mT().unsqueeze(-3));
        Tensor r = prod.sum(new int[] {-1}, false).cast(dt);
        if (aVec) r = r.squeeze(-2);
        if (bVec) r = r.squeeze(-1);
        return r;
    }

    /** {@code x @ weight^T + bias} with {@code weight} of shape (out, in), as {@code torch.nn.functional.linear}. */
    static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        if (weight.ndim() != 2) throw new IllegalArgumentException("linear: weight must be 2-D (out, in), got " + weight.shape());
        if (x.ndim() == 0 || x.dim(-1) != weight.dim(1)) {
            throw new IllegalArgumentException("linear: input " + x.shape() + " must end in the " + weight.dim(1) + " features of weight "
                    + weight.shape() + " (out, in)");
        }
        Tensor y = matmul(x, weight.mT());
        if (bias != null && !broadcastsTo(bias.shape(), y.shape())) {
            throw new IllegalArgumentException("linear: bias " + bias.shape() + " must broadcast to the output " + y.shape()
                    + " (one value per output of weight " + weight.shape() + ")");
        }
        return bias == null ? y : y.add(bias);
    }

    private static boolean broadcastsTo(Shape from, Shape to) {
        try {
            return Tensor.broadcastShape("linear", to, from).equals(to);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * Einstein summation over explicit ({@code "ij,jk->ik"}) or implicit ({@code "ij,jk"}: output letters
     * are those used once, sorted) subscripts. A letter repeated within one operand takes its diagonal.
     */
    static Tensor einsum(String equation, Tensor... operands) {
        String eq = equation.replace(" ", "");
        if (eq.contains(".")) throw new IllegalArgumentException("einsum: ellipsis ('...') is not supported in '" + equation + "'");
        String[] sides = eq.split("->", -1);
        if (sides.length > 2) throw new IllegalArgumentException("einsum: more than one '->' in '" + equation + "'");
        String[] inputs = sides[0].split(",", -1);
        if (inputs.length != operands.length) {
            throw new IllegalArgumentException("einsum: '" + equation + "' names " + inputs.length + " operands, got " + operands.length);
        }
        Map<Character, Integer> sizes = new LinkedHashMap<>();
        Map<Character, Integer> uses = new LinkedHashMap<>();
        Tensor[] ops = new Tensor[operands.length];
        String[] subs = new String[operands.length];
        for (int i = 0; i < operands.length; i++) {
            String s = inputs[i];
            if (s.length() != operands[i].ndim()) {
                throw new IllegalArgumentException("einsum: operand " + i + " has shape " + operands[i].shape() + " but subscripts '" + s + "'");
            }
            for (int j = 0; j < s.length(); j++) {
                char c = s.charAt(j);
                if (!Character.isLetter(c)) throw new IllegalArgumentException("einsum: invalid subscript '" + c + "' in '" + equation + "'");
                Integer prev = sizes.putIfAbsent(c, operands[i].dim(j));
                if (prev != null && prev != operands[i].dim(j) && prev != 1 && operands[i].dim(j) != 1) {
                    throw new IllegalArgumentException("einsum: subscript '" + c + "' has size " + prev + " and " + operands[i].dim(j) + " in '" + equation + "'");
                }
                if (prev != null && prev == 1) sizes.put(c, operands[i].dim(j));
                uses.merge(c, 1, Integer::sum);
            }
            Tensor t = operands[i];
            // a letter repeated within one operand selects the diagonal
            for (int j = 0; j < s.length(); j++) {
                int k = s.indexOf(s.charAt(j), j + 1);
                if (k < 0) continue;
                int n = t.dim(j);
                Tensor eye = Tensor.eye(n).cast(DType.BOOL);
                int[] shape = new int[t.ndim()];
                Arrays.fill(shape, 1);
                shape[j] = n;
                shape[k] = n;
                t = Tensor.where(eye.reshape(shape), t, t.zerosLike()).sum(new int[] {k}, false);
                s = s.substring(0, k) + s.substring(k + 1);
                uses.merge(s.charAt(j), -1, Integer::sum);
                j--;
            }
            ops[i] = t;
            subs[i] = s;
        }
        String out;
        if (sides.length == 2) {
            out = sides[1];
            for (char c : out.toCharArray()) {
                if (!sizes.containsKey(c)) throw new IllegalArgumentException("einsum: output subscript '" + c + "' not among the inputs of '" + equation + "'");
                if (out.indexOf(c) != out.lastIndexOf(c)) throw new IllegalArgumentException("einsum: output subscript '" + c + "' repeated in '" + equation + "'");
            }
        } else {
            StringBuilder sb = new StringBuilder();
            uses.entrySet().stream().filter(e -> e.getValue() == 1).map(Map.Entry::getKey).sorted().forEach(sb::append);
            out = sb.toString();
        }
        // global letter order: output letters, then the contracted ones
        List<Character> order = new ArrayList<>();
        for (char c : out.toCharArray()) order.add(c);
        for (char c : sizes.keySet()) if (!order.contains(c)) order.add(c);
        DType dt = ops[0].dtype();
        for (Tensor t : ops) dt = DType.promote(dt, t.dtype());
        Tensor acc = null;
        for (int i = 0; i < ops.length; i++) {
            String s = subs[i];
            List<Integer> perm = new ArrayList<>();
            int[] shape = new int[order.size()];
            for (int g = 0; g < order.size(); g++) {
                int pos = s.indexOf(order.get(g));
                shape[g] = pos < 0 ? 1 : ops[i].dim(pos);
                if (pos >= 0) perm.add(pos);
            }
            Tensor t = ops[i].cast(dt).permute(perm.stream().mapToInt(Integer::intValue).toArray()).reshape(shape);
            acc = acc == null ? t : acc.mul(t);
        }
        int[] full = new int[order.size()];
        for (int g = 0; g < order.size(); g++) full[g] = sizes.get(order.get(g));
        acc = acc.broadcastTo(full);
        if (order.size() > out.length()) {
            int[] contracted = new int[order.size() - out.length()];
            for (int i = 0; i < contracted.length; i++) contracted[i] = out.length() + i;
            acc = acc.sum(contracted, false).cast(dt);
        }
        return acc;
    }

    /**
     * Determinants of the square matrices on the last two axes, by Gaussian elimination with partial
     * pivoting unrolled over the (static) size; the graph grows with the square of the size.
     */
    static Tensor det(Tensor x) {
        String op = "det";
        if (x.ndim() < 2 || x.dim(-1) != x.dim(-2)) throw new IllegalArgumentException(op + ": needs square matrices on the last two axes, got " + x.shape());
        DType out = x.dtype().isFloat() ? x.dtype() : DType.F32;
        DType ct = Normalization.computeType(out);
        int m = x.dim(-1), r = x.ndim();
        int[] batch = Arrays.copyOfRange(x.dims(), 0, r - 2);
        if (m == 0) return Tensor.ones(ct, batch).to(x.device()).cast(out);
        Tensor a = x.cast(ct);
        Tensor rows = Tensor.arange(m).cast(DType.I64).reshape(m, 1).to(x.device()); // (m, 1)
        Tensor sign = Tensor.scalar(1.0, ct).to(x.device());
        for (int k = 0; k < m; k++) {
            // pivot: the row at or below k with the largest magnitude in column k
            Tensor col = a.shrinkAxis(r - 1, k, k + 1); // (..., m, 1)
            Tensor cand = Tensor.where(rows.ge((long) k), col.abs(), Tensor.scalar(-1.0, ct));
            Tensor p = cand.argmax(r - 2, true); // (..., 1, 1)
            // swap rows k and p: row i takes row src(i)
            Tensor src = Tensor.where(rows.eq((long) k), p, Tensor.where(rows.eq(p), Tensor.scalar(k, DType.I64), rows)); // (..., m, 1)
            Tensor sel = src.eq(rows.reshape(1, m)); // (..., m, m): [i, j] row i takes row j
            a = Tensor.where(sel.unsqueeze(-1), a.unsqueeze(-3), Tensor.scalar(-0.0, ct)).sum(new int[] {-2}, false);
            sign = Tensor.where(p.ne((long) k), sign.neg(), sign);
            Tensor pivotRow = a.shrinkAxis(r - 2, k, k + 1); // (..., 1, m)
            Tensor pivot = pivotRow.shrinkAxis(r - 1, k, k + 1); // (..., 1, 1)
            Tensor colK = a.shrinkAxis(r - 1, k, k + 1);
            Tensor factor = Tensor.where(rows.gt((long) k).logicalAnd(pivot.ne(0.0)), colK.div(pivot), Tensor.scalar(0.0, ct));
            a = a.sub(factor.mul(pivotRow));
        }
        Tensor diag = Tensor.where(rows.eq(rows.reshape(1, m)), a, Tensor.scalar(0.0, ct)).sum(new int[] {-1}, false);
        return diag.prod(new int[] {-1}, false).mul(sign.reshape(batch.length == 0 ? new int[0] : batch)).cast(out);
    }
}
