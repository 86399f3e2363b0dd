package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;

import static dev.kiln.golden.CoreGolden.binary;
import static dev.kiln.golden.CoreGolden.inputs;
import static dev.kiln.golden.CoreGolden.scalar;
import static dev.kiln.golden.CoreGolden.unary;
import static java.util.Map.entry;

/** Elementwise arithmetic, math, rounding, comparison, logic and bitwise ops (tools/golden/gen_elementwise.py). */
class ElementwiseGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "elementwise"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                entry("add", binary(Tensor::add)),
                entry("sub", binary(Tensor::sub)),
                entry("rsub", binary(Tensor::rsub)),
                entry("mul", binary(Tensor::mul)),
                entry("div", binary(Tensor::div)),
                entry("floorDiv", binary(Tensor::floorDiv)),
                entry("truncDiv", binary(Tensor::truncDiv)),
                entry("mod", binary(Tensor::mod)),
                entry("fmod", binary(Tensor::fmod)),
                entry("maximum", binary(Tensor::maximum)),
                entry("minimum", binary(Tensor::minimum)),
                entry("pow", binary(Tensor::pow)),
                entry("neg", unary(Tensor::neg)),
                entry("reciprocal", unary(Tensor::reciprocal)),
                entry("square", unary(Tensor::square)),
                entry("lerp", GoldenOp.one((in, a) -> {
                    List<Tensor> x = inputs(in, a);
                    Object end = a.has("end") ? scalar(a, "end") : x.get(1);
                    Object weight = a.has("weight") ? scalar(a, "weight") : x.get(x.size() - 1);
                    return x.get(0).lerp(end, weight);
                })),
                entry("clamp", GoldenOp.one((in, a) -> {
                    List<Tensor> x = inputs(in, a);
                    if (x.size() == 3) return x.get(0).clamp(x.get(1), x.get(2));
                    return x.get(0).clamp(a.has("min") ? scalar(a, "min") : null, a.has("max") ? scalar(a, "max") : null);
                })),
                entry("exp", unary(Tensor::exp)),
                entry("exp2", unary(Tensor::exp2)),
                entry("log", unary(Tensor::log)),
                entry("log2", unary(Tensor::log2)),
                entry("log10", unary(Tensor::log10)),
                entry("log1p", unary(Tensor::log1p)),
                entry("expm1", unary(Tensor::expm1)),
                entry("sqrt", unary(Tensor::sqrt)),
                entry("rsqrt", unary(Tensor::rsqrt)),
                entry("sin", unary(Tensor::sin)),
                entry("cos", unary(Tensor::cos)),
                entry("tan", unary(Tensor::tan)),
                entry("asin", unary(Tensor::asin)),
                entry("acos", unary(Tensor::acos)),
                entry("atan", unary(Tensor::atan)),
                entry("sinh", unary(Tensor::sinh)),
                entry("cosh", unary(Tensor::cosh)),
                entry("tanh", unary(Tensor::tanh)),
                entry("asinh", unary(Tensor::asinh)),
                entry("acosh", unary(Tensor::acosh)),
                entry("atanh", unary(Tensor::atanh)),
                entry("erf", unary(Tensor::erf)),
                entry("trunc", unary(Tensor::trunc)),
                entry("floor", unary(Tensor::floor)),
                entry("ceil", unary(Tensor::ceil)),
                entry("round", unary(Tensor::round)),
                entry("abs", unary(Tensor::abs)),
                entry("sign", unary(Tensor::sign)),
                entry("isnan", unary(Tensor::isnan)),
                entry("isinf", unary(Tensor::isinf)),
                entry("isfinite", unary(Tensor::isfinite)),
                entry("lt", binary(Tensor::lt)),
                entry("gt", binary(Tensor::gt)),
                entry("le", binary(Tensor::le)),
                entry("ge", binary(Tensor::ge)),
                entry("eq", binary(Tensor::eq)),
                entry("ne", binary(Tensor::ne)),
                entry("logicalNot", unary(Tensor::logicalNot)),
                entry("logicalAnd", binary(Tensor::logicalAnd)),
                entry("logicalOr", binary(Tensor::logicalOr)),
                entry("logicalXor", binary(Tensor::logicalXor)),
                entry("where", GoldenOp.one((in, a) -> {
                    // inputs: cond, then the tensor operands that are not given as a_scalar / b_scalar
                    List<Tensor> x = inputs(in, a);
                    int next = 1;
                    Object ta = a.has("a_scalar") ? scalar(a, "a_scalar") : x.get(next++);
                    Object tb = a.has("b_scalar") ? scalar(a, "b_scalar") : x.get(next);
                    return Tensor.where(x.get(0), ta, tb);
                })),
                entry("maskedFill", GoldenOp.one((in, a) -> {
                    List<Tensor> x = inputs(in, a);
                    return x.get(0).maskedFill(x.get(1), a.number("value"));
                })),
                entry("bitwiseAnd", binary(Tensor::bitwiseAnd)),
                entry("bitwiseOr", binary(Tensor::bitwiseOr)),
                entry("bitwiseXor", binary(Tensor::bitwiseXor)),
                entry("bitwiseNot", unary(Tensor::bitwiseNot)),
                entry("shl", binary(Tensor::shl)),
                entry("shr", binary(Tensor::shr)),
                entry("broadcastTo", GoldenOp.one((in, a) -> inputs(in, a).get(0).broadcastTo(a.ints("shape")))));
    }
}
