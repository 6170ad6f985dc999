// `edgedecode serve` driven by the official OpenAI client (npm openai, pinned in tools/oracle) and raw
// fetch for what the client hides (status codes, error objects, the non-OpenAI routes). The greedy
// answers are compared with `edgedecode run --temp 0` on the same input, solo, two and four at once.
//
// usage: node serve_test.mjs --edgedecode BIN --testdata DIR --work DIR
// Exit 0 when every check passes; the server is killed on every way out.
import { spawn, spawnSync, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const oracle = path.resolve(here, "..", "..", "tools", "oracle");
const require = createRequire(path.join(oracle, "package.json"));
let OpenAI, Ajv;
try {
  OpenAI = require("openai");
  Ajv = require("ajv");
} catch (e) {
  console.error("serve_test: npm openai or ajv is missing: run `make setup` (npm ci in tools/oracle)\n" + e.message);
  process.exit(1);
}

const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const bin = args.edgedecode;
const model = path.join(args.testdata, "llm", "gguf", "stories260K.f32.gguf");
const work = args.work;
fs.mkdirSync(work, { recursive: true });
const templatePath = path.join(work, "chatml.jinja");
fs.writeFileSync(templatePath,
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
const KEY = "serve-test-key";
const K = 24;  // tokens per answer: short, the suite stays fast

let failures = 0;
function check(ok, what, detail = "") {
  if (ok) console.log(`ok   ${what}`);
  else {
    failures++;
    console.log(`FAIL ${what}${detail ? ": " + detail : ""}`);
  }
}
const eq = (a, b, what) => check(JSON.stringify(a) === JSON.stringify(b), what, `got ${JSON.stringify(a)}, want ${JSON.stringify(b)}`);

// `edgedecode run --temp 0` as the reference: text, token counts, finish reason.
function runRef(prompt, chat, n = K, extra = []) {
  const argv = ["run", "-m", model, "-p", prompt, "--temp", "0", "-n", String(n), "--json", "-t", "1", ...extra];
  if (chat) argv.push("--chat", "--chat-template", templatePath);
  const j = JSON.parse(execFileSync(bin, argv, { stdio: ["ignore", "pipe", "ignore"] }).toString());
  return { text: j.text, prompt_tokens: j.prompt_tokens.length, completion_tokens: j.tokens.length,
           finish: j.stop === "eos" || j.stop === "stop_string" ? "stop" : "length" };
}

let server = null;
let serverExit = null;
function killServer() {
  if (server && server.exitCode === null) server.kill("SIGKILL");
}
process.on("exit", killServer);
const watchdog = setTimeout(() => {
  console.log("FAIL the test ran past 240 s");
  killServer();
  process.exit(1);
}, 240000);

// The port a spawned `serve --port 0` listens on, from its "listening on" line; rejects if it exits first.
function listeningPort(proc) {
  let log = "";
  return new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    proc.on("exit", () => reject(new Error("the server exited: " + log)));
  });
}

async function startServer() {
  server = spawn(bin, ["serve", "-m", model, "--port", "0", "--parallel", "2", "-b", "16", "-t", "1", "-c", "4096",
                       "--chat-template", templatePath, "--api-key", KEY], { stdio: ["ignore", "ignore", "pipe"] });
  serverExit = new Promise((resolve) => server.on("exit", (code, sig) => resolve({ code, sig })));
  const port = await listeningPort(server);
  server.stderr.on("data", (d) => process.stderr.write(d));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(base + "/health")).status === 200) return base;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("/health never answered 200");
}

