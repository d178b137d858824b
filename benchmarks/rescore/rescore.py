#!/usr/bin/env python3
"""Independent re-scorer of the benchmark's language-model (lm) results.

Reads a checkpoint folder written by cmd/train (config.json + model.safetensors), builds the
decoder's forward pass in PyTorch from the papers' formulas, and scores bits per byte on the
benchmark's test text at the given lengths, the way benchmarks/README.md defines the lm task:

    text   the test text's documents, each followed by "\\n\\n" (cmd/bench -write-text DIR)
    data   its first 256 KiB + 1 bytes
    n      the evaluation length: windows k = 0, 1, ... of n + 1 bytes starting at k*n, as many
           as fit; the model reads bytes [k*n, k*n+n) at positions 0..n-1 and every next byte
           is scored (no BOS unless train.json says the model was trained with one)
    score  sum of -log2 p(next byte) over all scored bytes / their count; "beyond L" is the same
           over positions >= L, the training length

Nothing of the engine is imported or called: the weights are parsed from the safetensors bytes
and every operation below is written from its formula. Compare with the engine's numbers by
giving its output (--engine) or the values (--expect); the exit status is 1 when a difference
exceeds --tolerance.

    /usr/bin/python3 benchmarks/rescore/rescore.py weights/bench/lm/rope TEXTDIR 128,512,2048 \\
        --engine engine-rope.md
"""

import argparse
import csv
import hashlib
import io
import json
import math
import os
import re
import struct
import sys

import numpy as np
import torch

# The benchmark scores the first 256 KiB of the test text (plus the byte the last window
# predicts).
SCORED_BYTES = 256 << 10
# The byte tokenizer: ids 0..255 are the bytes, then <s> </s> <pad> <mask>.
BOS_ID = 256
# The text the benchmark's results record (benchmarks/results/cells/*/*.csv, column "text"): the
# Go version and the first 12 hex digits of the test text's SHA-256.
DEFAULT_TEXT_ID = "go1.26.8:b7500d0ef000"


def fail(msg):
    """A one-line error and exit status 2: bad input, not a disagreement."""
    print(f"rescore: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Inputs: the text, the checkpoint.


def load_text(folder):
    """The test text from cmd/bench -write-text's folder, its SHA-256 checked against the
    manifest's; returns (text bytes, manifest)."""
    path = os.path.join(folder, "text.json")
    try:
        with open(path) as f:
            m = json.load(f)
    except OSError as e:
        fail(f"reading {path}: {e.strerror}: write the text with `go run ./cmd/bench -write-text {folder}`")
    parts = []
    for d in m["docs"]:
        with open(os.path.join(folder, d["file"]), "rb") as f:
            data = f.read()
        if len(data) != d["end"] - d["start"]:
            fail(f"{d['file']} has {len(data)} bytes, text.json says {d['end'] - d['start']}: write the folder again")
        parts.append(data + m["separator"].encode())
    text = b"".join(parts)
    sha = hashlib.sha256(text).hexdigest()
    if len(text) != m["bytes"] or sha != m["sha256"]:
        fail(f"the documents in {folder} join to {len(text)} bytes with SHA-256 {sha}, text.json says {m['bytes']} and {m['sha256']}: write the folder again")
    return text, m


def check_text_id(manifest, text_id):
    """The text must be the one the results were scored on: "goVERSION:SHA256-prefix"."""
    if not text_id:
        return
    version, _, prefix = text_id.partition(":")
    if manifest["go_version"] != version or not manifest["sha256"].startswith(prefix.lower()):
        fail(f"the text is {manifest['go_version']}:{manifest['sha256'][:12]}, the results were scored on {text_id}: "
             f"write it with the Go version the results used, or pass --text-id {manifest['go_version']}:{manifest['sha256'][:12]}")


SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "F64": np.float64}


