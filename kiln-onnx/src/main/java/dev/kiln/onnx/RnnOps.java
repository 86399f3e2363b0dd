package dev.kiln.onnx;

import dev.kiln.DType;
import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.add;

/**
 * The recurrent operators RNN, GRU and LSTM, unrolled over the (static) sequence length: one set of Tensor
 * operations per time step and direction. Steps at or past a batch entry's {@code sequence_lens} keep its
 * state and output zeros.
 */
final class RnnOps {
    private RnnOps() {}

    private static final List<String> ACTIVATIONS = List.of("Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
            "HardSigmoid", "Elu", "Softsign", "Softplus");

    static void register() {
        add("RNN", 7, c -> run(c, Cell.RNN), (n, o) -> check(n, 1));
        add("GRU", 7, c -> run(c, Cell.GRU), (n, o) -> check(n, 2));
        add("LSTM", 7, c -> run(c, Cell.LSTM), (n, o) -> n.attrs().b("input_forget", false) ? "input_forget = 1 is not supported" : check(n, 3));
    }

    private enum Cell { RNN, GRU, LSTM }

    private static String check(Node n, int perDirection) {
        String[] acts = activationNames(n.attrs());
        if (acts != null) for (String a : acts) if (!ACTIVATIONS.contains(a)) return "activation '" + a + "' is not supported";
        String dir = n.attrs().s("direction", "forward");
        return List.of("forward", "reverse", "bidirectional").contains(dir) ? null : "direction '" + dir + "' is not supported";
    }

    private static String[] activationNames(Attrs a) {
        if (!a.has("activations")) return null;
        return a.strings("activations");
    }

    /** One activation function with its optional alpha and beta. */
    private record Act(String name, double alpha, double beta) {
        Tensor apply(Tensor x) {
            return switch (name) {
                case "Relu" -> x.relu();
                case "Tanh" -> x.tanh();
                case "Sigmoid" -> x.sigmoid();
                case "Affine" -> x.mul(alpha).add(beta);
                case "LeakyRelu" -> x.leakyRelu(alpha);
                case "ThresholdedRelu" -> Tensor.where(x.gt(alpha), x, x.zerosLike());
                case "ScaledTanh" -> x.mul(beta).tanh().mul(alpha);
                case "HardSigmoid" -> x.mul(alpha).add(beta).clamp(0.0, 1.0);
                case "Elu" -> x.elu(alpha);
                case "Softsign" -> x.softsign();
                case "Softplus" -> x.softplus();
                default -> throw new IllegalStateException("unchecked activation " + name);
            };
        }
    }

    private static List<Act> activations(OpContext c, Cell cell, int dirs) {
        String[] names = activationNames(c.a);
        List<String> defaults = switch (cell) {
            case RNN -> List.of("Tanh");
            case GRU -> List.of("Sigmoid", "Tanh");
            case LSTM -> List.of("Sigmoid", "Tanh", "Tanh");
        };
        float[] alpha = c.a.floats("activation_alpha"), beta = c.a.floats("activation_beta");
        List<Act> out = new ArrayList<>();
        for (int k = 0; k < defaults.size() * dirs; k++) {
            String name = names != null ? names[k] : defaults.get(k % defaults.size());
            double dflAlpha = switch (name) {
                case "LeakyRelu" -> 0.01;
                case "HardSigmoid" -> 0.2;
                default -> 1.0;
            };
            double dflBeta = name.equals("HardSigmoid") ? 0.5 : name.equals("ScaledTanh") ? 1.0 : 0.0;
            out.add(new Act(name, alpha != null && k < alpha.length ? alpha[k] : dflAlpha, beta != null && k < beta.length ? beta[k] : dflBeta));
        }
        return out;
    }

