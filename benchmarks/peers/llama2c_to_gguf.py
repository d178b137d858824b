# llama2c_to_gguf.py: a llama2.c .bin (version 0) as GGUF v3, F32, architecture llama, with a
# dummy vocabulary (piece i is "i ") so that llama.cpp prints ids like run.c with tokN.bin. A peer
# tool for SPEED.md until cmd/export writes GGUF (issue 16). Usage: python3 llama2c_to_gguf.py IN.bin OUT.gguf
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
f = open(src, 'rb')
dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack('<7i', f.read(28))
shared = vocab > 0
vocab = abs(vocab)
head = dim // heads
kv_dim = kv_heads * head
def take(n):
    return f.read(4 * n)
emb = take(vocab * dim)
rms_att = take(layers * dim)
wq = take(layers * dim * dim); wk = take(layers * kv_dim * dim); wv = take(layers * kv_dim * dim)
wo = take(layers * dim * dim); rms_ffn = take(layers * dim)
w1 = take(layers * hidden * dim); w2 = take(layers * dim * hidden); w3 = take(layers * hidden * dim)
rms_final = take(dim)
take(seq * head // 2); take(seq * head // 2)
wcls = emb if shared else take(vocab * dim)
def sl(buf, i, n):
    return buf[4 * i * n: 4 * (i + 1) * n]
tensors = [('token_embd.weight', [dim, vocab], emb)]
for l in range(layers):
    tensors += [
        (f'blk.{l}.attn_norm.weight', [dim], sl(rms_att, l, dim)),
        (f'blk.{l}.attn_q.weight', [dim, dim], sl(wq, l, dim * dim)),
        (f'blk.{l}.attn_k.weight', [dim, kv_dim], sl(wk, l, kv_dim * dim)),
        (f'blk.{l}.attn_v.weight', [dim, kv_dim], sl(wv, l, kv_dim * dim)),
        (f'blk.{l}.attn_output.weight', [dim, dim], sl(wo, l, dim * dim)),
        (f'blk.{l}.ffn_norm.weight', [dim], sl(rms_ffn, l, dim)),
        (f'blk.{l}.ffn_gate.weight', [dim, hidden], sl(w1, l, hidden * dim)),
        (f'blk.{l}.ffn_down.weight', [hidden, dim], sl(w2, l, dim * hidden)),
        (f'blk.{l}.ffn_up.weight', [dim, hidden], sl(w3, l, hidden * dim)),
    ]
tensors.append(('output_norm.weight', [dim], rms_final))
if not shared:
    tensors.append(('output.weight', [dim, vocab], wcls))
def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b
kv = []
def add(key, typ, payload):
    kv.append(s(key) + struct.pack('<I', typ) + payload)
U32, I32, F32, STR, ARR = 4, 5, 6, 8, 9
add('general.architecture', STR, s('llama'))
add('general.alignment', U32, struct.pack('<I', 32))
add('llama.context_length', U32, struct.pack('<I', seq))
add('llama.embedding_length', U32, struct.pack('<I', dim))
add('llama.block_count', U32, struct.pack('<I', layers))
add('llama.feed_forward_length', U32, struct.pack('<I', hidden))
add('llama.rope.dimension_count', U32, struct.pack('<I', head))
add('llama.attention.head_count', U32, struct.pack('<I', heads))
add('llama.attention.head_count_kv', U32, struct.pack('<I', kv_heads))
add('llama.attention.layer_norm_rms_epsilon', F32, struct.pack('<f', 1e-5))
add('llama.rope.freq_base', F32, struct.pack('<f', 10000.0))
add('llama.vocab_size', U32, struct.pack('<I', vocab))
add('tokenizer.ggml.model', STR, s('llama'))
toks = ['<unk>', '<s>', '</s>'] + [f'{i} ' for i in range(3, vocab)]
add('tokenizer.ggml.tokens', ARR, struct.pack('<IQ', STR, vocab) + b''.join(s(t) for t in toks))
add('tokenizer.ggml.scores', ARR, struct.pack('<IQ', F32, vocab) + b''.join(struct.pack('<f', -float(i)) for i in range(vocab)))
add('tokenizer.ggml.token_type', ARR, struct.pack('<IQ', I32, vocab) + b''.join(struct.pack('<i', 2 if i == 0 else 3 if i < 3 else 1) for i in range(vocab)))
add('tokenizer.ggml.bos_token_id', U32, struct.pack('<I', 1))
add('tokenizer.ggml.eos_token_id', U32, struct.pack('<I', 2))
out = open(dst, 'wb')
out.write(b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kv)))
for k in kv:
    out.write(k)
off = 0
for name, ne, data in tensors:
    out.write(s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne) + struct.pack('<IQ', 0, off))
    off += (len(data) + 31) // 32 * 32
pos = out.tell()
out.write(b'\0' * ((pos + 31) // 32 * 32 - pos))
for name, ne, data in tensors:
    out.write(data)
    out.write(b'\0' * ((len(data) + 31) // 32 * 32 - len(data)))
out.close()
print(dst, len(tensors), 'tensors')
