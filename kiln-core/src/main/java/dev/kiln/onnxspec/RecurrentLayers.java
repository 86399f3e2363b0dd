package dev.kiln.onnxspec;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;

/**
 * The recurrent layers of ONNX (RNN, GRU, LSTM) over a static sequence length: the input projections of all
 * steps are one matmul, then one step, traced and compiled once and run per time step ({@link Tensor#scan}),
 * adds the recurrent projection of the previous hidden state and applies the gates. Building, planning and
 * running are linear in the sequence length. A reverse direction runs forward over the sequences reversed
 * within their lengths, and its outputs are reversed back. Steps at or past a batch entry's sequence
 * length keep its state and output zeros.
 */
public final class RecurrentLayers {
    private RecurrentLayers() {}

    /**
     * ONNX RNN over the static sequence length: {@code H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)}.
     *
     * @param x (seq, batch, input), or (batch, seq, input) with layout 1
     * @param w (dirs, hidden, input)
     * @param r (dirs, hidden, hidden)
     * @param b (dirs, 2*hidden): Wb then Rb; null for zeros
     * @param sequenceLens (batch) integers, or null for all full length; steps past a length keep the state and output 0
     * @param initialH (dirs, batch, hidden) ((batch, dirs, hidden) with layout 1), or null for zeros
     * @param direction {@code "forward"}, {@code "reverse"} or {@code "bidirectional"} (dirs = 2)
     * @param activations one per direction (null for ONNX's default Tanh): Relu, Tanh, Sigmoid, Affine, LeakyRelu,
     *                    ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus (case-insensitive)
     * @param activationAlpha alpha values, consumed in order by the activations that take one (null for defaults)
     * @param activationBeta beta values, likewise
     * @param clip bound of the activations' inputs ({@code [-clip, clip]}), or null for none
     * @param layout 0 (sequence-major) or 1 (batch-major), for x, initialH and the outputs
     */
    public static RecurrentOutputs rnn(Tensor x, Tensor w, Tensor r, Tensor b, Tensor sequenceLens, Tensor initialH, String direction,
                                       String[] activations, double[] activationAlpha, double[] activationBeta, Double clip, int layout) {
        return run(Cell.RNN, x, w, r, b, sequenceLens, initialH, null, null, direction, activations, activationAlpha,
                activationBeta, clip, false, false, layout);
    }

    /**
     * ONNX GRU (gates z, r, h in the weights' order); parameters as {@link #rnn} with 3*hidden gate
     * rows in w and r and 6*hidden biases, and two activations per direction (default Sigmoid, Tanh).
     * {@code linearBeforeReset} applies the reset gate after the recurrent projection of the candidate.
     */
    public static RecurrentOutputs gru(Tensor x, Tensor w, Tensor r, Tensor b, Tensor sequenceLens, Tensor initialH, String direction,
                                       String[] activations, double[] activationAlpha, double[] activationBeta, Double clip,
                                       boolean linearBeforeReset, int layout) {
        return run(Cell.GRU, x, w, r, b, sequenceLens, initialH, null, null, direction, activations, activationAlpha,
                activationBeta, clip, linearBeforeReset, false, layout);
    }

    /**
     * ONNX LSTM (gates i, o, f, c in the weights' order); parameters as {@link #rnn} with 4*hidden
     * gate rows in w and r, 8*hidden biases and three activations per direction (default Sigmoid, Tanh,
     * Tanh). {@code initialC} (like initialH) and the peepholes {@code p} (dirs, 3*hidden: i, o, f) may be
     * null; {@code inputForget} couples the forget gate to {@code 1 - i}.
     */
    public static RecurrentOutputs lstm(Tensor x, Tensor w, Tensor r, Tensor b, Tensor sequenceLens, Tensor initialH, Tensor initialC, Tensor p,
                                        String direction, String[] activations, double[] activationAlpha, double[] activationBeta, Double clip,
                                        boolean inputForget, int layout) {
        return run(Cell.LSTM, x, w, r, b, sequenceLens, initialH, initialC, p, direction, activations, activationAlpha,
                activationBeta, clip, false, inputForget, layout);
    }

    private enum Cell {
        RNN(1, "Tanh"), GRU(3, "Sigmoid", "Tanh"), LSTM(4, "Sigmoid", "Tanh", "Tanh");

        final int gates;
        final String[] defaults;

        Cell(int gates, String... defaults) {
            this.gates = gates;
            this.defaults = defaults;
        }

        String op() { return name().toLowerCase(Locale.ROOT); }
    }