async function raw(base, route, body, { key = KEY, method = "POST", rawBody } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  const r = await fetch(base + route, { method, headers, body: method === "GET" ? undefined : rawBody ?? JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, json, text };
}

async function collect(stream, chat) {
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += chat ? ch.delta?.content ?? "" : ch.text ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

const usageOf = (ref) => ({ prompt_tokens: ref.prompt_tokens, completion_tokens: ref.completion_tokens,
                            total_tokens: ref.prompt_tokens + ref.completion_tokens });
// The three counts in one order (JSON key order is not part of the API).
const counts = (u) => u && { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };

async function testChat(client, ref) {
  const messages = [{ role: "user", content: "Once upon a time" }];
  const r = await client.chat.completions.create({ model: "m", messages, temperature: 0, max_tokens: K });
  eq(r.choices[0].message.content, ref.text, "chat: greedy answer equals `run --chat --temp 0`");
  eq(r.choices[0].finish_reason, ref.finish, "chat: finish_reason");
  eq(counts(r.usage), usageOf(ref), "chat: usage");
  const s = await collect(await client.chat.completions.create({ model: "m", messages, temperature: 0, max_completion_tokens: K,
                                                                   stream: true, stream_options: { include_usage: true } }), true);
  eq(s.text, ref.text, "chat stream: text equals `run --chat --temp 0`");
  eq(s.finish, ref.finish, "chat stream: finish_reason");
  eq(counts(s.usage), usageOf(ref), "chat stream: include_usage chunk");
}

// After the concurrent streams one slot holds prompt A and the other prompt B. A then B again (one at a
// time, both slots free) each go to the slot holding their prompt, which is in the KV cache: only the
// last token is prefilled. (Taking the first free slot would put both in the same one and reuse ~nothing.)
async function testPrefixReuse(base, client, prompts) {
  for (const [i, prompt] of prompts.entries()) {
    const before = await metric(base, "edgedecode_prompt_tokens_reused_total");
    const r = await client.completions.create({ model: "m", prompt, temperature: 0, max_tokens: 4 });
    const reused = (await metric(base, "edgedecode_prompt_tokens_reused_total")) - before;
    const n = r.usage.prompt_tokens;
    check(reused === n - 1, `prefix reuse ${"AB"[i]}: the prompt is found in its slot's KV cache`, `${reused} of ${n} tokens reused`);
  }
}

async function testCompletions(base, client, ref) {
  const r = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: K });
  eq(r.choices[0].text, ref.text, "completions: greedy text equals `run --temp 0`");
  eq(counts(r.usage), usageOf(ref), "completions: usage");
  // The prompt as token ids (the text's own, BOS included): the same answer; the ids are taken as given.
  const ids = (await raw(base, "/tokenize", { content: "Lily and Tom", add_special: true })).json.tokens;
  const byIds = await client.completions.create({ model: "m", prompt: ids, temperature: 0, max_tokens: K });
  eq([byIds.choices[0].text, byIds.usage.prompt_tokens], [ref.text, ids.length], "completions: a prompt of token ids equals its text");
  const nested = await client.completions.create({ model: "m", prompt: [ids.slice(1)], temperature: 0, max_tokens: 2 });
  eq(nested.usage.prompt_tokens, ids.length - 1, "completions: [[ids]] is one prompt, no BOS added");
  const bad = await raw(base, "/v1/completions", { model: "m", prompt: [1, 1 << 20] });
  eq([bad.status, bad.json?.error?.param], [400, "prompt"], "completions: an out-of-range token id is a 400 naming prompt");
  const s = await collect(await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: K, stream: true }), false);
  eq(s.text, ref.text, "completions stream: text");
  check(s.usage === null && s.chunks > 2, "completions stream: several chunks, no usage unless asked", `chunks ${s.chunks}`);
  const short = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: 3 });
  eq([short.choices[0].finish_reason, short.usage.completion_tokens], ["length", 3], "max_tokens 3: finish_reason length, 3 tokens");
  // A stop string from the middle of the reference: the text up to it, finish_reason stop.
  const stop = ref.text.slice(12, 16);
  const want = ref.text.slice(0, ref.text.indexOf(stop));
  const st = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: K, stop: [stop, "zzzz"] });
  eq([st.choices[0].text, st.choices[0].finish_reason], [want, "stop"], `stop ${JSON.stringify(stop)}`);
  const ss = await collect(await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: K, stop, stream: true }), false);
  eq([ss.text, ss.finish], [want, "stop"], "stop (stream)");
}

