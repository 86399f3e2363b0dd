package dev.kiln.ir;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.Arrays;
import java.util.List;

/** Computes and checks the result shape of a node when it is built. */
final class ShapeInference {
    private ShapeInference() {}

    static Shape infer(Op op, DType dtype, Object arg, List<UOp> src) {
        return switch (op.group()) {
            case UNARY -> unary(op, dtype, arg, src);
            case BINARY -> binary(op, dtype, src);
            case TERNARY -> ternary(op, dtype, src);
            case REDUCE -> reduce(dtype, arg, src);
            case MOVEMENT -> movement(op, arg, src);
            case BUFFER -> buffer(op, dtype, arg, src);
        };
    }

    private static void arity(Op op, List<UOp> src, int n) {
        if (src.size() != n) throw new IllegalArgumentException(op + " takes " + n + " sources, got " + src.size());
    }

    private static Shape unary(Op op, DType dtype, Object arg, List<UOp> src) {
        if (op == Op.CHECK) return check(dtype, arg, src);
        arity(op, src, 1);
        UOp x = src.getFirst();
        if (op == Op.BITCAST && x.dtype().itemSize() != dtype.itemSize()) {
            throw new IllegalArgumentException("BITCAST from " + x.dtype() + " to " + dtype
                    + " needs equal item sizes, got " + x.dtype().itemSize() + " and " + dtype.itemSize());
        }
        if (op != Op.CAST && op != Op.BITCAST && x.dtype() != dtype) {
            throw new IllegalArgumentException(op + " of " + x.dtype() + " cannot produce " + dtype);
        }
        return x.shape();
    }

    /** An integer index and the i64 size of its axis, with an optional bool gate (kernel level), all of one shape. */
    private static Shape check(DType dtype, Object arg, List<UOp> src) {
        if (src.size() != 2 && src.size() != 3) throw new IllegalArgumentException("CHECK takes an index, a size and an optional gate, got " + src.size() + " sources");
        if (!(arg instanceof IndexCheck)) throw new IllegalArgumentException("CHECK needs an IndexCheck argument, got " + arg);
        UOp x = src.getFirst();
        if (!x.dtype().isInt() || x.dtype() != dtype) throw new IllegalArgumentException("CHECK of " + x.dtype() + " cannot produce " + dtype + "; it checks integer indices");
        for (int i = 1; i < src.size(); i++) {
            DType want = i == 1 ? DType.I64 : DType.BOOL;
            if (src.get(i).dtype() != want || !src.get(i).shape().equals(x.shape())) {
                throw new IllegalArgumentException("CHECK " + (i == 1 ? "size" : "gate") + " must be " + want + " of the index's shape " + x.shape()
                        + ", got " + src.get(i).dtype() + src.get(i).shape());
            }
        }
        return x.shape();
    }

    private static Shape binary(Op op, DType dtype, List<UOp> src) {
        arity(op, src, 2);
        UOp a = src.get(0), b = src.get(1);
        if (!a.shape().equals(b.shape())) {
            throw new IllegalArgumentException(op + " operands have shapes " + a.shape() + " and " + b.shape()
                    + "; the front end must broadcast them first");
        }
        if (a.dtype() != b.dtype()) {
            throw new IllegalArgumentException(op + " operands have dtypes " + a.dtype() + " and " + b.dtype());
        }
        DType expect = op.isComparison() ? DType.BOOL : a.dtype();
        if (dtype != expect) throw new IllegalArgumentException(op + " of " + a.dtype() + " yields " + expect + ", not " + dtype);
        if (op == Op.THREEFRY && a.dtype() != DType.U64) {
            throw new IllegalArgumentException("THREEFRY works on u64 counters and keys, got " + a.dtype());
        }
        return a.shape();
    }

    private static Shape ternary(Op op, DType dtype, List<UOp> src) {
        arity(op, src, 3);
        Shape s = src.get(0).shape();
        for (UOp u : src) {
            if (!u.shape().equals(s)) {
                throw new IllegalArgumentException(op + " operands have shapes " + src.stream().map(UOp::shape).toList());
            }
        }
        if (op == Op.WHERE && src.get(0).dtype() != DType.BOOL) {
            throw new IllegalArgumentException("WHERE condition must be bool, got " + src.get(0).dtype());
        }
        int first = op == Op.WHERE ? 1 : 0;
        for (int i = first; i < 3; i++) {
            if (src.get(i).dtype() != dtype) {
                throw new IllegalArgumentException(op + " operand " + i + " is " + src.get(i).dtype() + ", expected " + dtype);
            }
        }
        return s;
    }