    /** The inputs and attributes of one layer, after the checks, in sequence-major layout. */
    private record Layer(Cell cell, Tensor x, Tensor w, Tensor r, Tensor b, Tensor lens, Tensor h0, Tensor c0, Tensor p,
                         boolean reverseOnly, List<UnaryOperator<Tensor>> act, Double clip, boolean linearBeforeReset, boolean inputForget,
                         int hidden, DType ct) {}

    private static RecurrentOutputs run(Cell cell, Tensor x, Tensor w, Tensor r, Tensor b, Tensor sequenceLens, Tensor initialH, Tensor initialC,
                                       Tensor p, String direction, String[] activations, double[] alpha, double[] beta, Double clip,
                                       boolean linearBeforeReset, boolean inputForget, int layout) {
        String op = cell.op();
        if (layout != 0 && layout != 1) throw new IllegalArgumentException(op + ": layout must be 0 or 1, got " + layout);
        if (x.ndim() != 3) throw new IllegalArgumentException(op + ": input must be 3-D (" + (layout == 0 ? "seq, batch" : "batch, seq") + ", input), got " + x.shape());
        if (!x.dtype().isFloat()) throw new IllegalArgumentException(op + ": input must be a float tensor, got " + x.dtype());
        Tensor xs = layout == 0 ? x : x.transpose(0, 1);
        int t = xs.dim(0), batch = xs.dim(1), in = xs.dim(2);
        int dirs = switch (direction == null ? "" : direction) {
            case "forward", "reverse" -> 1;
            case "bidirectional" -> 2;
            default -> throw new IllegalArgumentException(op + ": unknown direction " + (direction == null ? "null" : "'" + direction + "'")
                    + "; valid are 'forward', 'reverse', 'bidirectional'");
        };
        int g = cell.gates;
        if (r.ndim() != 3 || r.dim(0) != dirs || r.dim(1) != g * r.dim(2)) {
            throw new IllegalArgumentException(op + ": R " + r.shape() + " must be (" + dirs + ", " + g + "*hidden, hidden) for direction " + direction);
        }
        int hidden = r.dim(2);
        expect(op, "W", w, dirs, g * hidden, in);
        if (b != null) expect(op, "B", b, dirs, 2 * g * hidden);
        if (p != null) expect(op, "P", p, dirs, 3 * hidden);
        Tensor h0 = initialH == null ? null : layout == 0 ? initialH : initialH.transpose(0, 1);
        Tensor c0 = initialC == null ? null : layout == 0 ? initialC : initialC.transpose(0, 1);
        if (h0 != null) expect(op, "initial_h (as dirs, batch, hidden)", h0, dirs, batch, hidden);
        if (c0 != null) expect(op, "initial_c (as dirs, batch, hidden)", c0, dirs, batch, hidden);
        Tensor lens = null;
        if (sequenceLens != null) {
            if (!sequenceLens.dtype().isInt() || sequenceLens.ndim() != 1 || sequenceLens.dim(0) != batch) {
                throw new IllegalArgumentException(op + ": sequence_lens " + sequenceLens.dtype() + sequenceLens.shape() + " must be 1-D integers of the batch size "
                        + batch);
            }
            lens = sequenceLens.cast(DType.I64).to(x.device());
        }
        List<UnaryOperator<Tensor>> act = activations(op, cell, dirs, activations, alpha, beta);
        DType ct = Precision.computeType(x.dtype());
        Layer l = new Layer(cell, xs.cast(ct), w.to(x.device()).cast(ct), r.to(x.device()).cast(ct), b == null ? null : b.to(x.device()).cast(ct), lens,
                h0 == null ? null : h0.to(x.device()).cast(ct), c0 == null ? null : c0.to(x.device()).cast(ct),
                p == null ? null : p.to(x.device()).cast(ct), direction.equals("reverse"), act, clip, linearBeforeReset, inputForget, hidden, ct);
        Tensor[] ys = new Tensor[dirs], hs = new Tensor[dirs], cs = new Tensor[dirs];
        for (int d = 0; d < dirs; d++) {
            Tensor[] out = direction(l, d, d == 1 || l.reverseOnly, t, batch);
            ys[d] = out[0];
            hs[d] = out[1];
            cs[d] = out[2];
        }
        DType dt = x.dtype();
        Tensor y = Tensor.stack(1, ys).cast(dt); // (seq, dirs, batch, hidden)
        Tensor yh = Tensor.stack(0, hs).cast(dt); // (dirs, batch, hidden)
        Tensor yc = cell == Cell.LSTM ? Tensor.stack(0, cs).cast(dt) : null;
        if (layout == 1) {
            y = y.permute(2, 0, 1, 3);
            yh = yh.transpose(0, 1);
            if (yc != null) yc = yc.transpose(0, 1);
        }
        return new RecurrentOutputs(y, yh, yc);
    }

