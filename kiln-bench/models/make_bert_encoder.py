"""Writes a BERT-base-shaped encoder (12 layers, hidden 768, 12 heads, FFN 3072; random weights, seed 0)
as ONNX for the side-by-side benchmarks (kiln-bench/bench.sh --main OnnxPeerBench FILE.onnx).

    python3 kiln-bench/models/make_bert_encoder.py OUT.onnx [--seq 128] [--layers 12]

Inputs: input_ids and attention_mask, int64 [1, seq]. Output: last_hidden_state [1, seq, 768]. Exported by
torch.onnx (TorchScript exporter, opset 17) with eager attention, so the graph holds plain MatMul/Softmax/LayerNorm
nodes. The file is about 440 MB: write it outside the repository (or under a git-ignored target folder).
"""
import argparse

import torch
from transformers import BertConfig, BertModel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--layers", type=int, default=12)
    a = p.parse_args()
    torch.manual_seed(0)
    config = BertConfig(hidden_size=768, num_hidden_layers=a.layers, num_attention_heads=12, intermediate_size=3072,
                        attn_implementation="eager")
    bert = BertModel(config, add_pooling_layer=False).eval()

    class Encoder(torch.nn.Module):  # positional inputs for the exporter; transformers' forward takes keywords
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    model = Encoder().eval()
    ids = torch.randint(0, config.vocab_size, (1, a.seq))
    mask = torch.ones(1, a.seq, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), a.out, input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