// logprobs, greedy: the chosen token is the most likely one (its logprob the largest of top_logprobs),
// values <= 0, the alternatives' probabilities sum to <= 1, the token strings concatenate to the text;
// and the first token's logprob is the log of its probability from `edgedecode logits` on the same ids.
async function testLogprobs(base, client, ref) {
  const tol = 1e-4;
  const chatMessages = [{ role: "user", content: "Once upon a time" }];
  const checkEntries = (entries, text, what) => {
    check(entries.length > 0 && entries.every((e) => e.logprob <= 0 && e.top_logprobs.length === 5), `${what}: one entry per token, 5 alternatives`);
    check(entries.every((e) => Math.abs(e.logprob - Math.max(...e.top_logprobs.map((t) => t.logprob))) < tol &&
                               e.top_logprobs[0].token === e.token),
          `${what}: greedy token is the most likely alternative`);
    check(entries.every((e) => e.top_logprobs.reduce((a, t) => a + Math.exp(t.logprob), 0) <= 1 + tol), `${what}: alternatives sum to <= 1`);
    check(entries.every((e) => Buffer.from(e.bytes).toString("latin1") === Buffer.from(e.token, "utf8").toString("latin1")),
          `${what}: bytes are the token's UTF-8 bytes`);
    eq(entries.map((e) => e.token).join(""), text, `${what}: tokens concatenate to the content`);
  };
  const c = await client.chat.completions.create({ model: "m", messages: chatMessages, temperature: 0, max_tokens: K, logprobs: true, top_logprobs: 5 });
  checkEntries(c.choices[0].logprobs?.content ?? [], c.choices[0].message.content, "chat logprobs");
  const cs = await client.chat.completions.create({ model: "m", messages: chatMessages, temperature: 0, max_tokens: K, logprobs: true,
                                                    top_logprobs: 5, stream: true });
  let streamed = [], streamText = "";
  for await (const ch of cs) {
    streamed.push(...(ch.choices[0]?.logprobs?.content ?? []));
    streamText += ch.choices[0]?.delta?.content ?? "";
  }
  checkEntries(streamed, streamText, "chat logprobs (stream)");
  eq(streamed.map((e) => e.logprob), c.choices[0].logprobs.content.map((e) => e.logprob), "chat logprobs: stream equals whole");

  const r = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: K, logprobs: 3 });
  const lp = r.choices[0].logprobs;
  eq(r.choices[0].text, ref.text, "completions logprobs: the text is unchanged");
  eq(lp?.tokens?.join(""), r.choices[0].text, "completions logprobs: tokens concatenate to the text");
  check(lp.top_logprobs.every((t, i) => Object.keys(t).length <= 3 && Math.abs(Math.max(...Object.values(t)) - lp.token_logprobs[i]) < tol),
        "completions logprobs: 3 alternatives, the chosen one the most likely");
  let off = 0;
  eq(lp.text_offset, lp.tokens.map((t) => (off += Buffer.byteLength(t)) - Buffer.byteLength(t)), "completions logprobs: text_offset");
  const ids = (await raw(base, "/tokenize", { content: "Lily and Tom", add_special: true })).json.tokens;
  const lg = JSON.parse(execFileSync(bin, ["logits", "-m", model, "--ids", ids.join(","), "--top", "5", "--json", "-t", "1"],
                                     { stdio: ["ignore", "pipe", "ignore"] }).toString());
  const [bestId, bestP] = lg.positions[ids.length - 1].top[0];
  const bestPiece = (await raw(base, "/detokenize", { tokens: [bestId] })).json.content;
  check(Math.abs(lp.token_logprobs[0] - Math.log(bestP)) < tol && lp.tokens[0].trim() === bestPiece.trim(),
        "completions logprobs: the first token's logprob is log p of `edgedecode logits`",
        `${lp.tokens[0]} ${lp.token_logprobs[0]} vs ${bestPiece} ${Math.log(bestP)}`);
  const rs = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: K, logprobs: 0, stream: true });
  const sl = [];
  for await (const ch of rs) sl.push(...(ch.choices[0]?.logprobs?.token_logprobs ?? []));
  eq(sl, lp.token_logprobs, "completions logprobs (stream, logprobs 0): the same values");

  let e = await raw(base, "/v1/chat/completions", { messages: chatMessages, logprobs: true, top_logprobs: 21 });
  eq([e.status, e.json?.error?.param], [400, "top_logprobs"], "top_logprobs 21: 400 param top_logprobs");
  e = await raw(base, "/v1/chat/completions", { messages: chatMessages, top_logprobs: 2 });
  eq([e.status, e.json?.error?.param], [400, "top_logprobs"], "top_logprobs without logprobs: 400 param top_logprobs");
  e = await raw(base, "/v1/completions", { prompt: "x", logprobs: 6 });
  eq([e.status, e.json?.error?.param], [400, "logprobs"], "completions logprobs 6: 400 param logprobs");
}

// response_format: sampled at temperature 1 with several seeds, every output that ends (finish_reason
// stop) is JSON that validates against its schema (ajv); greedy on a story prompt, which alone would never
// write JSON, gives valid JSON too; max_tokens cuts with finish_reason length; bad schemas are 400s.
const PERSON = { type: "object", additionalProperties: false, required: ["name", "age", "mood", "pets"],
                 properties: { name: { type: "string" }, age: { type: "integer" }, mood: { enum: ["happy", "sad", 3] },
                               pets: { type: "array", items: { type: "integer" } } } };
const SHAPES = { type: "object", additionalProperties: false, required: ["shape", "ok"],
                 properties: { shape: { anyOf: [{ $ref: "#/$defs/circle" }, { type: "null" }] }, ok: { type: "boolean" },
                               size: { type: "number" } },
                 $defs: { circle: { type: "object", additionalProperties: false, required: ["kind", "r"],
                                    properties: { kind: { const: "circle" }, r: { type: "integer" } } } } };