    /** One direction: Y (seq, batch, hidden), the last hidden state and (LSTM) the last cell state. */
    private static Tensor[] direction(Layer l, int d, boolean reverse, int steps, int batch) {
        int h = l.hidden, g = l.cell.gates;
        Tensor x = l.x;
        if (reverse) x = l.lens == null ? x.flip(0) : x.reverseSequence(l.lens, 1, 0);
        Tensor w = l.w.slice(0, d, d + 1, 1).reshape(g * h, -1), r = l.r.slice(0, d, d + 1, 1).reshape(g * h, h);
        Tensor wb = null, rb = null;
        if (l.b != null) {
            Tensor bd = l.b.slice(0, d, d + 1, 1).reshape(2 * g * h);
            wb = bd.slice(0, 0, g * h, 1);
            rb = bd.slice(0, g * h, 2 * g * h, 1);
        }
        Tensor xw = x.matmul(w.mT()); // (seq, batch, g*h)
        if (wb != null) xw = xw.add(wb);
        Tensor state = l.h0 != null ? l.h0.slice(0, d, d + 1, 1).reshape(batch, h) : Tensor.zeros(l.ct, batch, h).to(x.device());
        Tensor cellState = l.cell != Cell.LSTM ? null
                : l.c0 != null ? l.c0.slice(0, d, d + 1, 1).reshape(batch, h) : Tensor.zeros(l.ct, batch, h).to(x.device());
        Tensor[] peep = new Tensor[3];
        if (l.p != null) for (int k = 0; k < 3; k++) peep[k] = l.p.slice(0, d, d + 1, 1).reshape(3 * h).slice(0, k * h, (k + 1) * h, 1);
        List<UnaryOperator<Tensor>> f = l.act.subList(d * l.cell.defaults.length, (d + 1) * l.cell.defaults.length);

        // one step, traced once and run once per time step (Tensor.scan): state h (and c), slices x_t (and whether
        // each batch entry is still within its length), constants R (and its bias, the peepholes)
        boolean lstm = l.cell == Cell.LSTM;
        List<Tensor> initial = lstm ? List.of(state, cellState) : List.of(state);
        List<Tensor> sequences = new ArrayList<>(List.of(xw));
        if (l.lens != null) sequences.add(l.lens.reshape(1, batch).gt(Tensor.arange(steps).to(x.device()).reshape(steps, 1)).reshape(steps, batch, 1));
        List<Tensor> constants = new ArrayList<>(List.of(r));
        if (rb != null) constants.add(rb);
        if (l.p != null) constants.addAll(List.of(peep));
        boolean bias = rb != null, peepholes = l.p != null;
        List<Tensor> out = Tensor.scan((st, sl, c) -> {
            Tensor prev = st.get(0), prevCell = lstm ? st.get(1) : null, xt = sl.get(0), rr = c.get(0), rbias = bias ? c.get(1) : null;
            Tensor[] pp = new Tensor[3];
            if (peepholes) for (int k = 0; k < 3; k++) pp[k] = c.get((bias ? 2 : 1) + k);
            Tensor rec = prev.matmul(rr.mT()); // (batch, g*h)
            Tensor next, nextCell = null;
            switch (l.cell) {
                case RNN -> next = f.get(0).apply(clip(l, add(xt.add(rec), rbias)));
                case GRU -> {
                    Tensor z = f.get(0).apply(clip(l, add(gate(xt, 0, h).add(gate(rec, 0, h)), gate(rbias, 0, h))));
                    Tensor reset = f.get(0).apply(clip(l, add(gate(xt, 1, h).add(gate(rec, 1, h)), gate(rbias, 1, h))));
                    Tensor cand = l.linearBeforeReset
                            ? gate(xt, 2, h).add(reset.mul(add(gate(rec, 2, h), gate(rbias, 2, h))))
                            : add(gate(xt, 2, h).add(reset.mul(prev).matmul(gate(rr, 2, h, 0).mT())), gate(rbias, 2, h));
                    Tensor hh = f.get(1).apply(clip(l, cand));
                    next = z.rsub(1.0).mul(hh).add(z.mul(prev));
                }
                default -> { // LSTM, gates i, o, f, c
                    Tensor all = add(xt.add(rec), rbias);
                    Tensor i = f.get(0).apply(clip(l, add(gate(all, 0, h), pp[0] == null ? null : pp[0].mul(prevCell))));
                    Tensor fg = l.inputForget ? i.rsub(1.0)
                            : f.get(0).apply(clip(l, add(gate(all, 2, h), pp[2] == null ? null : pp[2].mul(prevCell))));
                    Tensor cc = f.get(1).apply(clip(l, gate(all, 3, h)));
                    nextCell = fg.mul(prevCell).add(i.mul(cc));
                    Tensor o = f.get(0).apply(clip(l, add(gate(all, 1, h), pp[1] == null ? null : pp[1].mul(nextCell))));
                    next = o.mul(f.get(2).apply(nextCell));
                }
            }
            Tensor y = next;
            if (l.lens != null) {
                Tensor live = sl.get(1);
                y = Tensor.where(live, next, Tensor.scalar(0.0, l.ct));
                next = Tensor.where(live, next, prev);
                if (nextCell != null) nextCell = Tensor.where(live, nextCell, prevCell);
            }
            return lstm ? List.of(next, nextCell, y) : List.of(next, y);
        }, initial, sequences, constants);
        state = out.getFirst();
        if (lstm) cellState = out.get(1);
        Tensor y = out.getLast();
        if (reverse) y = l.lens == null ? y.flip(0) : y.reverseSequence(l.lens, 1, 0);
        return new Tensor[] {y, state, cellState};
    }

