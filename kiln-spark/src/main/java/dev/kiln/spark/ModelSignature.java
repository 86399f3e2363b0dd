package dev.kiln.spark;

import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.ValueInfo;

import java.io.Serial;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * What rows a model scores: its inputs and outputs per row, and its batch axis. Every input and output must lead with
 * one batch axis, either symbolic (the same name throughout, e.g. {@code batch}: one plan serves any batch up to the
 * batch size) or fixed at 1 (a model exported for one row: it runs one row at a time); every other axis must be fixed,
 * since a Spark column holds one flat array per row.
 *
 * @param source      the model file, for messages
 * @param inputs      the inputs, in model order
 * @param outputs     the outputs, in model order
 * @param batchSymbol the name of the symbolic batch axis, or null for a model fixed at one row
 */
record ModelSignature(String source, List<TensorSlot> inputs, List<TensorSlot> outputs, String batchSymbol) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    ModelSignature {
        inputs = List.copyOf(inputs);
        outputs = List.copyOf(outputs);
    }

    /** Whether one run can score several rows. */
    boolean batched() { return batchSymbol != null; }

    /**
     * The signature of {@code model}.
     *
     * @throws IllegalArgumentException naming the value and axis if the model does not have the shape described above
     */
    static ModelSignature of(OnnxModel model, String source) {
        if (model.inputs().isEmpty()) throw new IllegalArgumentException("model " + source + " has no inputs: there is nothing to feed from a row");
        String[] symbol = {null};
        boolean[] fixed = {false};
        List<TensorSlot> ins = new ArrayList<>(), outs = new ArrayList<>();
        for (ValueInfo v : model.inputs()) ins.add(slot(v, "input", source, symbol, fixed));
        for (ValueInfo v : model.outputs()) outs.add(slot(v, "output", source, symbol, fixed));
        if (symbol[0] != null && fixed[0]) {
            throw new IllegalArgumentException("model " + source + " mixes a symbolic batch axis '" + symbol[0] + "' with values whose leading axis is"
                    + " fixed at 1; kiln-spark needs one batch axis on every input and output");
        }
        return new ModelSignature(source, ins, outs, symbol[0]);
    }

    private static TensorSlot slot(ValueInfo v, String what, String source, String[] symbol, boolean[] fixed) {
        String where = what + " '" + v.name() + "' (" + v + ") of model " + source;
        // a sequence, optional or string tensor has no column type: refused here, naming it, rather than when a batch runs
        if (!v.isTensor()) throw new IllegalArgumentException(where + " is not a tensor; kiln-spark scores models whose inputs and outputs are tensors");
        if (v.dims() == null || v.dims().isEmpty()) {
            throw new IllegalArgumentException(where + " declares no batch axis; kiln-spark needs a leading batch axis (symbolic, or fixed at 1)");
        }
        ValueInfo.Dim lead = v.dims().getFirst();
        if (lead.isSymbolic()) {
            if (symbol[0] != null && !symbol[0].equals(lead.symbol())) {
                throw new IllegalArgumentException(where + " leads with axis '" + lead.symbol() + "', another value with '" + symbol[0]
                        + "'; kiln-spark needs one batch axis shared by every input and output");
            }
            symbol[0] = lead.symbol();
        } else if (lead.isFixed() && lead.size() == 1) {
            fixed[0] = true;
        } else {
            throw new IllegalArgumentException(where + " leads with axis " + lead + "; kiln-spark needs a leading batch axis (symbolic, or fixed at 1)");
        }
        int[] row = new int[v.dims().size() - 1];
        for (int k = 1; k < v.dims().size(); k++) {
            ValueInfo.Dim d = v.dims().get(k);
            if (!d.isFixed()) {
                throw new IllegalArgumentException(where + " has axis " + k + " of open size (" + d + "); a row must have a fixed shape"
                        + " (one array per row and column)");
            }
            row[k - 1] = Math.toIntExact(d.size());
        }
        return new TensorSlot(v.name(), v.dtype(), row);
    }
}
