package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The loop-carried sequences of a Loop that are lists the body only appends to: TorchScript exports a Python list built in a
 * loop ({@code ys.append(y)}, then {@code torch.stack(ys)} or {@code torch.cat(ys)}) as a sequence state that starts as
 * SequenceEmpty and whose next value is {@code SequenceInsert(state, y)} at the back. Such a state holds exactly the
 * appended tensor of every iteration, in order: a scan output by another name. So does a tensor a decoder grows with
 * {@code torch.cat([tokens, tok])} (Concat of the state and the element, the extended value read nowhere else): its initial value,
 * then the scan output's rows joined along the axis; the body may also read the tensor's last element ({@code tokens[-1]}),
 * which it is then given from a one-long tail carried beside the loop's states, or the whole of it so far, which it is
 * given from a buffer carried at the most the tensor may grow to, sized per iteration by its length. {@link LoopOp} builds it as one, so a loop
 * carrying it is one body plan (not built once per iteration), under {@link OnnxModel#run} and in a prepared plan, where its
 * length is known only when the plan runs ({@link OnnxValue.StackedSequence}).
 */
final class ListAccumulators {
    private ListAccumulators() {}

    /**
     * The accumulators among the loop's {@code n} states, in state order, where every host-valued state (a sequence or an
     * optional) is one; null when some host-valued state is not (the loop is then built per iteration, as before). A tensor
     * state the body only extends with Concat ({@code tokens = torch.cat([tokens, tok])}) is one too ({@link Grows}); other
     * tensor states are carried.
     */
    static List<Accumulator> of(OpContext c, OnnxGraph body, int n, Set<Integer> readWhole) {
        List<Accumulator> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            OnnxValue initial = c.builder().hostValue(c.node.inputs().get(2 + i));
            if (initial == null) {
                List<Node> lastReads = new ArrayList<>(), wholeReads = new ArrayList<>();
                Node concat = appendsOnly(body, i, "Concat", 2, lastReads, wholeReads);
                if (concat == null) continue; // a carried tensor
                Tensor init = c.in(2 + i);
                if (init.ndim() == 0 || init.shape().isSymbolic()) continue;
                long axis = concat.attrs().i("axis", 0);
                if (axis < -init.ndim() || axis >= init.ndim()) continue; // the Concat node reports its own axis
                int a = (int) (axis < 0 ? axis + init.ndim() : axis);
                // a Slice or Gather found to read more than the last element is a read of the whole
                for (Node r : List.copyOf(lastReads)) {
                    if (readWhole.contains(r.index())) {
                        lastReads.remove(r);
                        wholeReads.add(r);
                    }
                }
                if (!lastReads.isEmpty() && init.dim(a) == 0) continue; // no last element to read at first: carried (and built per iteration)
                out.add(new Grows(i, a, init, concat, List.copyOf(lastReads), List.copyOf(wholeReads)));
                continue;
            }
            if (!(initial instanceof OnnxValue.SequenceValue s) || !s.elements().isEmpty() || appendsOnly(body, i, "SequenceInsert", 3, null, null) == null) return null;
            out.add(new ListOf(i, s.dtype()));
        }
        return out;
    }

    /**
     * The node that gives the body's next value of state {@code i} where it is {@code op(input, tensor)} (a SequenceInsert at
     * the back, a Concat of two) and nothing else reads the state's input (no SequenceLength or Slice of it, no nested graph)
     * or the extended value: then an empty value in the input's place gives the iteration's element, whatever ran before.
     * Else null. {@code maxInputs}: the node's inputs, the ones past two left empty. Where {@code lastReads} and
     * {@code wholeReads} are given, other nodes may read the state's input (never the extended value): a Slice or Gather
     * whose data it is is added to {@code lastReads} (a decoder's {@code tokens[-1]}, which
     * {@link GrownTensors#lastReadProblem} checks reads only the last element once the body is built), any other to
     * {@code wholeReads} (attention over the tokens so far).
     */
    private static Node appendsOnly(OnnxGraph body, int i, String op, int maxInputs, List<Node> lastReads, List<Node> wholeReads) {
        String in = body.inputs().get(2 + i), next = body.outputs().get(1 + i);
        if (body.outputs().indexOf(next) != 1 + i || body.outputs().lastIndexOf(next) != 1 + i || body.inputs().contains(next)) return null;
        // the state's input given out as it is (a scan output of the list so far) is a read of it too
        if (body.outputs().contains(in)) return null;
        Node append = null;
        for (Node node : body.nodes()) {
            boolean readsIn = node.inputs().contains(in) || OnnxGraph.nestedReads(node).contains(in);
            boolean readsNext = node.inputs().contains(next) || OnnxGraph.nestedReads(node).contains(next);
            if (node.outputs().contains(next)) {
                List<String> ins = node.inputs();
                if (!node.opType().equals(op) || !node.domainName().equals("ai.onnx") || ins.size() < 2 || ins.size() > maxInputs
                        || ins.subList(2, ins.size()).stream().anyMatch(x -> !x.isEmpty()) || !ins.getFirst().equals(in) || ins.get(1).equals(in)
                        || OnnxGraph.nestedReads(node).contains(in)) {
                    return null;
                }
                append = node;
            } else if (readsIn && !readsNext && lastReads != null && (node.opType().equals("Slice") || node.opType().equals("Gather"))
                    && node.domainName().equals("ai.onnx") && node.inputs().getFirst().equals(in) && node.inputs().lastIndexOf(in) == 0
                    && !OnnxGraph.nestedReads(node).contains(in)) {
                lastReads.add(node);
            } else if (readsIn && !readsNext && wholeReads != null) {
                wholeReads.add(node);
            } else if (readsIn || readsNext) {
                return null;
            }
        }
        return append;
    }

    /** A loop state the body appends one element to per iteration. */
    sealed interface Accumulator permits ListOf, Grows {
        /** The state's index among the loop's N. */
        int state();
    }

    /** State {@code state} of the loop, a list of {@code dtype} tensors the body appends one to per iteration. */
    record ListOf(int state, DType dtype) implements Accumulator {}

    /**
     * State {@code state} of the loop, a tensor starting as {@code initial} that the body extends along {@code axis} by one
     * element per iteration ({@code concat}): its final value is {@code initial} joined with every iteration's element, in
     * order. {@code lastReads}: the body's Slice and Gather nodes that read the state's last element ({@code tokens[-1]}),
     * which read a one-long tail carried beside the loop's states instead; {@code wholeReads}: the nodes that read more of it
     * (attention over the tokens so far), which read the tensor as it is when the iteration starts, carried at the most it
     * may grow to with its length bound per iteration ({@link GrownTensors.Whole}). Both empty where the body reads it
     * nowhere else.
     */
    record Grows(int state, int axis, Tensor initial, Node concat, List<Node> lastReads, List<Node> wholeReads) implements Accumulator {}
}
