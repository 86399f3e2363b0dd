"""Models with control flow exported from PyTorch the way users export them, for kiln-onnx's TorchExportsTest.

Writes kiln-onnx/src/test/resources/torch/<case>/ in the ONNX backend-test layout (model.onnx, test_data_set_N/input_N.pb
and output_N.pb; nms_head has four data sets, one selecting nothing, for TorchExportsTest's prepared plan). Every model is made by torch.onnx.export(..., dynamo=False) (the TorchScript exporter) and the expected
outputs are PyTorch's own, from running the module on the same inputs; ONNX Runtime runs each exported model too, and must
agree with PyTorch before anything is written.

Cases:
  script_if_while   a torch.jit.script'ed module: an `if` on the sign of the input's sum, then a `while` loop whose
                    condition depends on the data (scale until the norm passes a threshold), counting its iterations.
                    TorchScript exports the while loop as Loop with M = INT64_MAX and a condition the body computes
  greedy_decode     a scripted greedy decoder: embedding, a tanh recurrent cell, an argmax over the vocabulary, the
                    token appended to the output with torch.cat (a loop-carried value that grows by one each step) and a
                    `break` when the end-of-sequence token comes (the loop's condition the body computes). Four data sets
                    (four starts), for TorchExportsTest's prepared plan
  script_while_list a torch.jit.script'ed `while` loop that appends to a Python list (`ys.append(torch.tanh(y))`), then
                    torch.stack(ys, 1) and len(ys): TorchScript exports the list as a Loop-carried sequence (SequenceEmpty,
                    SequenceInsert in the body, ConcatFromSequence and SequenceLength after), M = INT64_MAX. Three data
                    sets: a few iterations, many (more than a prepared plan first reserves rows for), and one
  greedy_list       a scripted greedy decoder that collects its tokens in a list and returns torch.cat(tokens): the
                    loop's length from the input max_len and a `break` at the end-of-sequence token. Three data sets: one
                    ending at EOS, one running all 100 steps, one of max_len 1 (max_len 0 would make torch.cat of an
                    empty list, which PyTorch refuses)
  script_if_sizes   a torch.jit.script'ed `if` on the input's sum whose branches give different sizes: x[x > 0] (NonZero,
                    GatherND: a data-dependent count) or x[:2] * 2. Four data sets (3, 2, 4 and 1 elements), for a prepared
                    plan that selects the branch when it runs
  greedy_last       a scripted greedy decoder that reads its last token from the tokens it grows (`tok = tokens[-1:]`,
                    exported as a Slice of the loop-carried tensor from -1 to INT64_MAX) instead of carrying it beside them,
                    with a `break` at the end-of-sequence token. Four data sets (four starts, of different lengths)
  greedy_attend     a scripted greedy decoder that attends over all the tokens it has made so far (embeddings of
                    `tokens`, softmax of their products with the state, the weighted sum) before choosing the next,
                    grown with torch.cat and a `break` at the end-of-sequence token: the body reads the whole of a
                    loop-carried tensor whose length changes every iteration. Four data sets (prompts of two tokens, of
                    different decode lengths). Generated alone with `gen_torch_exports.py greedy_attend`
  greedy_attend_last the same, its query the embedding of the last token (`tokens[-1:]`) beside the attention over all
                    of them: both reads of the grown tensor in one body. Four data sets. Alone: `... greedy_attend_last`
  nms_two_class_head a detector head with two classes of scores over its boxes, ending in NonMaxSuppression, the kept
                    boxes' scores read by advanced indexing (exported as Shape, Concat and Reshape of the selected count)
                    and the best three kept by TopK. Three data sets (each keeps three boxes or more, which TopK needs).
                    Alone: `... nms_two_class_head`
  script_rnn_early_exit a scripted recurrent cell over the rows of its input (`x[t:t + 1]`, a Slice from the loop's
                    iteration to it plus one) that stops once its state's sum passes a limit (an input), counting its
                    steps. Three data sets (stops after a few steps, runs all 7, stops at once). Alone: `... script_rnn_early_exit`
  nms_head          a tiny detector head (1x1 convolutions giving boxes and scores over a 4x4 grid) ending in ONNX
                    NonMaxSuppression and a gather of the kept boxes. torchvision is installed here but does not load
                    against this torch ("operator torchvision::nms does not exist"), so NMS is an autograd.Function whose
                    forward is a plain PyTorch NMS and whose `symbolic` emits ONNX NonMaxSuppression: the ONNX graph is
                    what torchvision.ops.nms exports to, and the expected outputs are that forward's

Run with the python3 that has torch, onnx and onnxruntime:
  python3 tools/golden/gen_torch_exports.py
"""
import io
import os
from typing import List

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "kiln-onnx", "src", "test", "resources", "torch")
torch.manual_seed(17)


