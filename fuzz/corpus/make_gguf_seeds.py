#!/usr/bin/env python3
"""Writes the tiny GGUF seeds of fuzz/corpus/gguf/ (a few KiB each, so the fuzzer mutates fast): a whole
llama model (dim 8, one layer, f32 zeros) with a 16-token SentencePiece vocabulary, the same as a qwen2 model
with biases, and a vocabulary-only GPT-2 BPE file with merges. Run from this folder."""
import struct

U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
F32_TYPE = 0


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def value(kind, v):
    if kind == U32:
        return struct.pack("<I", v)
    if kind == I32:
        return struct.pack("<i", v)
    if kind == F32:
        return struct.pack("<f", v)
    if kind == BOOL:
        return struct.pack("<B", 1 if v else 0)
    if kind == STRING:
        return s(v)
    elem, items = v
    return struct.pack("<IQ", elem, len(items)) + b"".join(value(elem, x) for x in items)


def gguf(kv, tensors, alignment=32):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, kind, v in kv:
        out += s(key) + struct.pack("<I", kind) + value(kind, v)
    offset, data = 0, b""
    for name, dims in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", F32_TYPE, offset)
        n = 1
        for d in dims:
            n *= d
        blob = struct.pack("<%df" % n, *[((i * 7) % 5 - 2) / 8.0 for i in range(n)])
        blob += b"\0" * (-len(blob) % alignment)
        data += blob
        offset += len(blob)
    out += b"\0" * (-len(out) % alignment)
    return out + data


SPM_TOKENS = ["<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "<0xE4>", "\u2581", "\u2581a", "b", "ab", "\u2581the",
              "\u2581Hello", "\u2581world", "!", "1", "<|im_end|>"]
SPM_TYPES = [2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4]


def model(arch, bias):
    dim, ffn, heads, kv_heads, vocab = 8, 8, 2, 1, len(SPM_TOKENS)
    kv_dim = dim // heads * kv_heads
    kv = [("general.architecture", STRING, arch), ("general.name", STRING, "fuzz-seed"),
          (arch + ".context_length", U32, 32), (arch + ".embedding_length", U32, dim),
          (arch + ".block_count", U32, 1), (arch + ".feed_forward_length", U32, ffn),
          (arch + ".attention.head_count", U32, heads), (arch + ".attention.head_count_kv", U32, kv_heads),
          (arch + ".rope.freq_base", F32, 10000.0), (arch + ".attention.layer_norm_rms_epsilon", F32, 1e-5),
          ("tokenizer.ggml.model", STRING, "llama"), ("tokenizer.ggml.tokens", ARRAY, (STRING, SPM_TOKENS)),
          ("tokenizer.ggml.scores", ARRAY, (F32, [-float(i) for i in range(vocab)])),
          ("tokenizer.ggml.token_type", ARRAY, (I32, SPM_TYPES)),
          ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
          ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.add_bos_token", BOOL, True),
          ("tokenizer.chat_template", STRING,
           "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|im_end|>{% endfor %}")]
    tensors = [("token_embd.weight", [dim, vocab]), ("output_norm.weight", [dim]),
               ("blk.0.attn_norm.weight", [dim]), ("blk.0.attn_q.weight", [dim, dim]),
               ("blk.0.attn_k.weight", [dim, kv_dim]), ("blk.0.attn_v.weight", [dim, kv_dim]),
               ("blk.0.attn_output.weight", [dim, dim]), ("blk.0.ffn_norm.weight", [dim]),
               ("blk.0.ffn_gate.weight", [dim, ffn]), ("blk.0.ffn_down.weight", [ffn, dim]),
               ("blk.0.ffn_up.weight", [dim, ffn])]
    if bias:
        tensors += [("blk.0.attn_q.bias", [dim]), ("blk.0.attn_k.bias", [kv_dim]), ("blk.0.attn_v.bias", [kv_dim])]
    return gguf(kv, tensors)


def gpt2_vocab():
    tokens = ["!", "\"", "a", "b", "c", "\u0120", "\u0120a", "ab", "abc", "\u0120ab", "\u010a", "<|endoftext|>"]
    types = [1] * 11 + [3]
    merges = ["\u0120 a", "a b", "ab c", "\u0120a b"]
    kv = [("general.architecture", STRING, "gpt2"), ("tokenizer.ggml.model", STRING, "gpt2"),
          ("tokenizer.ggml.pre", STRING, "qwen2"), ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
          ("tokenizer.ggml.token_type", ARRAY, (I32, types)), ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
          ("tokenizer.ggml.bos_token_id", U32, 11), ("tokenizer.ggml.eos_token_id", U32, 11)]
    return gguf(kv, [])


for name, data in {"llama-spm.gguf": model("llama", False), "qwen2-bias.gguf": model("qwen2", True),
                   "gpt2-vocab.gguf": gpt2_vocab()}.items():
    with open("gguf/" + name, "wb") as f:
        f.write(data)
