#!/usr/bin/env python3
"""A PyTorch twin of posformer's lm training step, timed as BenchmarkTrainStep/v2-lm times it.

The model is the benchmark recipe's lm decoder as models/ and layers/ build it: byte vocabulary
of 260, dim 128, 4 pre-norm blocks (RMSNorm, eps 1e-5, with a scale and no bias), 4 query and 4
key/value heads with RoPE on queries and keys ("half" layout, base 10000), a causal softmax
attention, a SwiGLU feed-forward of 512 (silu(x W1) * (x W3) W2), no biases, a final RMSNorm and
the embedding table as the output head. Weights start as layers/ starts them: normal with std
0.02, the two projections that write into the residual stream (attention output, W2) with
0.02 / sqrt(2 * layers), norm scales 1.

The step is engine/train.go's: mean cross-entropy over the batch's tokens, gradients, Adam with
decoupled weight decay (PyTorch's AdamW) at lr 1e-3, on one batch of 32 sequences of 128 random
bytes, in one forward/backward pass. BenchmarkTrainStep builds its model without tying the head
(models.Config's default), so --untied matches it; cmd/train ties it (--tied, the default here).

Usage: train_twin.py [--threads N] [--dtype f32|bf16] [--steps N] [--untied] [--json]
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, LAYERS, HEADS, KV_HEADS, HIDDEN = 260, 128, 4, 4, 4, 512
BATCH, SEQ = 32, 128
INIT_STD = 0.02


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq, head_dim, base=10000.0):
    """cos and sin of position × θ_i for the "half" layout: pair i is (i, i + head_dim/2)."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    ang = torch.outer(torch.arange(seq, dtype=torch.float32), inv)  # [seq, head_dim/2]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def rotate(x, cos, sin):
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-b, a], dim=-1) * sin


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        hd = DIM // HEADS
        self.attn_norm, self.ffn_norm = RMSNorm(DIM), RMSNorm(DIM)
        self.wq = nn.Linear(DIM, HEADS * hd, bias=False)
        self.wk = nn.Linear(DIM, KV_HEADS * hd, bias=False)
        self.wv = nn.Linear(DIM, KV_HEADS * hd, bias=False)
        self.wo = nn.Linear(HEADS * hd, DIM, bias=False)
        self.w1 = nn.Linear(DIM, HIDDEN, bias=False)
        self.w3 = nn.Linear(DIM, HIDDEN, bias=False)
        self.w2 = nn.Linear(HIDDEN, DIM, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        hd = DIM // HEADS
        h = self.attn_norm(x)
        q = self.wq(h).view(b, t, HEADS, hd).transpose(1, 2)
        k = self.wk(h).view(b, t, KV_HEADS, hd).transpose(1, 2)
        v = self.wv(h).view(b, t, KV_HEADS, hd).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # Written out (PyTorch 1.13 has no scaled_dot_product_attention): the [b, h, t, t]
        # scores are materialized, as posformer's attention materializes them.
        s = (q @ k.transpose(-2, -1)) * (hd ** -0.5) + mask
        a = torch.softmax(s.float(), dim=-1).to(v.dtype) @ v
        x = x + self.wo(a.transpose(1, 2).reshape(b, t, DIM))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LM(nn.Module):
    def __init__(self, tied):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(DIM)
        self.output = None if tied else nn.Linear(DIM, VOCAB, bias=False)
        cos, sin = rope_tables(SEQ, DIM // HEADS)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)  # causal: key s > query t is masked
        self.register_buffer("mask", mask, persistent=False)
        out_std = INIT_STD / math.sqrt(2 * LAYERS)
        for name, p in self.named_parameters():
            if name.endswith(("wo.weight", "w2.weight")):
                nn.init.normal_(p, std=out_std)
            elif p.dim() == 2:
                nn.init.normal_(p, std=INIT_STD)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for blk in self.layers:
            x = blk(x, self.cos, self.sin, self.mask)
        x = self.norm(x)
        head = self.tok_embeddings.weight if self.output is None else self.output.weight
        return x @ head.t()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--steps", type=int, default=8, help="timed steps, after one untimed")
    ap.add_argument("--untied", action="store_true", help="a separate output head, as BenchmarkTrainStep")
    ap.add_argument("--wd", type=float, default=0.1, help="AdamW weight decay (BenchmarkTrainStep's 0.1)")
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = LM(tied=not a.untied)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=a.wd)
    g = torch.Generator().manual_seed(2)
    inputs = torch.randint(0, 256, (BATCH, SEQ), generator=g)
    targets = torch.randint(0, 256, (BATCH, SEQ), generator=g)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            logits = model(inputs)
        loss = F.cross_entropy(logits.float().view(-1, VOCAB), targets.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    first = step()  # also warms up: posformer's benchmark compiles in its untimed first step
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1000
    if a.json:
        print(json.dumps({"params": params, "first_loss": first, "ms": ms, "threads": a.threads,
                          "dtype": a.dtype, "torch": torch.__version__}))
    else:
        print(f"torch {torch.__version__}, {a.threads} threads, {a.dtype}: {params} parameters, "
              f"first-step loss {first:.4f} (ln 260 = {math.log(VOCAB):.4f}), "
              f"median {ms:.1f} ms/step over {a.steps} steps ({min(times)*1000:.1f}-{max(times)*1000:.1f})")


if __name__ == "__main__":
    main()
