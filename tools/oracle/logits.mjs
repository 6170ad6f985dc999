#!/usr/bin/env node
// llama.cpp (through node-llama-cpp, pinned in package.json) as the correctness oracle for edgedecode.
//
//   node tools/oracle/logits.mjs MODEL.gguf PROMPTS.json OUT.json [--top K] [--full-max N] [--threads T] [--kv f32|f16|bf16]
//   node tools/oracle/logits.mjs tokenize MODEL.gguf TEXT [--no-bos] [--special]
//   node tools/oracle/logits.mjs info MODEL.gguf [TEXT...] [--no-bos] [--special]
//
// logits: teacher-forced pass over each prompt, given as token ids (so tokenizer differences cannot confound
// the comparison; no BOS is added: put it in the ids). For every position i, llama.cpp's next-token
// distribution after ids[0..i] (softmax of the raw logits: the sampler chain is greedy only, which does not
// touch the logits). PROMPTS.json: [[ids...], ...] or [{"name": "...", "ids": [...]}, ...]. OUT.json:
//   {"oracle": {...versions...}, "model": PATH, "n_vocab": V, "top_k": K, "kv_type": "f32",
//    "prompts": [{"name": ..., "tokens": [ids], "positions": [{"pos": i, "top": [[id, p], ...],
//                 "rest": 1 - sum(top p), "probs": [p_0 .. p_{V-1}] (only when V <= --full-max)}]}]}
// "top" is sorted by falling probability, ties by id. Probabilities are llama.cpp's float32 values.
//
// tokenize: prints {"ids": [...]} from llama.cpp's tokenizer (BOS added unless --no-bos; --special parses
// special-token text). info: prints {"n_vocab", "bos", "eos", "train_context", "vocab_type", ...,
// "texts": [ids of each TEXT, tokenized as in tokenize]}.
//
// CPU only, never downloads or builds anything (gpu: false, build: "never", skipDownload), 1 thread by
// default, one sequence, whole prompt in one batch: the output is deterministic for a given machine.
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const usage =
    "usage: logits.mjs MODEL.gguf PROMPTS.json OUT.json [--top K] [--full-max N] [--threads T] [--kv f32|f16|bf16]\n" +
    "       logits.mjs tokenize MODEL.gguf TEXT [--no-bos] [--special]\n" +
    "       logits.mjs info MODEL.gguf [TEXT...] [--no-bos] [--special]\n";

function die(msg, code = 2) {
    process.stderr.write(`oracle: ${msg}\n`);
    process.exit(code);
}

function parseArgs(argv) {
    const pos = [];
    const opt = {top: 40, fullMax: 4096, threads: 1, kv: "f32", bos: true, special: false};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const num = (name) => {
            const v = Number(argv[++i]);
            if (!Number.isInteger(v) || v < 0) die(`${name} needs a non-negative integer, got '${argv[i]}'`);
            return v;
        };
        if (a === "--top") opt.top = num("--top");
        else if (a === "--full-max") opt.fullMax = num("--full-max");
        else if (a === "--threads") opt.threads = num("--threads");
        else if (a === "--kv") {
            opt.kv = argv[++i];
            if (!["f32", "f16", "bf16"].includes(opt.kv)) die(`--kv must be f32, f16 or bf16, got '${opt.kv}'`);
        } else if (a === "--no-bos") opt.bos = false;
        else if (a === "--special") opt.special = true;
        else if (a === "-h" || a === "--help") {
            process.stdout.write(usage);
            process.exit(0);
        } else if (a.startsWith("--")) die(`unknown option '${a}'\n${usage}`);
        else pos.push(a);
    }
    return {pos, opt};
}

function oracleVersions() {
    const read = (p) => {
        try {
            return JSON.parse(fs.readFileSync(p, "utf8"));
        } catch {
            return null;
        }
    };
    const pkgDir = path.join(here, "node_modules", "node-llama-cpp");
    return {
        engine: "llama.cpp via node-llama-cpp",
        node_llama_cpp: read(path.join(pkgDir, "package.json"))?.version ?? null,
        llama_cpp: read(path.join(pkgDir, "llama", "llama.cpp.info.json")) ?? null,
        node: process.version,
    };
}

async function loadModel(modelPath, threads) {
    if (!fs.existsSync(modelPath)) die(`model file not found: ${modelPath}`, 1);
    const {getLlama, LlamaLogLevel} = await import("node-llama-cpp");
    // Never reach the network or a compiler: the prebuilt CPU binary of @node-llama-cpp/linux-x64 or fail.
    const llama = await getLlama({
        gpu: false,
        build: "never",
        usePrebuiltBinaries: true,
        skipDownload: true,
        progressLogs: false,
        logLevel: LlamaLogLevel.error,
        maxThreads: Math.max(1, threads),
    });
    const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
    return {llama, model};
}