def load_safetensors(path, dtype):
    """safetensors by hand: an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range, then the raw little-endian data."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail(f"{path}: {len(raw)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        fail(f"{path}: header of {n} bytes runs past the file's {len(raw)}")
    header = json.loads(raw[8:8 + n])
    body = memoryview(raw)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        kind = t["dtype"]
        if kind not in SAFETENSORS_DTYPES:
            fail(f"{path}: tensor {name} is {kind}; this scorer reads F32, F16, BF16 and F64")
        if kind == "BF16":
            # bfloat16 is the top half of a float32: widen by shifting the bits up.
            u16 = np.frombuffer(body[a:b], dtype="<u2").astype(np.uint32) << 16
            arr = u16.view(np.float32)
        else:
            arr = np.frombuffer(body[a:b], dtype=np.dtype(SAFETENSORS_DTYPES[kind]).newbyteorder("<"))
        shape = t["shape"]
        if arr.size != int(np.prod(shape)):
            fail(f"{path}: tensor {name} holds {arr.size} values, its shape {shape} needs {int(np.prod(shape))}")
        out[name] = torch.from_numpy(arr.astype(np.float64).reshape(shape)).to(dtype)
    return out


def load_checkpoint(folder, dtype):
    try:
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
    except OSError as e:
        fail(f"reading {folder}/config.json: {e.strerror}: give a checkpoint folder written by cmd/train")
    train = {}
    if os.path.exists(os.path.join(folder, "train.json")):
        with open(os.path.join(folder, "train.json")) as f:
            train = json.load(f)
    weights = load_safetensors(os.path.join(folder, "model.safetensors"), dtype)
    return cfg, train, weights


# ---------------------------------------------------------------------------------------------
# The model, from the formulas.


def alibi_slopes(n):
    """Press et al. 2022: m_h = 2^(-8h/n), h = 1..n, for n a power of two; otherwise the slopes
    of the largest power of two p below n, then every other slope of the 2p-head sequence."""
    def pow2(k):
        return [2.0 ** (-8.0 * h / k) for h in range(1, k + 1)]
    if n & (n - 1) == 0:
        return pow2(n)
    p = 1 << (n.bit_length() - 1)
    return pow2(p) + pow2(2 * p)[0::2][: n - p]


class Decoder:
    """A pre-norm decoder: x = E[t]; per block x += Attn(RMSNorm(x)), x += SwiGLU(RMSNorm(x));
    logits = RMSNorm(x) · Hᵀ with H the embedding table (tied) or output.weight."""

    def __init__(self, cfg, train, w, dtype):
        self.dtype = dtype
        g = lambda k, d=None: cfg.get(k) if cfg.get(k) not in (None, "", 0) else d
        self.kind = g("kind", "decoder")
        self.vocab, self.dim, self.layers = cfg["vocab_size"], cfg["dim"], cfg["n_layers"]
        self.heads = cfg["n_heads"]
        self.kv_heads = g("n_kv_heads", self.heads)
        self.hidden = cfg["hidden_dim"]
        self.eps = g("norm_eps", 1e-5)
        self.head_dim = self.dim // self.heads
        self.nope = set(cfg.get("nope_layers") or [])
        self.bos = bool(train.get("bos"))
        unsupported = {
            "kind": self.kind != "decoder",
            "ffn": g("ffn", "swiglu") != "swiglu",
            "norm": g("norm", "rmsnorm") != "rmsnorm",
            "norm_position": g("norm_position", "pre") != "pre",
            "bias": bool(cfg.get("bias")) or bool(cfg.get("qkv_bias")),
            "tokenizer": g("tokenizer", "byte") != "byte",
            "random_positions": bool(train.get("random_positions")),
        }
        for k, bad in unsupported.items():
            if bad:
                fail(f"{k} is {cfg.get(k, train.get(k))!r}: this scorer builds byte-level pre-norm RMSNorm/SwiGLU decoders without biases")
        for k in ("token_types", "embed_norm", "head_transform", "head_bias"):
            if cfg.get(k):
                fail(f"{k} is set: this scorer builds the posformer decoder only")
        if self.heads % self.kv_heads:
            fail(f"n_heads {self.heads} is not a multiple of n_kv_heads {self.kv_heads}")
        pe = dict(cfg.get("positional") or {"name": "none"})
        self.scheme = pe.pop("name", "none")
        if pe.get("ssmax") is False:
            del pe["ssmax"]  # written out as off: the plain softmax
        if self.scheme == "rope":
            self._rope_setup(pe)
        elif self.scheme == "alibi":
            slopes = pe.pop("slopes", None) or alibi_slopes(self.heads)
            if len(slopes) != self.heads:
                fail(f"alibi slopes has {len(slopes)} values, want one per head ({self.heads})")
            self.slopes = torch.tensor(slopes, dtype=dtype)
        elif self.scheme == "sinusoidal":
            # Vaswani et al. 2017, §3.5: PE(pos, 2i) = sin(pos·ω_i), PE(pos, 2i+1) = cos(pos·ω_i),
            # ω_i = base^(-2i/d), added to the embeddings scaled by sqrt(d).
            self.sin_base = float(pe.pop("base", 10000))
            self.embed_scale = float(pe.pop("embed_scale", math.sqrt(self.dim)))
            if pe.pop("learn_scale", False):
                fail("sinusoidal learn_scale: this scorer builds the paper's fixed code only")
        elif self.scheme != "none":
            fail(f"positional scheme {self.scheme!r}: this scorer builds rope, alibi, sinusoidal and none (NoPE)")
        if pe:
            fail(f"positional options {sorted(pe)} of {self.scheme}: this scorer does not build them")
        self._take_weights(w)

    def _rope_setup(self, pe):
        """RoPE (Su et al. 2021): pair i of a head turns by m·θ_i at position m, θ_i = base^(-2i/r)."""
        base = float(pe.pop("base", 10000))
        self.layout = pe.pop("layout", "half")
        if self.layout not in ("half", "interleaved"):
            fail(f"rope layout {self.layout!r}: want half or interleaved")
        frac = float(pe.pop("rotary_fraction", 1))
        p = float(pe.pop("p", 1))
        r = int(round(self.head_dim * frac))
        r -= r % 2
        self.rot = r
        i = torch.arange(r // 2, dtype=torch.float64)
        theta = base ** (-2 * i / r)
        # p-RoPE (Barbero et al. 2024): only the fastest floor(p·r/2) pairs keep turning.
        keep = int(math.floor(p * r / 2))
        theta[keep:] = 0
        self.theta = theta

    def _take_weights(self, w):
        w = dict(w)
        d, hd = self.dim, self.head_dim

        def take(name, shape):
            if name not in w:
                fail(f"model.safetensors has no tensor {name}: not a posformer decoder of this config")
            t = w.pop(name)
            if list(t.shape) != list(shape):
                fail(f"tensor {name} is {list(t.shape)}, the config needs {list(shape)}")
            return t

        self.embed = take("tok_embeddings.weight", (self.vocab, d))
        self.blocks = []
        for l in range(self.layers):
            p = f"layer_{l}."
            self.blocks.append({
                "attn_norm": take(p + "attn_norm.weight", (d,)),
                "wq": take(p + "attn.wq.weight", (self.heads * hd, d)),
                "wk": take(p + "attn.wk.weight", (self.kv_heads * hd, d)),
                "wv": take(p + "attn.wv.weight", (self.kv_heads * hd, d)),
                "wo": take(p + "attn.wo.weight", (d, self.heads * hd)),
                "ffn_norm": take(p + "ffn_norm.weight", (d,)),
                "w1": take(p + "ffn.w1.weight", (self.hidden, d)),
                "w2": take(p + "ffn.w2.weight", (d, self.hidden)),
                "w3": take(p + "ffn.w3.weight", (self.hidden, d)),
            })
        self.norm = take("norm.weight", (d,))
        # The head: a separate output table when the file has one, else the embedding (tied).
        self.head = take("output.weight", (self.vocab, d)) if "output.weight" in w else self.embed
        if w:
            fail(f"model.safetensors has tensors this scorer does not use: {sorted(w)[:4]}")

    def rmsnorm(self, x, g):
        """Zhang & Sennrich 2019: x / sqrt(mean(x²) + eps) · g."""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rope(self, x, pos):
        """Rotate pairs (a, b) of x [B, T, heads, hd] by pos·θ: a' = a cos − b sin, b' = a sin + b cos.
        Pair i is dims (i, i + r/2) in the half layout, (2i, 2i+1) in the interleaved one."""
        ang = pos.to(torch.float64)[:, None] * self.theta[None, :]  # [T, r/2], in float64
        cos = torch.cos(ang).to(self.dtype)[None, :, None, :]
        sin = torch.sin(ang).to(self.dtype)[None, :, None, :]
        r = self.rot
        rot, rest = x[..., :r], x[..., r:]
        if self.layout == "half":
            a, b = rot[..., : r // 2], rot[..., r // 2:]
            out = torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
        else:
            a, b = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
        return torch.cat([out, rest], dim=-1)

    def sinusoid(self, pos):
        """The code of positions pos [T] as [T, d], sin and cos of each frequency side by side."""
        i = torch.arange(self.dim // 2, dtype=torch.float64)
        ang = pos.to(torch.float64)[:, None] * self.sin_base ** (-2 * i / self.dim)[None, :]
        return torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1).flatten(-2).to(self.dtype)

    def attention(self, blk, x, pos, layer):
        B, T, _ = x.shape
        H, K, hd = self.heads, self.kv_heads, self.head_dim
        q = (x @ blk["wq"].T).view(B, T, H, hd)
        k = (x @ blk["wk"].T).view(B, T, K, hd)
        v = (x @ blk["wv"].T).view(B, T, K, hd)
        positional = layer not in self.nope
        if self.scheme == "rope" and positional:
            q, k = self.rope(q, pos), self.rope(k, pos)
        # Grouped-query attention (Ainslie et al. 2023): query head h reads key/value head
        # h // (H/K), consecutive query heads sharing one.
        rep = H // K
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, T, hd]
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)  # scaled dot product (Vaswani et al. 2017)
        dist = (pos[:, None] - pos[None, :]).to(self.dtype)  # i - j
        if self.scheme == "alibi" and positional:
            s = s - self.slopes[None, :, None, None] * dist[None, None]
        causal = pos[None, :] <= pos[:, None]
        s = s.masked_fill(~causal[None, None], float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        return o.transpose(1, 2).reshape(B, T, H * hd) @ blk["wo"].T

    def ffn(self, blk, x):
        """SwiGLU (Shazeer 2020): w2(silu(w1 x) ⊙ w3 x)."""
        return (torch.nn.functional.silu(x @ blk["w1"].T) * (x @ blk["w3"].T)) @ blk["w2"].T

    def logprobs(self, tokens):
        """tokens [B, T] → log-softmax [B, T, vocab], positions 0..T-1."""
        pos = torch.arange(tokens.shape[1])
        x = self.embed[tokens]
        if self.scheme == "sinusoidal":
            x = x * self.embed_scale + self.sinusoid(pos)[None]
        for l, blk in enumerate(self.blocks):
            x = x + self.attention(blk, self.rmsnorm(x, blk["attn_norm"]), pos, l)
            x = x + self.ffn(blk, self.rmsnorm(x, blk["ffn_norm"]))
        logits = self.rmsnorm(x, self.norm) @ self.head.T
        return torch.log_softmax(logits.to(torch.float64), dim=-1)


# ---------------------------------------------------------------------------------------------
# Scoring.


def score(model, data, n, train_len, tokens_per_batch):
    """Bits per byte over the non-overlapping windows of n bytes (each predicting its next n
    bytes), and the same over positions >= train_len. Returns (bpb, N, bpb_beyond, N_beyond)."""
    windows = (len(data) - 1) // n if len(data) > n else 0
    if windows == 0:
        fail(f"length {n} is longer than the {len(data) - 1} bytes scored; use shorter lengths")
    arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    batch = max(1, tokens_per_batch // n)
    nll = nll_beyond = 0.0
    count = count_beyond = 0
    for start in range(0, windows, batch):
        ks = range(start, min(start + batch, windows))
        seq = torch.from_numpy(np.stack([arr[k * n: k * n + n + 1] for k in ks]))
        inp, tgt = seq[:, :-1], seq[:, 1:]
        if model.bos:
            # BOS at position 0, the bytes at 1..n; BOS's own prediction is not scored.
            inp = torch.cat([torch.full((inp.shape[0], 1), BOS_ID), inp], dim=1)
            lp = model.logprobs(inp)[:, 1:]
        else:
            lp = model.logprobs(inp)
        token_nll = -lp.gather(-1, tgt[..., None])[..., 0]  # [b, n], nats, float64
        nll += token_nll.sum().item()
        count += token_nll.numel()
        if n > train_len:
            nll_beyond += token_nll[:, train_len:].sum().item()
            count_beyond += token_nll[:, train_len:].numel()
    bpb = nll / count / math.log(2)
    beyond = nll_beyond / count_beyond / math.log(2) if count_beyond else float("nan")
    return bpb, count, beyond, count_beyond


# ---------------------------------------------------------------------------------------------
# The engine's numbers to compare with.


METRICS = ("bits_per_byte", "bits_per_byte_beyond_L")


def read_engine(path, model_name, scheme):
    """The engine's numbers as written, {metric: {length: value}}, and the text id if the file
    has one. From cmd/bench's stdout (-m DIR -task lm: its tables "lm bits_per_byte" and "lm
    bits_per_byte_beyond_L", 3 decimals, where the checkpoint as trained is the row labelled with
    its scheme alone, beside the unigram baseline and "scheme + variant" rows) or from a results
    CSV (report's columns, 6 significant digits; this model's rows as trained: the variant of its
    first row, which cmd/bench writes first: none, or the label of how it was trained, "BOS",
    "lr=0.002")."""
    with open(path) as f:
        content = f.read()
    out = {m: {} for m in METRICS}
    if content.startswith("task,"):
        text, variant = None, None
        for row in csv.DictReader(io.StringIO(content)):
            if row["task"] != "lm" or row["model"] != model_name:
                continue
            if variant is None:
                variant = row["variant"]
            if row["metric"] in out and row["variant"] == variant:
                if row["value"].lower() != "nan":
                    out[row["metric"]][int(row["length"])] = row["value"]
                text = row.get("text") or text
        if not out[METRICS[0]]:
            fail(f"{path} has no lm bits_per_byte rows of model {model_name}")
        return out, text
    for metric in METRICS:
        m = re.search(r"^lm " + metric + r"\s*\n\s*\n(\|.*\n)(\|.*\n)((?:\|.*\n)+)", content, re.M)
        if not m:
            if metric == METRICS[0]:
                fail(f"{path}: no 'lm bits_per_byte' table; give cmd/bench's stdout (-m DIR -task lm -lengths ...) or a results CSV")
            continue
        lengths = [int(c.split()[0]) for c in m.group(1).strip().strip("|").split("|")[1:]]
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in m.group(3).splitlines()]
        # Labels are `scheme`, `scheme + variant`, sometimes with a note after: `none` (NoPE).
        mine = [r for r in rows if (re.match(r"`([^`]*)`", r[0]) or re.match(r"(.*)", r[0])).group(1) == scheme]
        if len(mine) != 1:
            fail(f"{path}: table 'lm {metric}' has rows {[r[0] for r in rows]}, want one labelled `{scheme}`: give the output of one checkpoint (-m DIR)")
        out[metric] = {n: c for n, c in zip(lengths, mine[0][1:]) if c and c != "—"}
    return out, None


def parse_expect(s, flag):
    out = {}
    for part in s.split(","):
        n, _, v = part.partition("=")
        try:
            float(v)
            out[int(n)] = v
        except ValueError:
            fail(f"{flag} {s!r}: want LENGTH=VALUE pairs, e.g. 128=1.6651,512=1.9002")
    return out


def rounding(written):
    """Half a unit of the last decimal a number was written with: how far its true value may be."""
    _, dot, decimals = written.partition(".")
    if not dot or not decimals.isdigit():
        return 0.0
    return 0.5 * 10 ** -len(decimals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="folder with config.json and model.safetensors (and train.json)")
    ap.add_argument("text", help="folder written by `go run ./cmd/bench -write-text DIR`")
    ap.add_argument("lengths", help="comma-separated evaluation lengths in bytes, e.g. 128,512,2048")
    ap.add_argument("--engine", help="the engine's numbers: cmd/bench -m DIR -task lm stdout, or a results CSV")
    ap.add_argument("--expect", help="the engine's bits per byte by hand: LENGTH=VALUE,...")
    ap.add_argument("--expect-beyond", help="the engine's bits per byte beyond L by hand: LENGTH=VALUE,...")
    ap.add_argument("--tolerance", type=float, default=0.001, help="largest |difference| in bits per byte that passes (default 0.001), plus half a unit of the last decimal each engine number is written with (0.0005 for cmd/bench's 3-decimal tables)")
    ap.add_argument("--text-id", default=DEFAULT_TEXT_ID, help=f"goVERSION:SHA256-prefix the text must match (default {DEFAULT_TEXT_ID}, the results' text column; '' to skip)")
    ap.add_argument("--bytes", type=int, default=SCORED_BYTES, help=f"bytes of the text scored (default {SCORED_BYTES}, the benchmark's; cmd/bench --quick scores 1024)")
    ap.add_argument("--train-len", type=int, default=0, help="L for 'beyond L' (default: train.json's seq_len, else config's train_seq_len)")
    ap.add_argument("--float64", action="store_true", help="compute in float64 instead of float32 (which side rounds?)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the machine is shared)")
    ap.add_argument("--batch-tokens", type=int, default=4096, help="tokens per forward pass (memory: batch·heads·n² scores)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    dtype = torch.float64 if a.float64 else torch.float32
    try:
        lengths = [int(x) for x in a.lengths.split(",")]
    except ValueError:
        fail(f"lengths {a.lengths!r}: want comma-separated byte counts, e.g. 128,512,2048")
    if any(n < 1 for n in lengths):
        fail(f"lengths {a.lengths!r}: every length must be at least 1")
    text, manifest = load_text(a.text)
    cfg, train, w = load_checkpoint(a.checkpoint, dtype)
    model = Decoder(cfg, train, w, dtype)
    train_len = a.train_len or train.get("seq_len") or cfg.get("train_seq_len") or 0

    expected, engine_text = {m: {} for m in METRICS}, None
    name = os.path.basename(os.path.normpath(a.checkpoint))
    if a.engine:
        expected, engine_text = read_engine(a.engine, name, model.scheme)
    if a.expect:
        expected[METRICS[0]].update(parse_expect(a.expect, "--expect"))
    if a.expect_beyond:
        expected[METRICS[1]].update(parse_expect(a.expect_beyond, "--expect-beyond"))
    check_text_id(manifest, engine_text or a.text_id)

    data = text[: a.bytes + 1]
    print(f"{name} ({model.scheme}, L = {train_len}), text {manifest['go_version']}:{manifest['sha256'][:12]}, "
          f"{len(data) - 1} bytes scored, {'float64' if a.float64 else 'float32'}\n")
    print("| length | windows | bytes scored | rescore bits/byte | engine | difference | rescore beyond L | engine | difference |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    worst, bad, compared = 0.0, [], 0
    for n in lengths:
        bpb, count, beyond, _ = score(model, data, n, train_len, a.batch_tokens)
        cells = []
        for metric, ours in zip(METRICS, (bpb, beyond)):
            e = expected[metric].get(n, "")
            d = ""
            if e and not math.isnan(ours):
                diff = ours - float(e)
                worst = max(worst, abs(diff))
                compared += 1
                # A number written with few decimals may be off by half its last unit.
                if abs(diff) > a.tolerance + rounding(e):
                    bad.append(f"{metric} at {n}")
                d = f"{diff:+.6f}"
            cells += ["" if math.isnan(ours) else f"{ours:.6f}", e, d]
        print(f"| {n} | {count // n} | {count} | " + " | ".join(cells) + " |", flush=True)
    if compared:
        missing = [n for n in lengths if n not in expected[METRICS[0]]]
        note = f" (no engine number at {missing})" if missing else ""
        print(f"\n{compared} numbers compared, largest |difference| {worst:.6f}; tolerance {a.tolerance:g} plus half the last unit each engine number is written with{note}")
        if bad:
            print(f"rescore: {', '.join(bad)}: differs from the engine by more than {a.tolerance:g} bit per byte (plus rounding)", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