def export(case, module, args, input_names, output_names, opset=17, more_args=()):
    """Exports `module` on `args` as test_data_set_0; each of `more_args` (inputs of the same shapes) is one more data set
    of the same model (test_data_set_1, ...), so that one prepared plan is checked on several inputs."""
    module.eval()
    sets = []
    for set_args in (args,) + tuple(more_args):  # PyTorch's outputs first, before the exporter traces the module
        with torch.no_grad():
            expected = module(*set_args)
        sets.append((set_args, expected if isinstance(expected, (tuple, list)) else (expected,)))
    buf = io.BytesIO()
    torch.onnx.export(module, args, buf, input_names=input_names, output_names=output_names, opset_version=opset, dynamo=False)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    d = os.path.join(OUT, case)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for s, (set_args, expected) in enumerate(sets):
        inputs = {n: a.numpy() for n, a in zip(input_names, set_args)}
        # the exporter may drop inputs the graph does not read
        feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
        got = sess.run(None, feed)
        for name, g, e in zip(output_names, got, expected):
            e = e.detach().numpy()
            assert g.shape == e.shape and g.dtype == e.dtype, (case, s, name, g.shape, e.shape, g.dtype, e.dtype)
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=f"{case} set {s} {name}: ONNX Runtime and PyTorch differ")
        data = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(data, exist_ok=True)
        for k, i in enumerate(model.graph.input):
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(inputs[i.name], i.name).SerializeToString())
        for k, (o, e) in enumerate(zip(model.graph.output, expected)):
            with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(e.detach().numpy(), o.name).SerializeToString())
        print(f"{case} set {s}: outputs {[tuple(e.shape) for e in expected]}")
    size = os.path.getsize(os.path.join(d, "model.onnx"))
    assert size < 512 * 1024, (case, size)
    print(f"{case}: {size} bytes, ops {sorted({n.op_type for n in model.graph.node})}")


class IfWhile(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        if bool(x.sum() > 0):
            y = x * 2.0
        else:
            y = -x + 0.5
        n = torch.zeros((), dtype=torch.long)
        while bool(y.abs().sum() < 100.0):
            y = y * 1.5 + 0.25
            n = n + 1
        return y, n


class Greedy(torch.nn.Module):
    def __init__(self, vocab: int = 11, hidden: int = 8, max_len: int = 12, eos: int = 0):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, hidden)
        self.w = torch.nn.Linear(hidden, hidden)
        self.u = torch.nn.Linear(hidden, hidden, bias=False)
        self.out = torch.nn.Linear(hidden, vocab)
        self.max_len = max_len
        self.eos = eos

    def forward(self, start: torch.Tensor, h: torch.Tensor):
        tokens = start
        tok = start
        for _ in range(self.max_len):
            h = torch.tanh(self.w(self.emb(tok)) + self.u(h))
            tok = self.out(h).argmax(-1)
            tokens = torch.cat([tokens, tok])
            if bool(tok[0] == self.eos):
                break
        return tokens, h


