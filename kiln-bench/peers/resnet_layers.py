"""ResNet-50's convolutions inside the whole model, Kiln beside ONNX Runtime, summed by kind of convolution.

Usage: python3 kiln-bench/peers/resnet_layers.py [--model ../shared/models/light_resnet50/model.onnx] [--threads 1]
    [--runs 30]

Why: a model of one convolution misleads. ONNX Runtime runs a whole network's convolutions in a channel-blocked
layout (NCHWc) and reorders only at its ends; alone, one convolution pays both reorders (a 64 -> 256 1 x 1
convolution at 56 x 56 took ONNX Runtime 2.7 ms alone and 1.06 ms inside ResNet-50, one thread). This script times
every node inside the model: ONNX Runtime's own profiler (median per node over the runs after the first 50; its
optimiser renames the nodes, so its convolutions are told apart by their shapes) and `./kiln profile` (median per
kernel), both on the same number of threads, one after the other.

Kiln's kernels are matched to the ONNX convolutions by position: in `light_resnet50` kernel 0 is the stem, kernel 1
the max pooling, and kernels 2..53 the other 52 convolutions in graph order (residual adds and ReLUs are fused into
them). The script checks that the kernels' output shapes agree with the convolutions' and stops if they do not, so
another model or a changed schedule fails loudly instead of mismatching. In the first block of each stage the
shortcut's strided 1 x 1 convolution and the block's last 1 x 1 convolution have the same output shape, and Kiln adds
the residual in whichever of the two it schedules last: compare those two kinds by their sum, not one by one.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference


def conv_nodes(model_path):
    """(kind, output shape) of each Conv in graph order; kind is 'KxK Cin->Cout @H sS'."""
    m = shape_inference.infer_shapes(onnx.load(model_path))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    shapes.update({i.name: list(i.dims) for i in m.graph.initializer})
    for n in m.graph.node:
        if n.op_type == 'Constant':
            shapes[n.output[0]] = list(n.attribute[0].t.dims)
    out = []
    for n in m.graph.node:
        if n.op_type != 'Conv':
            continue
        attrs = {a.name: list(a.ints) for a in n.attribute if a.ints}
        w, x = shapes[n.input[1]], shapes[n.input[0]]
        stride = attrs.get('strides', [1])[0]
        out.append(('%dx%d %d->%d @%d s%d' % (w[2], w[3], w[1], w[0], x[2], stride), shapes.get(n.output[0])))
    return out


def ort_conv_us(model_path, threads, runs):
    """Median microseconds of each convolution node, summed by kind, from ONNX Runtime's profiler after 50 warm-up runs.
    Its optimiser renames the nodes (NCHWc), so they are told apart by their input, weight and output shapes."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    s = ort.InferenceSession(model_path, so, providers=['CPUExecutionProvider'])
    inp = s.get_inputs()[0]
    x = np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape]).astype(np.float32)
    for _ in range(50 + runs):
        s.run(None, {inp.name: x})
    path = s.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    per, kinds, total = collections.defaultdict(list), {}, collections.defaultdict(list)
    for e in events:
        if e.get('cat') != 'Node' or not e['name'].endswith('_kernel_time'):
            continue
        total[e['name']].append(e['dur'])
        args = e['args']
        if args.get('op_name') != 'Conv':
            continue
        ins = [list(t.values())[0] for t in args['input_type_shape']]
        out = list(args['output_type_shape'][0].values())[0]
        x_shape, w = ins[0], ins[1]
        kinds[e['name']] = '%dx%d %d->%d @%d s%d' % (w[2], w[3], w[1], w[0], x_shape[2], x_shape[2] // out[2])
        per[e['name']].append(e['dur'])
    by_kind = collections.defaultdict(float)
    for name, durs in per.items():
        by_kind[kinds[name]] += statistics.median(durs[50:] or durs)
    return by_kind, sum(statistics.median(d[50:] or d) for d in total.values())


def kiln_kernel_us(model_path, threads, runs):
    """(name, output shape, median microseconds) of each kernel from `./kiln profile`, in kernel order."""
    env = dict(os.environ, JAVA_TOOL_OPTIONS='-XX:ActiveProcessorCount=%d' % threads)
    text = subprocess.run(['./kiln', 'profile', model_path, '--random-inputs', '--runs', str(runs)],
                          capture_output=True, text=True, env=env, check=True).stdout
    kernels = []
    for line in text.splitlines():
        m = re.match(r'\s+(r_([0-9x]+)_(\d+))\s+([\d.]+)', line)
        if m:
            kernels.append((int(m.group(3)), [int(d) for d in m.group(2).split('x')], float(m.group(4))))
    return [(shape, us) for _, shape, us in sorted(kernels)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--model', default='../shared/models/light_resnet50/model.onnx')
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--runs', type=int, default=30)
    a = p.parse_args()
    convs = conv_nodes(a.model)
    ort_by_kind, ort_total = ort_conv_us(a.model, a.threads, a.runs)
    kernels = kiln_kernel_us(a.model, a.threads, a.runs)
    matched = [kernels[0]] + kernels[2:2 + len(convs) - 1]
    for (kind, shape), (kshape, _) in zip(convs, matched):
        if shape and [d for d in shape if d != 1] != [d for d in kshape if d != 1]:
            sys.exit('kernel shape %s does not match convolution %s of shape %s: not the schedule this script knows' % (kshape, kind, shape))
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for (kind, _), (_, kus) in zip(convs, matched):
        by_kind[kind][0] += 1
        by_kind[kind][1] += kus
    print('%-24s %3s %10s %10s %7s %9s' % ('convolution', 'n', 'Kiln us', 'ORT us', 'ratio', 'excess'))
    for kind, (n, k) in sorted(by_kind.items(), key=lambda kv: ort_by_kind[kv[0]] - kv[1][1]):
        o = ort_by_kind[kind]
        print('%-24s %3d %10.0f %10.0f %6.2fx %9.0f' % (kind, n, k, o, k / o, k - o))
    tk, to = sum(r[1] for r in by_kind.values()), sum(ort_by_kind.values())
    print('%-24s %3d %10.0f %10.0f %6.2fx %9.0f' % ('all convolutions', len(convs), tk, to, tk / to, tk - to))
    print('whole model: Kiln %.0f us (sum of kernels), ORT %.0f us (sum of nodes)' % (sum(us for _, us in kernels), ort_total))

if __name__ == '__main__':
    main()
