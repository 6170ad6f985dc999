#!/usr/bin/env python3
"""Writes the tiny llama2.c seeds of fuzz/corpus/llama2c/: a checkpoint (legacy shared, legacy unshared,
version 1), the separator the harness cuts at, and an 8-token tokenizer.bin. Run from this folder."""
import struct

SEP = b"\n--part--\n"


def floats(n, mul, mod):
    return b"".join(struct.pack("<f", ((i * mul) % mod - mod // 2) / 64.0) for i in range(n))


def legacy(dim, hid, layers, heads, kv_heads, vocab, seq, shared=True):
    hdr = struct.pack("<7i", dim, hid, layers, heads, kv_heads, vocab if shared else -vocab, seq)
    kv, hd = dim // heads * kv_heads, dim // heads
    n = (vocab * dim + layers * dim + 2 * layers * dim * dim + 2 * layers * kv * dim + layers * dim +
         3 * layers * hid * dim + dim + seq * hd)  # ... freq_cis_real + imag: seq * hd/2 each
    if not shared:
        n += vocab * dim
    return hdr + floats(n, 37, 17)


def version1(dim, hid, layers, heads, kv_heads, vocab, seq, shared=True):
    hdr = struct.pack("<Ii7iB", 0x616B3432, 1, dim, hid, layers, heads, kv_heads, vocab, seq, 1 if shared else 0)
    hdr += b"\0" * (256 - len(hdr))
    kv = dim // heads * kv_heads
    n = 2 * layers * dim + dim + vocab * dim + 2 * layers * dim * dim + 2 * layers * kv * dim + 3 * layers * hid * dim
    if not shared:
        n += vocab * dim
    return hdr + floats(n, 31, 13)


def tokenizer(tokens, max_len=8):
    out = struct.pack("<i", max_len)
    for i, t in enumerate(tokens):
        out += struct.pack("<fi", -float(i), len(t)) + t
    return out


TOKENS = [b"<unk>", b"\n<s>\n", b"\n</s>\n", b"<0x41>", b" a", b"b", b"ab", b" the"]
seeds = {
    "legacy-shared.bin": legacy(4, 4, 1, 2, 1, 8, 4),
    "legacy-unshared.bin": legacy(4, 6, 2, 2, 2, 8, 2, shared=False),
    "v1.bin": version1(4, 4, 1, 2, 1, 8, 4),
}
for name, ckpt in seeds.items():
    with open("llama2c/" + name, "wb") as f:
        f.write(ckpt + SEP + tokenizer(TOKENS))