class GreedyLast(Greedy):
    def forward(self, start: torch.Tensor, h: torch.Tensor):
        tokens = start
        for _ in range(self.max_len):
            tok = tokens[-1:]
            h = torch.tanh(self.w(self.emb(tok)) + self.u(h))
            nxt = self.out(h).argmax(-1)
            tokens = torch.cat([tokens, nxt])
            if bool(nxt[0] == self.eos):
                break
        return tokens, h


class GreedyAttend(Greedy):
    def forward(self, start: torch.Tensor, h: torch.Tensor):
        tokens = start
        for _ in range(self.max_len):
            e = self.emb(tokens)
            weights = torch.softmax(self.w(h) @ e.t(), -1)
            h = torch.tanh(weights @ e + self.u(h))
            nxt = self.out(h).argmax(-1)
            tokens = torch.cat([tokens, nxt])
            if bool(nxt[0] == self.eos):
                break
        return tokens, h


class GreedyAttendLast(Greedy):
    def forward(self, start: torch.Tensor, h: torch.Tensor):
        tokens = start
        for _ in range(self.max_len):
            e = self.emb(tokens)
            last = self.emb(tokens[-1:])
            weights = torch.softmax(last @ e.t(), -1)
            h = torch.tanh(self.w(weights @ e) + self.u(h))
            nxt = self.out(h).argmax(-1)
            tokens = torch.cat([tokens, nxt])
            if bool(nxt[0] == self.eos):
                break
        return tokens, h


class RnnEarlyExit(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(3, 5)
        self.u = torch.nn.Linear(5, 5, bias=False)

    def forward(self, x: torch.Tensor, limit: torch.Tensor):
        h = torch.zeros(1, 5)
        steps = 0
        for t in range(x.size(0)):
            h = torch.tanh(self.w(x[t:t + 1]) + self.u(h))
            steps += 1
            if bool(h.sum() > limit):
                break
        return h, torch.tensor(steps)


class WhileList(torch.nn.Module):
    def forward(self, x: torch.Tensor, limit: torch.Tensor):
        ys: List[torch.Tensor] = []
        y = x
        while bool(y.abs().sum() < limit):
            y = y * 1.1 + 0.05
            ys.append(torch.tanh(y))
        return torch.stack(ys, 1), y, torch.tensor(len(ys))


class GreedyList(torch.nn.Module):
    def __init__(self, vocab: int = 11, hidden: int = 8, eos: int = 0):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, hidden)
        self.w = torch.nn.Linear(hidden, hidden)
        self.out = torch.nn.Linear(hidden, vocab)
        self.eos = eos

    def forward(self, start: torch.Tensor, h: torch.Tensor, max_len: torch.Tensor):
        tokens: List[torch.Tensor] = []
        tok = start
        for _ in range(int(max_len)):
            h = torch.tanh(self.w(self.emb(tok)) + h)
            tok = self.out(h).argmax(-1)
            tokens.append(tok)
            if bool(tok[0] == self.eos):
                break
        return torch.cat(tokens), h