    private static Shape reduce(DType dtype, Object arg, List<UOp> src) {
        arity(Op.REDUCE, src, 1);
        if (!(arg instanceof ReduceArg(var kind, var axes)) || kind == null) {
            throw new IllegalArgumentException("REDUCE needs a ReduceArg, got " + arg);
        }
        UOp x = src.getFirst();
        if (x.dtype() != dtype) throw new IllegalArgumentException("REDUCE of " + x.dtype() + " cannot produce " + dtype);
        Shape out = x.shape();
        for (int i = 0; i < axes.size(); i++) {
            int a = axes.get(i);
            if (a < 0 || a >= out.rank()) {
                throw new IllegalArgumentException("REDUCE axis " + a + " out of range for shape " + x.shape());
            }
            out = out.with(a, 1);
        }
        return out;
    }

    private static Shape movement(Op op, Object arg, List<UOp> src) {
        arity(op, src, 1);
        Shape in = src.getFirst().shape();
        int[] d = in.toArray();
        switch (op) {
            case RESHAPE -> {
                Shape out = (Shape) arg;
                if (out.numel() != in.numel()) {
                    throw new IllegalArgumentException("RESHAPE from " + in + " (" + in.numel() + " elements) to " + out
                            + " (" + out.numel() + " elements)");
                }
                checkSymbolicReshape(in, out);
                return out;
            }
            case EXPAND -> {
                Shape out = (Shape) arg;
                if (out.rank() != in.rank()) throw new IllegalArgumentException("EXPAND from " + in + " to " + out + " changes rank");
                for (int i = 0; i < d.length; i++) {
                    if (d[i] != out.dim(i) && d[i] != 1) {
                        throw new IllegalArgumentException("EXPAND from " + in + " to " + out + ": axis " + i + " has size " + d[i]);
                    }
                    if (d[i] != 1 && !java.util.Objects.equals(in.variable(i), out.variable(i))) {
                        throw new IllegalArgumentException("EXPAND from " + in + " to " + out + ": axis " + i
                                + " would change its symbolic size; only an axis of size 1 expands");
                    }
                }
                return out;
            }
            case PERMUTE -> {
                Ints p = (Ints) arg;
                int[] sorted = p.toArray();
                Arrays.sort(sorted);
                for (int i = 0; i < sorted.length; i++) {
                    if (sorted[i] != i || sorted.length != d.length) {
                        throw new IllegalArgumentException("PERMUTE " + p + " is not a permutation of the axes of " + in);
                    }
                }
                return in.permute(p.toArray());
            }
            case PAD, SHRINK -> {
                Ints b = (Ints) arg; // before0, after0, before1, after1, ... (SHRINK: start0, end0, ...)
                if (b.size() != 2 * d.length) {
                    throw new IllegalArgumentException(op + " needs 2 bounds per axis of " + in + ", got " + b);
                }
                Shape out = in;
                for (int i = 0; i < d.length; i++) {
                    int lo = b.get(2 * i), hi = b.get(2 * i + 1);
                    boolean identity = op == Op.PAD ? lo == 0 && hi == 0 : lo == 0 && hi == d[i];
                    if (in.variable(i) != null) {
                        if (!identity) {
                            throw new IllegalArgumentException(op + " " + b + " of " + in + " changes the symbolic axis " + i
                                    + " (" + in.variable(i).name() + "); a symbolic axis cannot be padded or sliced");
                        }
                        continue;
                    }
                    if (op == Op.PAD) {
                        if (lo < 0 || hi < 0) throw new IllegalArgumentException("PAD " + b + " has a negative amount");
                        d[i] = Shape.dimension("PAD " + b + " of " + in, i, (long) d[i] + lo + hi);
                    } else {
                        if (lo < 0 || hi > d[i] || lo > hi) {
                            throw new IllegalArgumentException("SHRINK " + b + " out of range for shape " + in + " at axis " + i);
                        }
                        d[i] = hi - lo;
                    }
                    out = out.with(i, d[i]);
                }
                return out;
            }
            case FLIP -> {
                Ints axes = (Ints) arg;
                for (int i = 0; i < axes.size(); i++) {
                    if (axes.get(i) < 0 || axes.get(i) >= d.length) {
                        throw new IllegalArgumentException("FLIP axis " + axes.get(i) + " out of range for shape " + in);
                    }
                    if (in.variable(axes.get(i)) != null) {
                        throw new IllegalArgumentException("FLIP of the symbolic axis " + axes.get(i) + " of " + in
                                + " would read rows past its size");
                    }
                }
                return in;
            }
            default -> throw new AssertionError(op);
        }
    }