    private static List<Tensor> run(OpContext c, Cell cell) {
        int gates = switch (cell) {
            case RNN -> 1;
            case GRU -> 3;
            case LSTM -> 4;
        };
        boolean batchFirst = c.opset >= 14 && c.a.i("layout", 0) == 1;
        Tensor x = c.in(0);
        if (batchFirst) x = x.transpose(0, 1);
        Tensor w = c.in(1), r = c.in(2), b = c.opt(3);
        int seq = x.dim(0), batch = x.dim(1);
        int hidden = (int) c.a.i("hidden_size", r.dim(-1));
        String direction = c.a.s("direction", "forward");
        int dirs = direction.equals("bidirectional") ? 2 : 1;
        List<Act> acts = activations(c, cell, dirs);
        double clip = c.a.f("clip", 0);
        boolean linearBeforeReset = c.a.b("linear_before_reset", false);
        Tensor lens = c.opt(4) == null ? null : c.opt(4).cast(DType.I64).reshape(batch, 1);
        Tensor h0 = c.opt(5), c0 = cell == Cell.LSTM ? c.opt(6) : null, peep = cell == Cell.LSTM ? c.opt(7) : null;
        if (batchFirst) {
            if (h0 != null) h0 = h0.transpose(0, 1);
            if (c0 != null) c0 = c0.transpose(0, 1);
        }
        int nActs = acts.size() / dirs;

        List<Tensor> yDirs = new ArrayList<>(), hLast = new ArrayList<>(), cLast = new ArrayList<>();
        for (int d = 0; d < dirs; d++) {
            boolean reverse = direction.equals("reverse") || d == 1;
            Tensor wd = w.slice(0, d, d + 1, 1).squeeze(0), rd = r.slice(0, d, d + 1, 1).squeeze(0);
            Tensor wb = null, rb = null;
            if (b != null) {
                Tensor bd = b.slice(0, d, d + 1, 1).squeeze(0);
                wb = bd.slice(0, 0, gates * hidden, 1);
                rb = bd.slice(0, gates * hidden, 2 * gates * hidden, 1);
            }
            Tensor h = h0 != null ? h0.slice(0, d, d + 1, 1).squeeze(0) : c.here(Tensor.zeros(x.dtype(), batch, hidden));
            Tensor cs = c0 != null ? c0.slice(0, d, d + 1, 1).squeeze(0) : h.zerosLike();
            Tensor pd = peep == null ? null : peep.slice(0, d, d + 1, 1).squeeze(0);
            List<Act> a = acts.subList(d * nActs, (d + 1) * nActs);
            Tensor[] ys = new Tensor[seq];
            // input projections of every step at once: (seq, batch, gates*hidden)
            Tensor xw = x.matmul(wd.mT());
            if (wb != null) xw = xw.add(wb);
            for (int s = 0; s < seq; s++) {
                int t = reverse ? seq - 1 - s : s;
                Tensor xt = xw.slice(0, t, t + 1, 1).squeeze(0);
                Tensor hr = h.matmul(rd.mT());
                if (rb != null) hr = hr.add(rb);
                Tensor hNew, cNew = null;
                switch (cell) {
                    case RNN -> hNew = a.get(0).apply(clip(xt.add(hr), clip));
                    case GRU -> {
                        Tensor z = a.get(0).apply(clip(gate(xt, 0, hidden).add(gate(hr, 0, hidden)), clip));
                        Tensor rr = a.get(0).apply(clip(gate(xt, 1, hidden).add(gate(hr, 1, hidden)), clip));
                        Tensor hh;
                        if (linearBeforeReset) hh = gate(xt, 2, hidden).add(rr.mul(gate(hr, 2, hidden)));
                        else {
                            Tensor rh = rr.mul(h).matmul(gate(rd, 2, hidden, 0).mT());
                            if (rb != null) rh = rh.add(gate(rb, 2, hidden));
                            hh = gate(xt, 2, hidden).add(rh);
                        }
                        Tensor ht = a.get(1).apply(clip(hh, clip));
                        hNew = z.rsub(1.0).mul(ht).add(z.mul(h));
                    }
                    default -> {
                        Tensor pre = xt.add(hr);
                        Tensor gi = gate(pre, 0, hidden), go = gate(pre, 1, hidden), gf = gate(pre, 2, hidden), gc = gate(pre, 3, hidden);
                        if (pd != null) {
                            gi = gi.add(gate(pd, 0, hidden).mul(cs));
                            gf = gf.add(gate(pd, 2, hidden).mul(cs));
                        }
                        Tensor i = a.get(0).apply(clip(gi, clip)), f = a.get(0).apply(clip(gf, clip)), ct = a.get(1).apply(clip(gc, clip));
                        cNew = f.mul(cs).add(i.mul(ct));
                        if (pd != null) go = go.add(gate(pd, 1, hidden).mul(cNew));
                        Tensor o = a.get(0).apply(clip(go, clip));
                        hNew = o.mul(a.get(2).apply(cNew));
                    }
                }
                Tensor y = hNew;
                if (lens != null) {
                    Tensor live = lens.gt((long) t);
                    hNew = Tensor.where(live, hNew, h);
                    if (cNew != null) cNew = Tensor.where(live, cNew, cs);
                    y = Tensor.where(live, y, y.zerosLike());
                }
                h = hNew;
                if (cNew != null) cs = cNew;
                ys[t] = y;
            }
            yDirs.add(Tensor.stack(0, ys)); // (seq, batch, hidden)
            hLast.add(h);
            cLast.add(cs);
        }
        Tensor y = Tensor.stack(1, yDirs.toArray(Tensor[]::new)); // (seq, dirs, batch, hidden)
        Tensor yh = Tensor.stack(0, hLast.toArray(Tensor[]::new)), yc = Tensor.stack(0, cLast.toArray(Tensor[]::new));
        if (batchFirst) {
            y = y.permute(2, 0, 1, 3);
            yh = yh.transpose(0, 1);
            yc = yc.transpose(0, 1);
        }
        List<Tensor> out = new ArrayList<>(List.of(y, yh));
        if (cell == Cell.LSTM) out.add(yc);
        return out;
    }

    /** Gate {@code k} (of width {@code hidden}) of the last axis. */
    private static Tensor gate(Tensor t, int k, int hidden) { return gate(t, k, hidden, t.ndim() - 1); }

    private static Tensor gate(Tensor t, int k, int hidden, int axis) { return t.slice(axis, k * hidden, (k + 1) * hidden, 1); }

    private static Tensor clip(Tensor t, double clip) { return clip > 0 ? t.clamp(-clip, clip) : t; }
}
