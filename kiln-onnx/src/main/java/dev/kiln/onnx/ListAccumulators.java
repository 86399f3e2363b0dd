package dev.kiln.onnx;

import dev.kiln.types.DType;

import java.util.ArrayList;
import java.util.List;

/**
 * The loop-carried sequences of a Loop that are lists the body only appends to: TorchScript exports a Python list built in a
 * loop ({@code ys.append(y)}, then {@code torch.stack(ys)} or {@code torch.cat(ys)}) as a sequence state that starts as
 * SequenceEmpty and whose next value is {@code SequenceInsert(state, y)} at the back. Such a state holds exactly the
 * appended tensor of every iteration, in order: a scan output by another name. {@link LoopOp} builds it as one, so a loop
 * carrying it is one body plan (not built once per iteration) and runs in a prepared plan, where its length is known only
 * when the plan runs ({@link OnnxValue.StackedSequence}).
 */
final class ListAccumulators {
    private ListAccumulators() {}

    /**
     * The accumulators among the loop's {@code n} states, in state order, where every host-valued state (a sequence or an
     * optional) is one; null when some host-valued state is not (the loop is then built per iteration, as before).
     */
    static List<Accumulator> of(OpContext c, OnnxGraph body, int n) {
        List<Accumulator> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            OnnxValue initial = c.builder().hostValue(c.node.inputs().get(2 + i));
            if (initial == null) continue; // a tensor state
            if (!(initial instanceof OnnxValue.SequenceValue s) || !s.elements().isEmpty() || !appendsOnly(body, i)) return null;
            out.add(new Accumulator(i, s.dtype()));
        }
        return out;
    }

    /**
     * Whether the body's next value of state {@code i} is {@code SequenceInsert(input, tensor)} at the back and nothing else
     * reads the state's input (no SequenceLength or SequenceAt of it, no nested graph) or the appended sequence: then an
     * empty sequence in its place gives the iteration's element, whatever ran before.
     */
    private static boolean appendsOnly(OnnxGraph body, int i) {
        String in = body.inputs().get(2 + i), next = body.outputs().get(1 + i);
        if (body.outputs().indexOf(next) != 1 + i || body.outputs().lastIndexOf(next) != 1 + i) return false;
        Node insert = null;
        for (Node node : body.nodes()) {
            boolean readsIn = node.inputs().contains(in) || OnnxGraph.nestedReads(node).contains(in);
            boolean readsNext = node.inputs().contains(next) || OnnxGraph.nestedReads(node).contains(next);
            if (node.outputs().contains(next)) {
                if (!node.opType().equals("SequenceInsert") || !node.domainName().equals("ai.onnx") || node.inputs().size() < 2
                        || node.inputs().size() > 2 && !node.inputs().get(2).isEmpty() || !node.inputs().getFirst().equals(in)
                        || node.inputs().get(1).equals(in)) {
                    return false;
                }
                insert = node;
            } else if (readsIn || readsNext) {
                return false;
            }
        }
        return insert != null;
    }

    /** State {@code state} of the loop, a list of {@code dtype} tensors the body appends one to per iteration. */
    record Accumulator(int state, DType dtype) {}
}