async function testResponseFormat(base, client) {
  const ajv = new Ajv({ strict: false });
  const messages = [{ role: "user", content: "Once upon a time" }];
  const formats = [["json_object", { type: "json_object" }, ajv.compile({ type: "object" })],
                   ["person", { type: "json_schema", json_schema: { name: "person", schema: PERSON, strict: true } }, ajv.compile(PERSON)],
                   ["shapes", { type: "json_schema", json_schema: { name: "shapes", schema: SHAPES, strict: true } }, ajv.compile(SHAPES)]];
  const valid = (text, validate) => {
    try {
      return validate(JSON.parse(text));
    } catch {
      return false;
    }
  };
  let ended = 0, sampled = 0;
  const bad = [];
  for (const [name, response_format, validate] of formats) {
    for (const seed of [1, 2, 3, 4]) {
      const r = await client.chat.completions.create({ model: "m", messages, temperature: 1, seed, max_tokens: 200, response_format });
      const { content } = r.choices[0].message;
      sampled++;
      if (r.choices[0].finish_reason !== "stop") continue;
      ended++;
      if (!valid(content, validate)) bad.push(`${name} seed ${seed}: ${content}`);
    }
  }
  check(bad.length === 0, `response_format, temperature 1: every finished output validates (${ended} of ${sampled} finished)`, bad.join(" | "));
  check(ended * 3 >= sampled, "response_format, temperature 1: a third of the outputs at least finish within 200 tokens", `${ended} of ${sampled}`);
  const s = await client.chat.completions.create({ model: "m", messages, temperature: 1, seed: 5, max_tokens: 200, stream: true,
                                                   response_format: formats[1][1] });
  const st = await collect(s, true);
  check(st.finish !== "stop" || valid(st.text, formats[1][2]), "response_format (stream): the streamed text validates", st.text);
  // Greedy: the story model alone writes prose (the check below fails without the constraint).
  const free = await client.chat.completions.create({ model: "m", messages, temperature: 0, max_tokens: 64 });
  check(!valid(free.choices[0].message.content, formats[2][2]), "without response_format the model writes no JSON");
  const g = await client.chat.completions.create({ model: "m", messages, temperature: 0, max_tokens: 200, response_format: formats[2][1] });
  check(g.choices[0].finish_reason === "stop" && valid(g.choices[0].message.content, formats[2][2]),
        "response_format, greedy: valid JSON where the model alone writes prose", `${g.choices[0].finish_reason} ${g.choices[0].message.content}`);
  const c = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0, max_tokens: 200, response_format: formats[2][1] });
  check(c.choices[0].finish_reason === "stop" && valid(c.choices[0].text, formats[2][2]), "response_format on /v1/completions", c.choices[0].text);
  const cut = await client.chat.completions.create({ model: "m", messages, temperature: 1, seed: 1, max_tokens: 3, response_format: formats[1][1] });
  eq([cut.choices[0].finish_reason, valid(cut.choices[0].message.content, formats[1][2])], ["length", false],
     "response_format, max_tokens 3: finish_reason length, the text incomplete");
  let e = await raw(base, "/v1/chat/completions", { messages, response_format: { type: "json_schema", json_schema: { name: "x",
                    schema: { type: "object", properties: { a: { type: "string", pattern: "^x" } } } } } });
  check(e.status === 400 && e.json?.error?.param === "response_format" && /'pattern'/.test(e.json.error.message) &&
        /\/properties\/a/.test(e.json.error.message), "unsupported schema keyword: 400 naming it and where", e.text);
  e = await raw(base, "/v1/chat/completions", { messages, response_format: { type: "xml" } });
  eq([e.status, e.json?.error?.param], [400, "response_format"], "response_format type xml: 400 param response_format");
}