    /**
     * A reshape keeps every symbolic axis of its source as an axis of the result (same variable, size and
     * element offset), and may make fixed sizes symbolic (a table laid out for the maximum, read only up to
     * the variable), but never drops or moves a variable: rows past the size are not data.
     */
    private static void checkSymbolicReshape(Shape in, Shape out) {
        for (int k = 0; k < in.rank(); k++) {
            if (in.variable(k) == null) continue;
            int m = Shape.matchingAxis(in, k, out);
            if (m < 0 || !in.variable(k).equals(out.variable(m))) {
                throw new IllegalArgumentException("RESHAPE from " + in + " to " + out + " does not keep the symbolic axis " + k
                        + " (" + in.variable(k).name() + ") as an axis of its own");
            }
        }
        for (int m = 0; m < out.rank(); m++) {
            if (out.variable(m) == null) continue;
            int k = Shape.matchingAxis(out, m, in);
            if (k >= 0 && in.variable(k) != null && !in.variable(k).equals(out.variable(m))) {
                throw new IllegalArgumentException("RESHAPE from " + in + " to " + out + ": the symbolic axis " + m
                        + " (" + out.variable(m).name() + ") meets the other symbolic axis " + k + " of the source");
            }
        }
    }

    private static Shape buffer(Op op, DType dtype, Object arg, List<UOp> src) {
        return switch (op) {
            case CONST -> {
                arity(op, src, 0);
                if (!(arg instanceof Long || arg instanceof Double)) {
                    throw new IllegalArgumentException("CONST needs a Long or Double value, got " + arg);
                }
                yield Shape.SCALAR;
            }
            case DEFINE_VAR -> {
                arity(op, src, 0);
                if (!(arg instanceof dev.kiln.types.Variable || arg instanceof Slot)) {
                    throw new IllegalArgumentException("DEFINE_VAR needs a Variable or a Slot, got " + arg);
                }
                if (arg instanceof dev.kiln.types.Variable && dtype != DType.I64) {
                    throw new IllegalArgumentException("a Variable is an i64 node, not " + dtype);
                }
                yield Shape.SCALAR;
            }
            case ARANGE -> {
                arity(op, src, 0);
                if (!(arg instanceof Shape s) || s.rank() != 1) throw new IllegalArgumentException("ARANGE needs a 1-D Shape, got " + arg);
                if (dtype != DType.I32 && dtype != DType.I64) throw new IllegalArgumentException("ARANGE counts in i32 or i64, not " + dtype);
                yield s;
            }
            case BUFFER -> {
                arity(op, src, 0);
                if (!(arg instanceof BufferRef b) || b.dtype() != dtype) {
                    throw new IllegalArgumentException("BUFFER needs a BufferRef of " + dtype + ", got " + arg);
                }
                if (b.count() > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("buffer of " + b.count() + " elements exceeds a 1-D shape");
                }
                yield Shape.of((int) b.count());
            }
            case LOAD -> { // buffer, index[, gate]: a gated load reads nothing and yields 0 when the gate is false
                if (src.size() != 2 && src.size() != 3) throw new IllegalArgumentException("LOAD takes 2 or 3 sources, got " + src.size());
                yield Shape.SCALAR;
            }
            case COPY, CONTIGUOUS -> {
                arity(op, src, 1);
                if (src.getFirst().dtype() != dtype) throw new IllegalArgumentException(op + " cannot change dtype");
                yield src.getFirst().shape();
            }
            case ASSIGN -> {
                arity(op, src, 2);
                UOp target = src.get(0), value = src.get(1);
                if (!target.shape().equals(value.shape()) || target.dtype() != value.dtype() || dtype != target.dtype()) {
                    throw new IllegalArgumentException("ASSIGN of " + value.dtype() + value.shape() + " into "
                            + target.dtype() + target.shape());
                }
                yield target.shape();
            }
            case CUSTOM -> {
                if (!(arg instanceof CustomFunction f)) throw new IllegalArgumentException("CUSTOM needs a CustomFunction, got " + arg);
                yield f.shape();
            }
            default -> throw new AssertionError(op);
        };
    }
}
