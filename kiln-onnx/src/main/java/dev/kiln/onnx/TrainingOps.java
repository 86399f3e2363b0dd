package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.TRAINING;

/**
 * The optimizers of the {@code ai.onnx.preview.training} domain (opset 1): {@code Adagrad}, {@code Adam} and
 * {@code Momentum}, each one elementwise graph per optimized tensor. A node's inputs are the learning rate {@code R}
 * and update count {@code T} (scalars), then {@code n} tensors of each role (weights {@code X}, gradients {@code G},
 * and the optimizer's state: accumulated squares {@code H}, momenta {@code V}); its outputs are the new weights and
 * the new state, role by role. {@code T} stays a graph value (the {@code T > 0} branches are selects), so a plan
 * prepared once serves every step.
 */
final class TrainingOps {
    private TrainingOps() {}

    static void register() {
        OnnxOps.add(TRAINING, "Adagrad", 1, OnnxOps.Kind.NORMAL, TrainingOps::adagrad, null);
        OnnxOps.add(TRAINING, "Adam", 1, OnnxOps.Kind.NORMAL, TrainingOps::adam, null);
        OnnxOps.add(TRAINING, "Momentum", 1, OnnxOps.Kind.NORMAL, TrainingOps::momentum, null);
    }

    /**
     * The tensors of one role: {@code groups} roles of {@code n} tensors follow R and T, and the node lists as many
     * outputs as the optimizer updates ({@code outGroups} roles of {@code n}).
     */
    private static List<Tensor> role(OpContext c, int groups, int outGroups, int role) {
        int rest = c.inputCount() - 2;
        if (rest <= 0 || rest % groups != 0) {
            throw c.bad("expects R, T and " + groups + " groups of the same number of tensors, got " + c.inputCount() + " inputs " + c.node.inputs());
        }
        int n = rest / groups;
        if (c.outputCount() != outGroups * n) {
            throw c.bad("updates " + n + " tensor(s) and must list " + outGroups * n + " outputs, got " + c.outputCount());
        }
        List<Tensor> out = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            Tensor t = c.in(2 + role * n + k);
            if (!t.dtype().isFloat()) throw c.bad("input " + (2 + role * n + k) + " must be a float tensor, got " + t.dtype());
            out.add(t);
        }
        if (role > 0) {
            // every role's k-th tensor updates the k-th weight: same shape, no broadcasting between them
            List<Tensor> xs = new ArrayList<>();
            for (int k = 0; k < n; k++) xs.add(c.in(2 + k));
            for (int k = 0; k < n; k++) {
                if (!out.get(k).shape().equals(xs.get(k).shape())) {
                    throw c.bad("input " + (2 + role * n + k) + " has shape " + out.get(k).shape() + ", the weight it updates (input " + (2 + k) + ") "
                            + xs.get(k).shape());
                }
            }
        }
        return out;
    }

    /** The learning rate R, a scalar, as x's dtype. */
    private static Tensor rate(OpContext c, Tensor x) {
        Tensor r = c.in(0);
        if (r.numel() != 1 || !r.dtype().isFloat()) throw c.bad("the learning rate R must be one float value, got " + r.dtype() + " " + r.shape());
        return r.reshape().cast(x.dtype());
    }

    /** The update count T, a scalar integer, as x's dtype. */
    private static Tensor count(OpContext c, Tensor x) {
        Tensor t = c.in(1);
        if (t.numel() != 1 || t.dtype().isFloat()) throw c.bad("the update count T must be one integer value, got " + t.dtype() + " " + t.shape());
        return t.reshape().cast(x.dtype());
    }

    private static double finite(OpContext c, String name, double v) {
        if (!Double.isFinite(v)) throw c.bad("attribute " + name + " must be finite, got " + v);
        return v;
    }

    /** {@code norm_coefficient * X + G}: the gradient of the loss plus L2 regularisation. */
    private static Tensor regularized(Tensor x, Tensor g, double norm) {
        Tensor gx = g.cast(x.dtype());
        return norm == 0 ? gx : x.mul(norm).add(gx);
    }

    private static List<Tensor> adagrad(OpContext c) {
        double decay = finite(c, "decay_factor", c.a.f("decay_factor", 0)), eps = finite(c, "epsilon", c.a.f("epsilon", 1e-6)),
                norm = finite(c, "norm_coefficient", c.a.f("norm_coefficient", 0));
        List<Tensor> xs = role(c, 3, 2, 0), gs = role(c, 3, 2, 1), hs = role(c, 3, 2, 2);
        List<Tensor> newX = new ArrayList<>(), newH = new ArrayList<>();
        for (int k = 0; k < xs.size(); k++) {
            Tensor x = xs.get(k);
            Tensor r = rate(c, x).div(count(c, x).mul(decay).add(1.0));
            Tensor g = regularized(x, gs.get(k), norm);
            Tensor h = hs.get(k).cast(x.dtype()).add(g.mul(g));
            newX.add(x.sub(r.mul(g).div(h.sqrt().add(eps))));
            newH.add(h);
        }
        return concat(newX, newH);
    }

    private static List<Tensor> adam(OpContext c) {
        double alpha = finite(c, "alpha", c.a.f("alpha", 0.9)), beta = finite(c, "beta", c.a.f("beta", 0.999)),
                eps = finite(c, "epsilon", c.a.f("epsilon", 1e-6)), norm = finite(c, "norm_coefficient", c.a.f("norm_coefficient", 0)),
                post = finite(c, "norm_coefficient_post", c.a.f("norm_coefficient_post", 0));
        List<Tensor> xs = role(c, 4, 3, 0), gs = role(c, 4, 3, 1), vs = role(c, 4, 3, 2), hs = role(c, 4, 3, 3);
        List<Tensor> newX = new ArrayList<>(), newV = new ArrayList<>(), newH = new ArrayList<>();
        for (int k = 0; k < xs.size(); k++) {
            Tensor x = xs.get(k);
            Tensor g = regularized(x, gs.get(k), norm);
            Tensor v = vs.get(k).cast(x.dtype()).mul(alpha).add(g.mul(1 - alpha));
            Tensor h = hs.get(k).cast(x.dtype()).mul(beta).add(g.mul(g).mul(1 - beta));
            Tensor t = count(c, x), r = rate(c, x);
            // bias correction sqrt(1 - beta^T) / (1 - alpha^T), only once T > 0 (at T = 0 it would divide by zero)
            Tensor corrected = r.mul(Tensor.where(t.gt(0.0), c.scalarOf(beta, x.dtype()).pow(t).rsub(1.0).sqrt()
                    .div(c.scalarOf(alpha, x.dtype()).pow(t).rsub(1.0)), 1.0));
            Tensor r2 = Tensor.where(t.gt(0.0), corrected, r);
            Tensor updated = x.sub(r2.mul(v.div(h.sqrt().add(eps))));
            newX.add(post == 0 ? updated : updated.mul(1 - post));
            newV.add(v);
            newH.add(h);
        }
        return concat(newX, newV, newH);
    }

    private static List<Tensor> momentum(OpContext c) {
        for (String name : List.of("alpha", "beta", "mode", "norm_coefficient")) {
            if (!c.a.has(name)) throw c.bad("requires the attribute " + name);
        }
        double alpha = finite(c, "alpha", c.a.f("alpha", 0)), beta = finite(c, "beta", c.a.f("beta", 0)),
                norm = finite(c, "norm_coefficient", c.a.f("norm_coefficient", 0));
        String mode = c.a.s("mode", "");
        if (!mode.equals("standard") && !mode.equals("nesterov")) {
            throw c.unsupported("mode '" + mode + "' is not one of " + Arrays.asList("standard", "nesterov"));
        }
        List<Tensor> xs = role(c, 3, 2, 0), gs = role(c, 3, 2, 1), vs = role(c, 3, 2, 2);
        List<Tensor> newX = new ArrayList<>(), newV = new ArrayList<>();
        for (int k = 0; k < xs.size(); k++) {
            Tensor x = xs.get(k);
            Tensor g = regularized(x, gs.get(k), norm);
            // the first update (T = 0) takes the gradient at full weight: beta applies from the second on
            Tensor betaT = Tensor.where(count(c, x).gt(0.0), c.scalarOf(beta, x.dtype()), c.scalarOf(1.0, x.dtype()));
            Tensor v = vs.get(k).cast(x.dtype()).mul(alpha).add(g.mul(betaT));
            Tensor step = mode.equals("standard") ? v : g.add(v.mul(alpha));
            newX.add(x.sub(rate(c, x).mul(step)));
            newV.add(v);
        }
        return concat(newX, newV);
    }

    @SafeVarargs
    private static List<Tensor> concat(List<Tensor>... roles) {
        List<Tensor> out = new ArrayList<>();
        for (List<Tensor> r : roles) out.addAll(r);
        return out;
    }
}