class IfSizes(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        if bool(x.sum() > 0):
            y = x[x > 0]
        else:
            y = x[:2] * 2.0
        return y


def nms_reference(boxes, scores, max_out, iou_threshold, score_threshold):
    """ONNX NonMaxSuppression (center_point_box 0) in PyTorch: boxes [B, N, 4] as y1 x1 y2 x2, scores [B, C, N]."""
    selected = []
    for b in range(boxes.shape[0]):
        bx = boxes[b]
        y1 = torch.minimum(bx[:, 0], bx[:, 2]); y2 = torch.maximum(bx[:, 0], bx[:, 2])
        x1 = torch.minimum(bx[:, 1], bx[:, 3]); x2 = torch.maximum(bx[:, 1], bx[:, 3])
        area = (y2 - y1) * (x2 - x1)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [int(i) for i in torch.argsort(s, descending=True, stable=True) if float(s[i]) > score_threshold]
            kept = []
            for i in order:
                if len(kept) >= max_out:
                    break
                ok = True
                for j in kept:
                    ih = torch.clamp(torch.minimum(y2[i], y2[j]) - torch.maximum(y1[i], y1[j]), min=0)
                    iw = torch.clamp(torch.minimum(x2[i], x2[j]) - torch.maximum(x1[i], x1[j]), min=0)
                    inter = ih * iw
                    union = area[i] + area[j] - inter
                    if union > 0 and float(inter / union) > iou_threshold:
                        ok = False
                        break
                if ok:
                    kept.append(i)
            selected += [[b, c, i] for i in kept]
    return torch.tensor(selected, dtype=torch.long).reshape(-1, 3)


class Nms(torch.autograd.Function):
    @staticmethod
    def forward(ctx, boxes, scores):
        return nms_reference(boxes, scores, 5, 0.3, 0.2)

    @staticmethod
    def symbolic(g, boxes, scores):
        max_out = g.op("Constant", value_t=torch.tensor([5], dtype=torch.long))
        iou = g.op("Constant", value_t=torch.tensor([0.3], dtype=torch.float))
        score = g.op("Constant", value_t=torch.tensor([0.2], dtype=torch.float))
        return g.op("NonMaxSuppression", boxes, scores, max_out, iou, score)


class NmsHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.box = torch.nn.Conv2d(3, 4, 1)
        self.score = torch.nn.Conv2d(3, 1, 1)

    def forward(self, features):
        n = features.shape[2] * features.shape[3]
        # boxes around each cell's centre: corners from the regression, so neighbours overlap
        reg = self.box(features).flatten(2).transpose(1, 2)  # [1, 16, 4]
        idx = torch.arange(n, dtype=torch.float32)
        cy, cx = (idx // features.shape[3]).reshape(1, n, 1), (idx % features.shape[3]).reshape(1, n, 1)
        half = torch.sigmoid(reg[:, :, 2:]) + 0.5
        centre = torch.cat([cy, cx], dim=2) + 0.5 * torch.tanh(reg[:, :, :2])
        boxes = torch.cat([centre - half, centre + half], dim=2)  # y1 x1 y2 x2
        scores = torch.sigmoid(self.score(features).flatten(2))  # [1, 1, 16]
        selected = Nms.apply(boxes, scores)
        kept = selected[:, 2]
        return selected, boxes[0].index_select(0, kept), scores[0, 0].index_select(0, kept)


class TwoClassNmsHead(torch.nn.Module):
    """Two classes of scores over the same boxes; the kept boxes' scores read by advanced indexing, the best three kept."""
    def __init__(self):
        super().__init__()
        self.box = torch.nn.Conv2d(3, 4, 1)
        self.score = torch.nn.Conv2d(3, 2, 1)

    def forward(self, f):
        b = self.box(f).flatten(2).transpose(1, 2)  # [1, 16, 4]
        xy = b[..., :2].sigmoid() * 10
        boxes = torch.cat([xy, xy + b[..., 2:].exp()], -1)
        scores = self.score(f).flatten(2).sigmoid()  # [1, 2, 16]
        selected = Nms.apply(boxes, scores)
        kept_scores = scores[0, selected[:, 1], selected[:, 2]]
        top = torch.topk(kept_scores, 3)
        return selected, boxes[0].index_select(0, selected[:, 2]).index_select(0, top.indices), top.values


def main():
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    export("script_if_while", torch.jit.script(IfWhile()), (x,), ["x"], ["y", "iterations"])
    export("script_if_while_negative", torch.jit.script(IfWhile()), (-x,), ["x"], ["y", "iterations"])
    greedy = Greedy()
    start, h = torch.tensor([3], dtype=torch.long), torch.randn(1, 8)
    # a start where EOS comes before max_len, so the loop ends early
    scripted = torch.jit.script(greedy)
    for s in range(1, 11):
        toks, _ = scripted(torch.tensor([s], dtype=torch.long), h)
        if toks.shape[0] < 13:
            start = torch.tensor([s], dtype=torch.long)
            break
    # more starts for one prepared plan: every length the loop may take differs in the plan's sized output
    lengths = {s: scripted(torch.tensor([s], dtype=torch.long), h)[0].shape[0] for s in range(0, 11)}
    longest_first = sorted((s for s in lengths if s != int(start[0])), key=lambda s: -lengths[s])
    others = [(torch.tensor([s], dtype=torch.long), h) for s in longest_first[:3]]
    export("greedy_decode", scripted, (start, h), ["start", "h"], ["tokens", "h_final"], more_args=others)
    features = torch.randn(1, 3, 4, 4)
    head = NmsHead()
    # more feature maps for one prepared plan: another draw, one whose scores all fall below the score threshold (features
    # against the score convolution's weights: nothing selected)
    against = -20.0 * torch.sign(head.score.weight.detach()).reshape(1, 3, 1, 1).expand(1, 3, 4, 4).contiguous()
    # and one where only three far-apart cells score above it (fewer than the maximum of 5)
    few = against.clone()
    for y, x in ((0, 0), (0, 3), (3, 1)):
        few[0, :, y, x] = -few[0, :, y, x]
    more = [(torch.randn(1, 3, 4, 4) * 2,), (against,), (few,)]
    export("nms_head", head, (features,), ["features"], ["selected", "boxes", "scores"], more_args=more)
    # after nms_head, so that the random draws of the cases before stay those their committed data came from
    x = torch.full((2, 3), 0.1)
    limit = lambda v: torch.tensor(v, dtype=torch.float32)
    export("script_while_list", torch.jit.script(WhileList()), (x, limit(10.0)), ["x", "limit"], ["ys", "y", "length"],
           more_args=[(x, limit(1e4)), (x * 40, limit(25.0))])
    decoder = GreedyList()
    h = torch.randn(1, 8)
    # an end-of-sequence token that one start reaches within 12 steps and another never does in 100
    for eos in range(11):
        decoder.eos = eos
        listed = torch.jit.script(decoder)
        lengths = {s: listed(torch.tensor([s]), h, torch.tensor(100))[0].shape[0] for s in range(0, 11)}
        if any(n < 12 for n in lengths.values()) and any(n == 100 for n in lengths.values()):
            break
    else:
        raise AssertionError("no end-of-sequence token ends some decodes early and not others")
    early = next(s for s, n in lengths.items() if n < 12)
    never = next(s for s, n in lengths.items() if n == 100)
    print(f"greedy_list EOS {eos}, lengths by start:", lengths)
    export("greedy_list", listed, (torch.tensor([early]), h, torch.tensor(12)), ["start", "h", "max_len"], ["tokens", "h_final"],
           more_args=[(torch.tensor([never]), h, torch.tensor(100)), (torch.tensor([never]), h, torch.tensor(1))])

    sizes = [[1.0, -2.0, 3.0, 0.5], [-1.0, -2.0, 3.0, -0.5], [1.0, 2.0, 3.0, 4.0], [-1.0, -2.0, 9.0, -0.5]]
    export("script_if_sizes", torch.jit.script(IfSizes()), (torch.tensor(sizes[0]),), ["x"], ["y"],
           more_args=[(torch.tensor(v),) for v in sizes[1:]])

    # after script_if_sizes, so that the random draws of the cases before stay those their committed data came from
    decoder = GreedyLast()
    h = torch.randn(1, 8)
    # an end-of-sequence token that ends some decodes early and not others: the starts of as many different lengths
    for eos in range(11):
        decoder.eos = eos
        last = torch.jit.script(decoder)
        lengths = {s: last(torch.tensor([s]), h)[0].shape[0] for s in range(0, 11)}
        by_length = {}
        for s, n in sorted(lengths.items(), key=lambda e: -e[1]):
            by_length.setdefault(n, s)
        starts = list(by_length.values())[:4]
        if len(starts) >= 3:
            break
    else:
        raise AssertionError("no end-of-sequence token gives decodes of three lengths")
    print(f"greedy_last EOS {eos}, lengths by start:", lengths)
    export("greedy_last", last, (torch.tensor([starts[0]]), h), ["start", "h"], ["tokens", "h_final"],
           more_args=[(torch.tensor([s]), h) for s in starts[1:]])
    greedy_attend()
    greedy_attend_last()
    script_rnn_early_exit()
    nms_two_class_head()


def greedy_attend(seed=29, case="greedy_attend", decoder=None):
    # a seed of its own, so that the case can be made alone without changing the others' data
    torch.manual_seed(seed)
    decoder = decoder or GreedyAttend()
    h = torch.randn(1, 8)
    # an end-of-sequence token that ends some decodes early and not others: prompts of as many different lengths
    prompts = [torch.tensor([a, b]) for a in range(11) for b in range(11)]
    for eos in range(11):
        decoder.eos = eos
        scripted = torch.jit.script(decoder)
        by_length = {}
        for p in prompts:
            by_length.setdefault(scripted(p, h)[0].shape[0], p)
        if len(by_length) >= 4:
            break
    else:
        raise AssertionError("no end-of-sequence token gives decodes of four lengths")
    starts = [by_length[n] for n in sorted(by_length, reverse=True)[:4]]
    print(f"{case} EOS {eos}, lengths:", sorted(by_length))
    export(case, scripted, (starts[0], h), ["start", "h"], ["tokens", "h_final"], more_args=[(p, h) for p in starts[1:]])


def greedy_attend_last():
    torch.manual_seed(31)
    greedy_attend(31, "greedy_attend_last", GreedyAttendLast())


def script_rnn_early_exit():
    torch.manual_seed(37)
    rnn = torch.jit.script(RnnEarlyExit())
    x = torch.randn(7, 3)
    # a limit the state's sum passes after a few steps, not at once
    limit = next(v / 8 for v in range(-16, 17) if 1 < int(rnn(x, torch.tensor(v / 8))[1]) < 6)
    print("script_rnn_early_exit steps:", [int(rnn(x, torch.tensor(v))[1]) for v in (limit, 100.0, -100.0)])
    export("script_rnn_early_exit", rnn, (x, torch.tensor(limit)), ["x", "limit"], ["h", "steps"],
           more_args=[(x, torch.tensor(100.0)), (x, torch.tensor(-100.0))])


def nms_two_class_head():
    torch.manual_seed(41)
    head = TwoClassNmsHead()


    def selected(f):
        with torch.no_grad():
            b = head.box(f).flatten(2).transpose(1, 2)
            xy = b[..., :2].sigmoid() * 10
            return Nms.apply(torch.cat([xy, xy + b[..., 2:].exp()], -1), head.score(f).flatten(2).sigmoid()).shape[0]

    # feature maps that keep different numbers of boxes, each at least the three TopK takes
    sets, counts = [], []
    # pushed against the second class's score weights by more and more: fewer of its boxes pass the score threshold
    against = -torch.sign(head.score.weight.detach()[1]).reshape(1, 3, 1, 1)
    for push in (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0) * 3:
        f = torch.randn(1, 3, 4, 4) + push * against
        n = selected(f)
        if n >= 3 and n not in counts:
            sets.append((f,))
            counts.append(n)
        if len(sets) == 3:
            break
    print("nms_two_class_head selected:", counts)
    assert len(sets) == 3, counts
    export("nms_two_class_head", head, sets[0], ["features"], ["selected", "boxes", "scores"], more_args=sets[1:], opset=11)


CASES = {"nms_two_class_head": nms_two_class_head, "greedy_attend": greedy_attend, "greedy_attend_last": greedy_attend_last, "script_rnn_early_exit": script_rnn_early_exit}

if __name__ == "__main__":
    import sys
    if len(sys.argv) > 1:
        for case in sys.argv[1:]:
            CASES[case]()
    else:
        main()
