package dev.kiln;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;

/**
 * Elementwise arithmetic and functions composed from the primitive ops: division variants, minimum, powers,
 * interpolation and clamping, the inverse and hyperbolic trigonometric functions, erf, rounding, absolute
 * value and sign, the ternary select, and the signed infinity test.
 */
final class ElementwiseMath {
    private ElementwiseMath() {}

    static Tensor div(Tensor t, Object other) {
        Tensor o = Tensor.operand(t, other, "div");
        DType dt = DType.promote(t.dtype(), o.dtype());
        if (!dt.isFloat()) dt = DType.F32;
        Tensor[] xy = Tensor.align("div", t, o, dt);
        return t.make(UOp.of(Op.DIV, dt, null, xy[0].node(), xy[1].node()));
    }

    static Tensor truncDiv(Tensor t, Object other) {
        Tensor o = Tensor.operand(t, other, "truncDiv");
        if (t.dtype().isFloat() || o.dtype().isFloat()) return t.div(o).trunc();
        return t.binary(Op.DIV, "truncDiv", o);
    }

    static Tensor neg(Tensor t) {
        if (t.dtype().isBool()) throw new IllegalArgumentException("neg: not defined on bool; use logicalNot");
        return t.unary(Op.NEG);
    }

    static Tensor minimum(Tensor t, Object other) {
        Tensor o = Tensor.operand(t, other, "minimum");
        Tensor[] xy = Tensor.align("minimum", t, o, Tensor.promoteFor("minimum", t, o));
        Tensor a = xy[0], b = xy[1];
        Tensor pickA = a.lt(b);
        if (a.dtype().isFloat()) pickA = pickA.logicalOr(a.isnan());
        return Tensor.where(pickA, a, b);
    }

    static Tensor pow(Tensor t, Object exponent) {
        Tensor e = Tensor.operand(t, exponent, "pow");
        DType dt = DType.promote(t.dtype(), e.dtype());
        if (!dt.isFloat()) { // integer powers: exact through f64 for the magnitudes integers reach
            Tensor[] xy = Tensor.align("pow", t.cast(DType.F64), e.cast(DType.F64), DType.F64);
            return xy[0].pow(xy[1]).round().cast(dt);
        }
        Tensor[] xy = Tensor.align("pow", t, e, dt);
        Tensor b = xy[0], y = xy[1];
        Tensor mag = y.mul(b.abs().log2()).exp2();
        Tensor yInt = y.trunc().eq(y);
        Tensor yOdd = yInt.logicalAnd(y.mod(2.0).abs().eq(1.0));
        Tensor negResult = Tensor.where(yInt, Tensor.where(yOdd, mag.neg(), mag), b.fullLike(Double.NaN));
        Tensor negZero = b.eq(0.0).logicalAnd(b.reciprocal().lt(0.0)); // -0.0 ** odd keeps the sign: (-0.0)**-1 is -inf
        Tensor r = Tensor.where(b.lt(0.0), negResult, Tensor.where(negZero.logicalAnd(yOdd), mag.neg(), mag));
        // C99 pow: x**0, 1**y (even NaN) and (-1)**(+-inf) are 1
        Tensor one = y.eq(0.0).logicalOr(b.eq(1.0)).logicalOr(b.eq(-1.0).logicalAnd(y.isinf()));
        return Tensor.where(one, b.fullLike(1.0), r);
    }

    static Tensor lerp(Tensor t, Object end, Object weight) {
        Tensor e = Tensor.operand(t, end, "lerp"), w = Tensor.operand(t, weight, "lerp");
        // checked here so that a mismatch names lerp, not the mul or add it is built from
        Tensor.broadcastShape("lerp", Tensor.broadcastShape("lerp", t.shape(), e.shape()), w.shape());
        return t.add(w.mul(e.sub(t)));
    }

    static Tensor clamp(Tensor t, Object min, Object max) {
        Shape s = t.shape();
        if (min != null) s = Tensor.broadcastShape("clamp", s, Tensor.operand(t, min, "clamp").shape());
        if (max != null) Tensor.broadcastShape("clamp", s, Tensor.operand(t, max, "clamp").shape());
        Tensor x = t;
        if (min != null) x = x.maximum(min);
        if (max != null) x = x.minimum(max);
        return x;
    }

    static Tensor log1p(Tensor t) {
        Tensor x = t.toFloat(), u = x.add(1.0);
        // log(u) * x / (u - 1) corrects the rounding of 1 + x (Goldberg's trick); x / (u - 1) first, so that
        // huge x does not overflow, and +inf passes through
        Tensor d = u.sub(1.0);
        return Tensor.where(d.eq(0.0).logicalOr(x.eq(Double.POSITIVE_INFINITY)), x, u.log().mul(x.div(d)));
    }

    static Tensor expm1(Tensor t) {
        Tensor x = t.toFloat(), u = x.exp();
        Tensor um1 = u.sub(1.0);
        // (u - 1) * x / log(u) corrects the rounding of exp near 0; x / log(u) first, so that large x does
        // not overflow, and an infinite exp passes through
        return Tensor.where(u.eq(1.0), x, Tensor.where(um1.eq(-1.0).logicalOr(u.isinf()), um1, um1.mul(x.div(u.log()))));
    }