async function testErrors(base, client) {
  let r = await raw(base, "/v1/chat/completions", null, { rawBody: "{not json" });
  check(r.status === 400 && r.json?.error?.type === "invalid_request_error", "malformed JSON: 400 error object", r.text);
  r = await raw(base, "/v1/chat/completions", { messages: "hi" });
  eq([r.status, r.json?.error?.param], [400, "messages"], "messages not an array: 400 param messages");
  r = await raw(base, "/v1/completions", { prompt: "x", n: 2 });
  eq([r.status, r.json?.error?.param], [400, "n"], "n 2: 400 param n");
  r = await raw(base, "/v1/completions", { prompt: "x", temperature: 5 });
  check(r.status === 400 && r.json?.error?.param === "temperature" && /temperature/.test(r.json.error.message), "temperature 5: 400 naming it", r.text);
  r = await raw(base, "/v1/completions", { prompt: "x", max_tokens: 0 });
  eq([r.status, r.json?.error?.param], [400, "max_tokens"], "max_tokens 0: 400 param max_tokens");
  r = await raw(base, "/v1/completions", { prompt: "x" }, { key: null });
  eq([r.status, r.json?.error?.code], [401, "invalid_api_key"], "no API key: 401");
  try {
    await new OpenAI({ baseURL: base + "/v1", apiKey: "wrong", maxRetries: 0 }).models.list();
    check(false, "wrong API key: the client throws 401");
  } catch (e) {
    eq(e.status, 401, "wrong API key: the client throws 401");
  }
  r = await raw(base, "/v1/nothing", {});
  check(r.status === 404 && r.json?.error?.message, "unknown path: 404 error object", r.text);
  r = await raw(base, "/v1/completions", null, { rawBody: JSON.stringify({ prompt: "x".repeat(2 << 20) }) });
  check(r.status === 413 && r.json?.error, "2 MiB body: 413 error object", `${r.status} ${r.text.slice(0, 200)}`);
  // A chunked body (fetch with a stream body): 411 before it is read (httplib alone would read it whole,
  // past --max-body).
  const chunked = new Blob([JSON.stringify({ prompt: "x" })]).stream();
  const c = await fetch(base + "/v1/completions", { method: "POST", body: chunked, duplex: "half",
                                                   headers: { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` } });
  const cj = await c.json().catch(() => null);
  eq([c.status, cj?.error?.code], [411, "length_required"], "chunked body: 411 length_required");
  const models = await client.models.list();
  eq(models.data.map((m) => m.id), ["stories260K.f32.gguf"], "/v1/models lists the model");
}

async function testTokenize(base) {
  const t = await raw(base, "/tokenize", { content: "Once upon a time, there was a cat." });
  check(Array.isArray(t.json?.tokens) && t.json.tokens.length > 3, "/tokenize gives tokens", t.text);
  const d = await raw(base, "/detokenize", { tokens: t.json?.tokens ?? [] });
  eq(d.json?.content?.trimStart(), "Once upon a time, there was a cat.", "/detokenize round trip");
  const bad = await raw(base, "/detokenize", { tokens: [1, -5] });
  eq([bad.status, bad.json?.error?.param], [400, "tokens"], "/detokenize bad id: 400 param tokens");
}

// A greedy completion of n tokens (ignore_eos), streamed: its text, and when its first and last chunks came.
async function timedStream(client, prompt, n) {
  const s = await client.completions.create({ model: "m", prompt, temperature: 0, max_tokens: n, ignore_eos: true, stream: true });
  let text = "", t0 = 0, t1 = 0;
  for await (const c of s) {
    t0 ||= performance.now();
    t1 = performance.now();
    text += c.choices[0]?.text ?? "";
  }
  return { text, t0, t1 };
}

// Two long streams at once (ignore_eos, N2 tokens each; one prompt long enough for several prefill
// chunks of -b 16) meant to overlap in time: each equals its own solo answer, so the slots share no state.
const N2 = 300;
async function testConcurrent(client, refA, refB, promptB) {
  const [a, b] = await Promise.all([timedStream(client, "Lily and Tom", N2), timedStream(client, promptB, N2)]);
  // Whether they overlapped is up to the machine (a tiny model can finish a stream before the other
  // request arrives on a loaded box): said, not asserted; the texts are the check.
  console.log(`note: concurrent streams ${a.t0 < b.t1 && b.t0 < a.t1 ? "overlapped" : "did not overlap"} in time`);
  eq(a.text, refA.text, "concurrent stream A equals its solo answer");
  eq(b.text, refB.text, "concurrent stream B equals its solo answer");
}

// Four streams at once on a server of four slots: every step their decode tokens go through one forward
// pass, and a long prompt's prefill chunks (-b 16) ride along with the others' decode rows. The streams
// start together and end at different lengths (slots leave the batch mid-way); each equals `run --temp 0`
// on its own prompt, so the rows of a batch share no state (positions, caches, logits). With `extra`
// (--lookup, --draft-quant, --self-spec: speculative decoding) the same must come out, drafts must have been accepted,
// and a sampled answer (seeded) is returned for the caller to compare across servers.
async function testBatched(prompts, lengths, refs, extra = [], label = "batched") {
  const p = spawn(bin, ["serve", "-m", model, "--port", "0", "--parallel", "4", "-b", "16", "-t", "1", "-c", "1024", ...extra],
                  { stdio: ["ignore", "ignore", "pipe"] });
  try {
    const port = await listeningPort(p);
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 300 && (await fetch(base + "/health").catch(() => ({ status: 0 }))).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));
    const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0 });
    const got = await Promise.all(prompts.map((q, i) => timedStream(client, q, lengths[i])));
    const overlap = got.every((a) => got.every((b) => a.t0 < b.t1 && b.t0 < a.t1));
    console.log(`note: the four ${label} streams ${overlap ? "overlapped" : "did not all overlap"} in time (said, not asserted)`);
    for (const [i, g] of got.entries()) eq(g.text, refs[i].text, `${label}: stream ${i} equals its solo answer`);
    const sampled = await client.completions.create({ model: "m", prompt: prompts[0], temperature: 0.9, seed: 11, max_tokens: 200,
                                                      ignore_eos: true });
    if (extra.some((a) => a === "--lookup" || a.startsWith("--draft") || a === "--self-spec")) {
      const drafted = await metric(base, "edgedecode_draft_tokens_total");
      const accepted = await metric(base, "edgedecode_draft_tokens_accepted_total");
      console.log(`note: ${label}: ${accepted} of ${drafted} drafted tokens accepted`);
      check(accepted > 0 && accepted <= drafted, `${label}: drafts were verified and some accepted`, `${accepted} of ${drafted}`);
    }
    return sampled.choices[0].text;
  } finally {
    p.kill("SIGKILL");
  }
}

async function metric(base, name) {
  const m = await raw(base, "/metrics", null, { method: "GET" });
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(m.text)?.[1] ?? -1);
}

async function waitIdle(base) {
  for (let i = 0; i < 100; i++) {
    if ((await metric(base, "edgedecode_slots_busy")) === 0 && (await metric(base, "edgedecode_queue_depth")) === 0) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

// A long generation (ignore_eos, 4000 tokens) whose client aborts after two chunks: it stops long before
// its end, its slot is freed, and the server goes on.
const LONG = 4000;
async function testAbort(base, client) {
  const before = await metric(base, "edgedecode_completion_tokens_total");
  const ac = new AbortController();
  let got = 0;
  try {
    const s = await client.completions.create({ model: "m", prompt: "The dog", temperature: 0.8, max_tokens: LONG, ignore_eos: true,
                                                stream: true }, { signal: ac.signal });
    for await (const c of s) {
      if (++got === 2) ac.abort();
    }
  } catch {}
  check(got >= 2, "abort: the stream started");
  check(await waitIdle(base), "abort: the slot is freed");
  const generated = (await metric(base, "edgedecode_completion_tokens_total")) - before;
  check(generated > 0 && generated < LONG / 2, "abort: the generation stopped early", `${generated} of ${LONG} tokens`);
  eq((await fetch(base + "/health")).status, 200, "abort: the server still answers");
  const m = (await raw(base, "/metrics", null, { method: "GET" })).text;
  for (const name of ["edgedecode_requests_total", "edgedecode_prompt_tokens_total", "edgedecode_completion_tokens_total",
                      "edgedecode_queue_depth", "edgedecode_slots_busy", "edgedecode_kv_cells_used"])
    check(m.includes(name), `/metrics has ${name}`);
}

// 2 slots + a queue of 8 full of long streams: the next request gets 429. The streams are then aborted.
async function testQueueFull(base) {
  const ac = new AbortController();
  const body = JSON.stringify({ prompt: "The cat", max_tokens: LONG, ignore_eos: true, stream: true });
  const headers = { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` };
  const streams = [];
  for (let i = 0; i < 10; i++) streams.push(fetch(base + "/v1/completions", { method: "POST", headers, body, signal: ac.signal }));
  const ok = (await Promise.all(streams)).filter((r) => r.status === 200).length;
  const r = await raw(base, "/v1/completions", { prompt: "The cat", max_tokens: 2 });
  eq([ok, r.status, r.json?.error?.code], [10, 429, "rate_limit_exceeded"], "queue full: 10 accepted, the 11th gets 429");
  ac.abort();
  check(await waitIdle(base), "queue full: aborted streams free every slot and the queue");
}

// SIGTERM during a long stream: the stream still runs to its end ([DONE], all its tokens), then the
// server exits 0.
async function testDrain(client) {
  const n = 1500;
  const s = await client.completions.create({ model: "m", prompt: "Lily and Tom", temperature: 0.8, max_tokens: n, ignore_eos: true,
                                              stream: true, stream_options: { include_usage: true } });
  let first = true, usage = null, finish = null;
  for await (const c of s) {
    if (first) server.kill("SIGTERM"), (first = false);
    if (c.usage) usage = c.usage;
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
  }
  eq([usage?.completion_tokens, finish], [n, "length"], "drain: the stream in flight at SIGTERM runs to its end");
  const { code } = await serverExit;
  eq(code, 0, "drain: exit 0 after SIGTERM");
}

// Refusals before serving: a non-loopback bind without a key (exit 2), slots that do not fit in memory
// (exit 1, saying how many would).
function testRefusals() {
  let r = spawnSync(bin, ["serve", "-m", model, "--host", "0.0.0.0", "--port", "0"], { encoding: "utf8", timeout: 20000 });
  check(r.status === 2 && /--api-key/.test(r.stderr), "--host 0.0.0.0 without --api-key: exit 2 naming --api-key", `${r.status} ${r.stderr}`);
  r = spawnSync(bin, ["serve", "-m", model, "--port", "0", "--parallel", "64", "-c", "4096"],
                { encoding: "utf8", timeout: 20000, env: { ...process.env, EDGEDECODE_AVAILABLE_MEMORY: String(40 << 20) } });
  check(r.status === 1 && /--parallel \d+ would fit/.test(r.stderr) && /KV cache/.test(r.stderr),
        "--parallel 64 beyond memory: exit 1 with the plan and the slots that fit", `${r.status} ${r.stderr.slice(-300)}`);
}

// Speculative decoding with a draft model: refused as `run` refuses it (exit 2 for a bad --draft-quant type,
// a draft of another vocabulary, a draft larger than the model, --draft-max alone, --self-spec of a layer the
// model lacks), and the draft's weights and per-slot KV cache counted in the memory check: memory that holds the
// slots' plan without the draft (per `plan --seqs 4`) but not with it refuses to start (exit 1, the plan
// with its draft lines).
function testDraftRefusals() {
  const serve = (extra, env = {}) =>
    spawnSync(bin, ["serve", "-m", model, "--port", "0", "-t", "1", ...extra],
              { encoding: "utf8", timeout: 20000, env: { ...process.env, ...env } });
  let r = serve(["--draft-quant", "q9_9"]);
  check(r.status === 2 && /--draft-quant: unknown or unwritable type 'q9_9'/.test(r.stderr), "serve --draft-quant q9_9: exit 2",
        `${r.status} ${r.stderr}`);
  const cfg = path.join(work, "draft_synth.json");
  fs.writeFileSync(cfg, JSON.stringify({ dim: 32, n_layers: 1, n_heads: 2, n_kv_heads: 2, ffn: 64, vocab: 600, context: 128 }));
  const synth = path.join(work, "draft_synth.gguf");
  execFileSync(bin, ["synth", "--config", cfg, "--type", "f32", "-o", synth, "--no-progress"], { stdio: "ignore" });
  r = serve(["--draft", synth]);
  check(r.status === 2 && /vocabulary differs from the target's at token id/.test(r.stderr) && r.stderr.includes("--draft " + synth),
        "serve --draft of another vocabulary: exit 2 naming the first differing token", `${r.status} ${r.stderr}`);
  const q4 = path.join(args.testdata, "llm", "gguf", "stories260K.q4_0-ffn_down_f16.gguf");
  r = spawnSync(bin, ["serve", "-m", q4, "--port", "0", "-t", "1", "--draft", model], { encoding: "utf8", timeout: 20000 });
  check(r.status === 2 && /more than the target's/.test(r.stderr), "serve --draft larger than the model: exit 2", `${r.status} ${r.stderr}`);
  r = serve(["--draft-max", "4"]);
  check(r.status === 2 && /--draft-max needs --draft, --draft-quant or --self-spec/.test(r.stderr), "serve --draft-max alone: exit 2",
        `${r.status} ${r.stderr}`);
  r = serve(["--self-spec", "2,9"]);
  check(r.status === 2 && /--self-spec 2,9: layer 9 is out of range: the model has 5 layers/.test(r.stderr),
        "serve --self-spec of a layer the model lacks: exit 2, as run", `${r.status} ${r.stderr}`);
  const total = (extra) => JSON.parse(execFileSync(bin, ["plan", "-m", model, "--seqs", "4", "-c", "1024", "-b", "16", "--json", ...extra],
                                                   { stdio: ["ignore", "pipe", "ignore"] }).toString()).total_bytes;
  const plain = total([]), drafted = total(["--draft-quant", "q4_0"]);
  check(drafted > plain, "plan counts the draft", `${drafted} vs ${plain}`);
  const avail = String(Math.floor((plain + drafted) / 2));
  r = serve(["--parallel", "4", "-c", "1024", "-b", "16", "--draft-quant", "q4_0"], { EDGEDECODE_AVAILABLE_MEMORY: avail });
  check(r.status === 1 && /draft KV cache/.test(r.stderr) && /--parallel 4 needs/.test(r.stderr),
        "serve --draft-quant beyond memory (without the draft it fits): exit 1 with the draft in the plan", `${r.status} ${r.stderr.slice(-400)}`);
}

// serve --self-spec auto without a saved skip set (a copy of the model in the work folder): it searches on the
// built-in text before it answers, saves the set beside the model, and serves.
async function testSelfSpecAuto() {
  const copy = path.join(work, "self-spec-auto.gguf");
  fs.copyFileSync(model, copy);
  fs.rmSync(copy + ".self-spec.json", { force: true });
  const p = spawn(bin, ["serve", "-m", copy, "--port", "0", "-t", "1", "-c", "256", "--self-spec", "auto"],
                  { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  p.stderr.on("data", (d) => (log += d.toString()));
  try {
    const base = `http://127.0.0.1:${await listeningPort(p)}`;
    let status = 0;
    for (let i = 0; i < 600 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await fetch(base + "/health").catch(() => ({ status: 0 }))).status;
    }
    eq(status, 200, "self-spec auto: serves after the search");
    check(/searched the layers to skip on \d+ tokens of the built-in text/.test(log) && fs.existsSync(copy + ".self-spec.json"),
          "self-spec auto: searched on the built-in text and saved beside the model", log);
    check(/ready: .*self-spec 8 \(skip [0-9,-]+, searched/.test(log), "self-spec auto: the ready line names the set", log);
  } finally {
    p.kill("SIGKILL");
  }
}

// While the model loads (a 135M-parameter synth model: long enough to see), /health and the API answer
// 503; then 200.
async function testLoading() {
  const big = path.join(work, "synth-smollm2-135m.gguf");
  execFileSync(bin, ["synth", "--preset", "smollm2-135m", "-o", big], { stdio: "ignore" });
  const p = spawn(bin, ["serve", "-m", big, "--port", "0", "-c", "256", "-t", "1"], { stdio: ["ignore", "ignore", "pipe"] });
  try {
    const port = await listeningPort(p);
    const base = `http://127.0.0.1:${port}`;
    const h = await fetch(base + "/health");
    const c = await raw(base, "/v1/completions", { prompt: "x" }, { key: null });
    eq([h.status, c.status, c.json?.error?.code], [503, 503, "model_loading"], "loading: /health and the API answer 503");
    let status = 0;
    for (let i = 0; i < 600 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await fetch(base + "/health")).status;
    }
    eq(status, 200, "loaded: /health answers 200");
  } finally {
    p.kill("SIGKILL");
    fs.rmSync(big, { force: true });
  }
}

async function main() {
  testRefusals();
  await testLoading();
  const chatRef = runRef("Once upon a time", true);
  const refA = runRef("Lily and Tom", false);
  const promptB = "One day, a little girl named Sue went to the park with her mom. She saw a big tree and a small bird on it.";
  const longA = runRef("Lily and Tom", false, N2, ["--ignore-eos", "-c", "4096"]);
  const longB = runRef(promptB, false, N2, ["--ignore-eos", "-c", "4096"]);
  check(longA.text !== longB.text, "the two references differ (the cross-talk check can fail)");
  const batchPrompts = ["Lily and Tom", promptB, "Once upon a time", "The cat"];
  const batchLengths = [400, 300, 360, 320];
  const batchRefs = batchPrompts.map((q, i) => runRef(q, false, batchLengths[i], ["--ignore-eos", "-c", "1024"]));
  check(new Set(batchRefs.map((r) => r.text)).size === 4, "the four batched references differ");
  const sampledPlain = await testBatched(batchPrompts, batchLengths, batchRefs);
  const sampledLookup = await testBatched(batchPrompts, batchLengths, batchRefs, ["--lookup", "4"], "lookup");
  eq(sampledLookup, sampledPlain, "lookup: a seeded sampled answer equals the one without drafting");
  testDraftRefusals();
  const sampledDraft = await testBatched(batchPrompts, batchLengths, batchRefs, ["--draft-quant", "q4_0"], "draft");
  eq(sampledDraft, sampledPlain, "draft: a seeded sampled answer equals the one without drafting");
  const sampledSelf = await testBatched(batchPrompts, batchLengths, batchRefs, ["--self-spec", "3"], "self-spec");
  eq(sampledSelf, sampledPlain, "self-spec: a seeded sampled answer equals the one without drafting");
  await testSelfSpecAuto();
  const base = await startServer();
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: KEY, maxRetries: 0 });
  await testChat(client, chatRef);
  await testCompletions(base, client, refA);
  await testLogprobs(base, client, refA);
  await testResponseFormat(base, client);
  await testErrors(base, client);
  await testTokenize(base);
  await testConcurrent(client, longA, longB, promptB);
  await testPrefixReuse(base, client, ["Lily and Tom", promptB]);
  await testQueueFull(base);
  await testAbort(base, client);
  await testDrain(client);
}

try {
  await main();
} catch (e) {
  failures++;
  console.log("FAIL " + (e.stack ?? e));
} finally {
  killServer();
  clearTimeout(watchdog);
}
console.log(failures ? `serve_test: ${failures} check(s) failed` : "serve_test: all checks passed");
process.exit(failures ? 1 : 0);