// One greedy-sampler evaluation of [tokens] with probabilities at every position.
async function evaluate(model, prompts, opt) {
    const maxLen = Math.max(1, ...prompts.map((p) => p.ids.length));
    const context = await model.createContext({
        contextSize: Math.max(32, maxLen),
        batchSize: Math.max(32, maxLen),
        sequences: 1,
        threads: {ideal: opt.threads, min: opt.threads},
        flashAttention: false,
        experimentalKvCacheKeyType: opt.kv.toUpperCase(),
        experimentalKvCacheValueType: opt.kv.toUpperCase(),
        performanceTracking: false,
    });
    const seq = context.getSequence();
    const out = [];
    let nVocab = 0;
    for (const p of prompts) {
        await seq.clearHistory();
        const input = p.ids.map((t) => [t, {generateNext: {probabilities: true}}]);
        const res = await seq.controlledEvaluate(input);
        const positions = [];
        for (let i = 0; i < res.length; i++) {
            const probs = res[i]?.next?.probabilities;
            if (!probs) die(`llama.cpp returned no distribution at position ${i} of prompt '${p.name}'`, 1);
            nVocab = probs.size;
            const entries = [...probs.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
            const top = entries.slice(0, Math.min(opt.top, entries.length));
            let topMass = 0;
            for (const [, q] of top) topMass += q;
            const item = {pos: i, top, rest: Math.max(0, 1 - topMass)};
            if (probs.size <= opt.fullMax) {
                const full = new Array(probs.size).fill(0);
                for (const [id, q] of probs) full[id] = q;
                item.probs = full;
            }
            positions.push(item);
        }
        out.push({name: p.name, tokens: p.ids, positions});
    }
    await context.dispose();
    return {prompts: out, nVocab};
}

// The binding has no vocabulary-size call: the length of one distribution is n_vocab.
async function vocabSize(model, opt) {
    const first = model.tokens.bos ?? 0;
    const {nVocab} = await evaluate(model, [{name: "probe", ids: [first]}], {...opt, top: 1, fullMax: 0});
    return nVocab;
}

function readPrompts(file) {
    let raw;
    try {
        raw = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
        die(`cannot read prompts ${file}: ${e.message}`, 1);
    }
    if (!Array.isArray(raw)) raw = raw?.prompts;
    if (!Array.isArray(raw)) die(`${file}: expected a list of id lists or {"prompts": [...]}`, 1);
    return raw.map((p, i) => {
        const ids = Array.isArray(p) ? p : p?.ids;
        const name = Array.isArray(p) ? `p${i}` : (p?.name ?? `p${i}`);
        if (!Array.isArray(ids) || ids.length === 0 || !ids.every((t) => Number.isInteger(t) && t >= 0))
            die(`${file}: prompt ${i} needs a non-empty list of non-negative integer ids`, 1);
        return {name, ids};
    });
}

async function main() {
    const {pos, opt} = parseArgs(process.argv.slice(2));
    const t0 = performance.now();
    if (pos[0] === "tokenize") {
        if (pos.length !== 3) die(usage);
        const {model} = await loadModel(pos[1], opt.threads);
        const ids = [...model.tokenize(pos[2], opt.special)];
        if (opt.bos && model.tokens.bos != null) ids.unshift(model.tokens.bos);
        process.stdout.write(JSON.stringify({ids}) + "\n");
        return;
    }
    if (pos[0] === "info") {
        if (pos.length < 2) die(usage);
        const {model} = await loadModel(pos[1], opt.threads);
        const nVocab = await vocabSize(model, opt);
        const tok = (text) => {
            const ids = [...model.tokenize(text, opt.special)];
            if (opt.bos && model.tokens.bos != null) ids.unshift(model.tokens.bos);
            return ids;
        };
        process.stdout.write(JSON.stringify({
            oracle: oracleVersions(), model: pos[1], n_vocab: nVocab, bos: model.tokens.bos, eos: model.tokens.eos,
            train_context: model.trainContextSize, vocab_type: model.vocabularyType,
            architecture: model.fileInfo?.metadata?.general?.architecture ?? null,
            texts: pos.slice(2).map(tok),
        }) + "\n");
        return;
    }
    if (pos.length !== 3) die(usage);
    const [modelPath, promptsPath, outPath] = pos;
    const prompts = readPrompts(promptsPath);
    const {model} = await loadModel(modelPath, opt.threads);
    const tLoad = performance.now();
    // llama.cpp aborts the process on an id outside the vocabulary: check before evaluating.
    const vocab = await vocabSize(model, opt);
    for (const p of prompts)
        for (const t of p.ids)
            if (t >= vocab) die(`${promptsPath}: prompt '${p.name}' has id ${t} outside the vocabulary (${vocab})`, 1);
    const {prompts: results, nVocab} = await evaluate(model, prompts, opt);
    const tEval = performance.now();
    const doc = {
        oracle: oracleVersions(), model: modelPath, n_vocab: nVocab, top_k: opt.top, kv_type: opt.kv,
        threads: opt.threads, load_ms: Math.round(tLoad - t0), eval_ms: Math.round(tEval - tLoad),
        prompts: results,
    };
    fs.writeFileSync(outPath, JSON.stringify(doc));
    const nPos = results.reduce((s, p) => s + p.positions.length, 0);
    process.stderr.write(`oracle: ${path.basename(modelPath)}: ${results.length} prompts, ${nPos} positions, ` +
        `load ${doc.load_ms} ms, eval ${doc.eval_ms} ms -> ${outPath}\n`);
}

main().then(() => process.exit(0), (e) => die(e?.stack ?? String(e), 1));