    static Tensor atan(Tensor t) {
        Tensor x = t.toFloat(), a = x.abs();
        // reduce |x| > tan(3pi/8) to -1/|x|, tan(pi/8) < |x| <= tan(3pi/8) to (|x|-1)/(|x|+1)
        Tensor big = a.gt(2.414213562373095), mid = a.gt(0.4142135623730950).logicalAnd(big.logicalNot());
        Tensor y0 = Tensor.where(big, a.fullLike(Math.PI / 2), Tensor.where(mid, a.fullLike(Math.PI / 4), a.fullLike(0.0)));
        Tensor r = Tensor.where(big, a.reciprocal().neg(), Tensor.where(mid, a.sub(1.0).div(a.add(1.0)), a));
        Tensor z = r.square();
        Tensor p = z.mul(8.05374449538e-2).sub(1.38776856032e-1).mul(z).add(1.99777106478e-1).mul(z).sub(3.33329491539e-1).mul(z).mul(r).add(r);
        Tensor res = y0.add(p);
        return Tensor.where(x.lt(0.0), res.neg(), res);
    }

    static Tensor asin(Tensor t) {
        Tensor x = t.toFloat();
        return x.div(x.square().rsub(1.0).sqrt()).atan();
    }

    static Tensor sinh(Tensor t) {
        Tensor x = t.toFloat();
        return x.exp().sub(x.neg().exp()).mul(0.5);
    }

    static Tensor cosh(Tensor t) {
        Tensor x = t.toFloat();
        return x.exp().add(x.neg().exp()).mul(0.5);
    }

    static Tensor tanh(Tensor t) {
        Tensor x = t.toFloat();
        return x.mul(2.0).sigmoid().mul(2.0).sub(1.0);
    }

    static Tensor asinh(Tensor t) {
        Tensor x = t.toFloat(), a = x.abs();
        Tensor r = a.add(a.square().add(1.0).sqrt()).log();
        return Tensor.where(x.lt(0.0), r.neg(), r);
    }

    static Tensor acosh(Tensor t) {
        Tensor x = t.toFloat();
        return x.add(x.square().sub(1.0).sqrt()).log();
    }

    static Tensor atanh(Tensor t) {
        Tensor x = t.toFloat();
        return x.add(1.0).div(x.rsub(1.0)).log().mul(0.5);
    }

    static Tensor erf(Tensor self) {
        Tensor x = self.toFloat(), a = x.abs();
        Tensor t = a.mul(0.3275911).add(1.0).reciprocal();
        Tensor poly = t.mul(1.061405429).sub(1.453152027).mul(t).add(1.421413741).mul(t).sub(0.284496736).mul(t).add(0.254829592).mul(t);
        Tensor y = poly.mul(a.square().neg().exp()).rsub(1.0);
        return Tensor.where(x.lt(0.0), y.neg(), y);
    }

    static Tensor floor(Tensor self) {
        if (!self.dtype().isFloat()) return self;
        Tensor t = self.trunc();
        return Tensor.where(self.lt(t), t.sub(1.0), t);
    }

    static Tensor ceil(Tensor self) {
        if (!self.dtype().isFloat()) return self;
        Tensor t = self.trunc();
        return Tensor.where(self.gt(t), t.add(1.0), t);
    }

    static Tensor round(Tensor t) {
        if (!t.dtype().isFloat()) return t;
        Tensor f = t.floor(), d = t.sub(f);
        Tensor even = f.mod(2.0).eq(0.0);
        Tensor up = d.gt(0.5).logicalOr(d.eq(0.5).logicalAnd(even.logicalNot()));
        return Tensor.where(up, f.add(1.0), f);
    }

    static Tensor abs(Tensor t) {
        if (t.dtype().isBool() || t.dtype().isUnsigned()) return t;
        return t.maximum(t.neg());
    }

    static Tensor sign(Tensor t) {
        if (t.dtype().isBool()) return t;
        Tensor one = t.fullLike(1), zero = t.fullLike(0);
        Tensor s = Tensor.where(t.gt(zero), one, Tensor.where(t.lt(zero), one.neg(), zero));
        return t.dtype().isFloat() ? Tensor.where(t.isnan(), t, s) : s;
    }

    static Tensor where(Tensor cond, Object a, Object b) {
        Tensor ta = a instanceof Tensor t ? t : b instanceof Tensor tb ? tb.scalarLike(a, "where")
                : cond.scalarLike(a, "where").cast(a instanceof Double || a instanceof Float ? DType.F32 : a instanceof Boolean ? DType.BOOL : DType.I32);
        Tensor tbb = b instanceof Tensor t ? t : ta.scalarLike(b, "where");
        DType dt = DType.promote(ta.dtype(), tbb.dtype());
        Shape s = Tensor.broadcastShape("where", Tensor.broadcastShape("where", cond.shape(), ta.shape()), tbb.shape());
        Tensor c = cond.cast(DType.BOOL).broadcastTo(s, "where");
        Tensor x = ta.to(cond.device()).cast(dt).broadcastTo(s, "where"), y = tbb.to(cond.device()).cast(dt).broadcastTo(s, "where");
        return cond.make(UOp.of(Op.WHERE, dt, null, c.node(), x.node(), y.node()));
    }

    /** ONNX IsInf: true at +inf (if {@code detectPositive}) and -inf (if {@code detectNegative}). */
    static Tensor isinf(Tensor x, boolean detectPositive, boolean detectNegative) {
        Tensor no = x.fullLike(0).cast(DType.BOOL);
        if (!x.dtype().isFloat()) return no;
        Tensor pos = detectPositive ? x.eq(Double.POSITIVE_INFINITY) : no, neg = detectNegative ? x.eq(Double.NEGATIVE_INFINITY) : no;
        return pos.logicalOr(neg);
    }
}