    /** Gate k (of width h) of the last axis; null stays null. */
    private static Tensor gate(Tensor t, int k, int h) { return t == null ? null : t.slice(t.ndim() - 1, k * h, (k + 1) * h, 1); }

    /** Gate k of a weight matrix's rows (axis {@code axis}). */
    private static Tensor gate(Tensor t, int k, int h, int axis) { return t.slice(axis, k * h, (k + 1) * h, 1); }

    private static Tensor add(Tensor a, Tensor b) { return b == null ? a : a.add(b); }

    private static Tensor clip(Layer l, Tensor t) { return l.clip == null ? t : t.clamp(-l.clip, l.clip); }

    private static void expect(String op, String name, Tensor t, int... dims) {
        if (!Arrays.equals(t.dims(), dims)) throw new IllegalArgumentException(op + ": " + name + " " + t.shape() + " must have shape " + Shape.of(dims));
    }

    /**
     * The activation functions, per direction in order ({@code f, g, h}), with ONNX's defaults. Alpha and
     * beta values are consumed in order by the functions that take them (as ONNX Runtime does).
     */
    private static List<UnaryOperator<Tensor>> activations(String op, Cell cell, int dirs, String[] names, double[] alpha, double[] beta) {
        int per = cell.defaults.length;
        String[] n = names;
        if (n == null || n.length == 0) {
            n = new String[per * dirs];
            for (int d = 0; d < dirs; d++) System.arraycopy(cell.defaults, 0, n, d * per, per);
        }
        if (n.length != per * dirs) {
            throw new IllegalArgumentException(op + ": " + n.length + " activations " + Arrays.toString(n) + ", expected " + per * dirs + " (" + per
                    + " per direction)");
        }
        int ai = 0, bi = 0;
        List<UnaryOperator<Tensor>> out = new ArrayList<>();
        for (String name : n) {
            String key = name == null ? "" : name.toLowerCase(Locale.ROOT);
            boolean usesAlpha = switch (key) {
                case "affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu" -> true;
                default -> false;
            };
            boolean usesBeta = key.equals("affine") || key.equals("scaledtanh") || key.equals("hardsigmoid");
            double a = usesAlpha && alpha != null && ai < alpha.length ? alpha[ai++] : switch (key) {
                case "leakyrelu" -> 0.01;
                case "hardsigmoid" -> 0.2;
                default -> 1.0;
            };
            double b = usesBeta && beta != null && bi < beta.length ? beta[bi++] : switch (key) {
                case "affine" -> 0.0;
                case "hardsigmoid" -> 0.5;
                default -> 1.0;
            };
            out.add(switch (key) {
                case "relu" -> Tensor::relu;
                case "tanh" -> Tensor::tanh;
                case "sigmoid" -> Tensor::sigmoid;
                case "affine" -> t -> t.mul(a).add(b);
                case "leakyrelu" -> t -> t.leakyRelu(a);
                case "thresholdedrelu" -> t -> t.thresholdedRelu(a);
                case "scaledtanh" -> t -> t.mul(b).tanh().mul(a);
                case "hardsigmoid" -> t -> t.hardSigmoid(a, b);
                case "elu" -> t -> t.elu(a);
                case "softsign" -> Tensor::softsign;
                case "softplus" -> Tensor::softplus;
                default -> throw new IllegalArgumentException(op + ": unknown activation '" + name + "'; valid are Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                        + "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus");
            });
        }
        return out;
    }
}
