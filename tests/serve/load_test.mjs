// A bounded load test of `edgedecode serve` on loopback: --clients concurrent clients for --duration
// seconds, a third of them cancelling streams mid-way (SDK abort, fetch abort, socket destroyed), every
// client interleaving malformed and oversized requests with greedy ones; a poller keeps asking /health and
// /metrics. It stops by itself. Checks:
//  - every completed greedy answer (whole or streamed, chat or text) equals `edgedecode run --temp 0` on
//    the same input: text, finish_reason, token counts; a cancelled greedy stream's text is a prefix of its
//    reference (a cancellation disturbs nothing, its slot's KV cache included, which later prompts reuse);
//  - every bad request gets its status and an OpenAI error object (400 malformed JSON or bad field, 401
//    wrong key, 404, 413 oversized body, 400 prompt beyond the context); 429 (queue full) is counted, not
//    a failure; raw garbage and truncated requests end in a 4xx or a closed connection, never a hang;
//  - /health and /metrics answer 200 all along; afterwards no slot is busy, nothing queued, the greedy
//    answers are still right;
//  - the server's RSS after the load is within RSS_BOUND_MIB of its RSS after a warm-up (no leak), except
//    under --sanitized 1 (ASan's quarantine holds freed memory: there LeakSanitizer checks at exit);
//  - SIGTERM: the server exits 0 and its stderr reports no sanitizer error.
//
// usage: node load_test.mjs --edgedecode BIN --testdata DIR --work DIR [--clients 16] [--duration 30]
//        [--parallel 4] [--sanitized 0|1] [--seed 1] [--break-reference 0|1] [--lookup 0] [--draft-quant TYPE]
// --lookup N starts the server with speculative decoding by prompt lookup (drafted rows rolled back under
// cancellation and prefix reuse: the answers must not change); --draft-quant TYPE with a draft model as
// well (the model re-encoded; with --lookup, asked when the lookup finds nothing): each slot's draft
// context follows its history through the same cancellations and reuses.
// --break-reference 1 alters one reference answer: the run must then fail (the test can fail).
import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "tools", "oracle", "package.json"));
let OpenAI;
try {
  OpenAI = require("openai");
} catch (e) {
  console.error("load_test: npm openai is missing: run `make setup` (npm ci in tools/oracle)\n" + e.message);
  process.exit(1);
}

const args = { clients: "16", duration: "30", parallel: "4", sanitized: "0", seed: "1", "break-reference": "0", lookup: "0",
               "draft-quant": "" };
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const bin = args.edgedecode;
const model = path.join(args.testdata, "llm", "gguf", "stories260K.f32.gguf");
const work = args.work;
const CLIENTS = Number(args.clients), DURATION_S = Number(args.duration), PARALLEL = Number(args.parallel);
const SANITIZED = args.sanitized === "1";
const CTX = 512;          // per slot
const QUEUE = 6;          // slots + queue below the number of clients: the queue fills up at times (429)
const KEY = "load-test-key";
// RSS growth allowed between the warm-up and the end of the load. The warm-up fills every slot's KV
// cache to the end of its context and runs every kind of request from every client, so the pages the
// server needs are already touched; what may still move is allocator bookkeeping (glibc's per-thread
// arenas keep freed chunks) and the kernel's accounting: a few MiB. A leak of 1 KiB per request over the
// thousands of requests of a run exceeds it.
const RSS_BOUND_MIB = 6;
fs.mkdirSync(work, { recursive: true });
const templatePath = path.join(work, "chatml.jinja");
fs.writeFileSync(templatePath,
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");

let failures = 0;
const failLines = [];
function check(ok, what, detail = "") {
  if (ok) return true;
  failures++;
  const line = `FAIL ${what}${detail ? ": " + detail : ""}`;
  if (failLines.length < 40) console.log(line);
  failLines.push(line);
  return false;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// One seeded generator per client: the run is the same request mix each time (timing aside).
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 4294967296);
}

// --- references: `edgedecode run --temp 0`, one process per case ---------------------------------------
const STORY = "One day, a little girl named Sue went to the park with her mom. She saw a big tree and a small bird on it.";
// Greedy cases the checking clients send; the prompts share prefixes with each other and with the
// cancelled ones, so that slots are reused after cancellations (prefix reuse from a half-written cache).
const CASES = [
  { chat: false, prompt: "Lily and Tom", max_tokens: 24 },
  { chat: false, prompt: STORY, max_tokens: 40 },  // several prefill chunks of -b 16
  { chat: false, prompt: "Once upon a time", max_tokens: 48, ignore_eos: true },
  { chat: true, prompt: "Once upon a time", max_tokens: 32 },
  { chat: true, prompt: "Lily and Tom went to the park", max_tokens: 20 },
];
// Streams the cancelling clients start and abort (greedy, long): a prefix of these references.
const LONG = 200;
const CANCEL_CASES = [
  { chat: false, prompt: "Lily and Tom went to", max_tokens: LONG, ignore_eos: true },
  { chat: false, prompt: STORY + " The bird", max_tokens: LONG, ignore_eos: true },
  { chat: true, prompt: "Once upon a time", max_tokens: LONG, ignore_eos: true },
];

function reference(c) {
  const argv = ["run", "-m", model, "-p", c.prompt, "--temp", "0", "-n", String(c.max_tokens), "--json", "-t", "1",
                "-c", String(CTX)];
  if (c.ignore_eos) argv.push("--ignore-eos");
  if (c.chat) argv.push("--chat", "--chat-template", templatePath);
  const j = JSON.parse(execFileSync(bin, argv, { stdio: ["ignore", "pipe", "ignore"] }).toString());
  return { text: j.text, prompt_tokens: j.prompt_tokens.length, completion_tokens: j.tokens.length,
           finish: j.stop === "eos" || j.stop === "stop_string" ? "stop" : "length" };
}

// --- the server --------------------------------------------------------------------------------------
let server = null, serverExit = null, serverLog = "";
function killServer() {
  if (server && server.exitCode === null && server.signalCode === null) server.kill("SIGKILL");
}
process.on("exit", killServer);

async function startServer() {
  server = spawn(bin, ["serve", "-m", model, "--port", "0", "--parallel", String(PARALLEL), "-b", "16", "-t", "1",
                       "-c", String(CTX), "--queue", String(QUEUE), "--chat-template", templatePath, "--api-key", KEY,
                       "--lookup", args.lookup, ...(args["draft-quant"] ? ["--draft-quant", args["draft-quant"]] : [])],
                 { stdio: ["ignore", "ignore", "pipe"] });
  serverExit = new Promise((resolve) => server.on("exit", (code, sig) => resolve({ code, sig })));
  const port = await new Promise((resolve, reject) => {
    server.stderr.on("data", (d) => {
      if (serverLog.length < (8 << 20)) serverLog += d.toString();
      const m = serverLog.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    server.on("exit", () => reject(new Error("the server exited: " + serverLog)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(base + "/health")).status === 200) return { base, port };
    } catch {}
    await sleep(100);
  }
  throw new Error("/health never answered 200");
}

function rssKiB() {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.pid}/status`, "utf8"));
  return m ? Number(m[1]) : NaN;
}

// --- requests ----------------------------------------------------------------------------------------
const HEADERS = { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` };
const stats = { ok: 0, streamed: 0, cancelled: 0, completedBeforeCancel: 0, busy429: 0, malformed: 0, health: 0, metrics: 0 };
const kinds = {};

function body(c, stream, includeUsage) {
  const b = { model: "m", temperature: 0, max_tokens: c.max_tokens };
  if (c.ignore_eos) b.ignore_eos = true;
  if (c.chat) b.messages = [{ role: "user", content: c.prompt }];
  else b.prompt = c.prompt;
  if (stream) b.stream = true;
  if (includeUsage) b.stream_options = { include_usage: true };
  return b;
}
const route = (c) => (c.chat ? "/v1/chat/completions" : "/v1/completions");

// Whether an error is the queue being full (counted) rather than a failure.
function is429(status, json) {
  if (status !== 429) return false;
  check(json?.error?.code === "rate_limit_exceeded", "429 carries an OpenAI error object", JSON.stringify(json));
  stats.busy429++;
  return true;
}

function compare(got, ref, what) {
  check(got.text === ref.text, `${what}: text equals the greedy reference`, `got ${JSON.stringify(got.text)}, want ${JSON.stringify(ref.text)}`);
  check(got.finish === ref.finish, `${what}: finish_reason`, `got ${got.finish}, want ${ref.finish}`);
  if (got.usage)
    check(got.usage.prompt_tokens === ref.prompt_tokens && got.usage.completion_tokens === ref.completion_tokens,
          `${what}: usage`, `got ${JSON.stringify(got.usage)}, want ${ref.prompt_tokens}+${ref.completion_tokens}`);
}

// Server-sent events of a fetch response, parsed; onEvent(json) returns false to stop reading.
async function readSse(res, chat, onPiece) {
  const dec = new TextDecoder();
  let buf = "", text = "", finish = null, usage = null, done = false, error = null;
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith("data: ")) continue;
      const data = ev.slice(6);
      if (data === "[DONE]") {
        done = true;
        continue;
      }
      const j = JSON.parse(data);
      if (j.error) error = j.error;
      if (j.usage) usage = j.usage;
      for (const ch of j.choices ?? []) {
        const piece = chat ? ch.delta?.content ?? "" : ch.text ?? "";
        text += piece;
        if (ch.finish_reason) finish = ch.finish_reason;
        if (piece && onPiece && onPiece(text) === false) return { text, finish, usage, done, error, stopped: true };
      }
    }
  }
  return { text, finish, usage, done, error, stopped: false };
}

// A greedy request checked against its reference, in one of three ways.
async function greedy(client, c, ref, how, what) {
  if (how === "sdk") {
    try {
      const r = c.chat ? await client.chat.completions.create(body(c, false))
                       : await client.completions.create(body(c, false));
      const ch = r.choices[0];
      compare({ text: c.chat ? ch.message.content : ch.text, finish: ch.finish_reason, usage: r.usage }, ref, what);
      stats.ok++;
    } catch (e) {
      if (!is429(e.status, e.error ? { error: e.error } : null)) check(false, `${what}: request`, String(e));
    }
    return;
  }
  if (how === "sdk-stream") {
    try {
      const s = c.chat ? await client.chat.completions.create(body(c, true, true))
                       : await client.completions.create(body(c, true, true));
      let text = "", finish = null, usage = null;
      for await (const ch of s) {
        if (ch.usage) usage = ch.usage;
        for (const x of ch.choices) {
          text += c.chat ? x.delta?.content ?? "" : x.text ?? "";
          if (x.finish_reason) finish = x.finish_reason;
        }
      }
      compare({ text, finish, usage }, ref, what);
      check(usage !== null, `${what}: include_usage gives a usage chunk`);
      stats.ok++, stats.streamed++;
    } catch (e) {
      if (!is429(e.status, e.error ? { error: e.error } : null)) check(false, `${what}: request`, String(e));
    }
    return;
  }
  try {
    const res = await fetch(BASE + route(c), { method: "POST", headers: HEADERS, body: JSON.stringify(body(c, true)) });
    if (res.status !== 200) {
      const j = await res.json().catch(() => null);
      if (!is429(res.status, j)) check(false, `${what}: status`, `${res.status} ${JSON.stringify(j)}`);
      return;
    }
    const r = await readSse(res, c.chat);
    check(r.done && !r.error, `${what}: the stream ends with [DONE] and no error`, JSON.stringify(r.error));
    compare(r, ref, what);
    stats.ok++, stats.streamed++;
  } catch (e) {
    check(false, `${what}: request`, String(e.cause ?? e));
  }
}

// A long greedy stream cancelled after k pieces: by the SDK's AbortController, by aborting a fetch, or by
// destroying the socket under a raw HTTP request. What arrived is a prefix of the reference; a stream
// that ends before k pieces is a completed answer and equals its reference.
async function cancelled(client, c, ref, how, k, what) {
  let text = "", finish = null, ended = false;
  if (how === "sdk") {
    const ac = new AbortController();
    try {
      const s = c.chat ? await client.chat.completions.create(body(c, true), { signal: ac.signal })
                       : await client.completions.create(body(c, true), { signal: ac.signal });
      let n = 0;
      for await (const ch of s) {
        for (const x of ch.choices) {
          const piece = c.chat ? x.delta?.content ?? "" : x.text ?? "";
          text += piece;
          if (x.finish_reason) finish = x.finish_reason;
          if (piece) n++;
        }
        if (n >= k) {
          ac.abort();
          break;
        }
      }
      ended = n < k;
    } catch (e) {
      if (e.name !== "APIUserAbortError" && !is429(e.status, e.error ? { error: e.error } : null))
        check(false, `${what}: request`, String(e));
      if (e.status === 429) return;
    }
  } else if (how === "fetch") {
    const ac = new AbortController();
    try {
      const res = await fetch(BASE + route(c), { method: "POST", headers: HEADERS, body: JSON.stringify(body(c, true)), signal: ac.signal });
      if (res.status !== 200) {
        const j = await res.json().catch(() => null);
        if (!is429(res.status, j)) check(false, `${what}: status`, `${res.status} ${JSON.stringify(j)}`);
        return;
      }
      let n = 0;
      const r = await readSse(res, c.chat, () => ++n < k);
      text = r.text, finish = r.finish, ended = !r.stopped;
      if (r.stopped) ac.abort();
    } catch (e) {
      return void check(false, `${what}: request`, String(e.cause ?? e));
    }
  } else {
    // Raw socket: the request, then k data events, then destroy (no FIN handshake of the HTTP layer).
    const r = await rawExchange(BASE_PORT, rawPost(route(c), JSON.stringify(body(c, true))), { stopAfterEvents: k });
    if (/^HTTP\/1\.1 429/.test(r.head)) return void stats.busy429++;
    check(/^HTTP\/1\.1 200/.test(r.head) || r.head === "", `${what}: raw stream status`, r.head.slice(0, 80));
    text = sseText(r.body, c.chat);
    ended = r.body.includes("data: [DONE]");
    if (ended) finish = /"finish_reason":"(\w+)"/.exec(r.body)?.[1] ?? null;
  }
  if (ended) {
    stats.completedBeforeCancel++;
    compare({ text, finish }, ref, `${what} (ran to its end before the cancel)`);
  } else {
    stats.cancelled++;
    check(ref.text.startsWith(text), `${what}: the text before the cancel is a prefix of the reference`,
          `got ${JSON.stringify(text)}`);
  }
}

// The body of a chunked HTTP response, up to its last complete chunk.
function dechunk(raw) {
  let out = "", i = 0;
  for (;;) {
    const eol = raw.indexOf("\r\n", i);
    if (eol < 0) return out;
    const n = parseInt(raw.slice(i, eol), 16);
    if (!(n > 0) || eol + 2 + n > raw.length) return out;
    out += raw.slice(eol + 2, eol + 2 + n);
    i = eol + 2 + n + 2;
  }
}

function sseText(raw, chat) {
  let text = "";
  // raw holds one char per byte (latin1): chunk sizes count bytes; the events are UTF-8.
  for (const m of Buffer.from(dechunk(raw), "latin1").toString("utf8").matchAll(/data: (\{.*\})\n/g)) {
    try {
      const j = JSON.parse(m[1]);
      for (const ch of j.choices ?? []) text += chat ? ch.delta?.content ?? "" : ch.text ?? "";
    } catch {}
  }
  return text;
}

function rawPost(p, payload, extra = "") {
  return `POST ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n` +
         `Content-Length: ${Buffer.byteLength(payload)}\r\n${extra}Connection: close\r\n\r\n${payload}`;
}

// Writes `request` (a string, or an array of strings written in turn) on a fresh TCP connection and reads
// the answer until the server closes, or the stopAfterEvents-th SSE data event (then the socket is
// destroyed), or destroyAfterWrite (a client that goes away mid-request). Bounded: timeoutMs.
// untilResponse: stop at the end of one whole response (its Content-Length), as a client does that gets
// an answer before it has sent its body.
function rawExchange(port, request, { stopAfterEvents = 0, destroyAfterWrite = false, timeoutMs = 30000, untilResponse = false } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, "127.0.0.1");
    let data = "", settled = false;
    const finish = (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const i = data.indexOf("\r\n\r\n");
      resolve({ head: i >= 0 ? data.slice(0, i) : data, body: i >= 0 ? data.slice(i + 4) : "", err, timedOut: err === "timeout" });
    };
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    let error = null;  // a write after the server closed (EPIPE, ECONNRESET): what was read still counts
    sock.on("error", (e) => (error = e.code ?? String(e)));
    sock.on("close", () => finish(error));
    sock.on("data", (d) => {
      data += d.toString("latin1");
      if (stopAfterEvents > 0 && (data.match(/\ndata: \{/g)?.length ?? 0) >= stopAfterEvents) finish(null);
      const end = data.indexOf("\r\n\r\n"), len = /\r\nContent-Length: (\d+)/i.exec(data.slice(0, end))?.[1];
      if (untilResponse && end >= 0 && len !== undefined && data.length >= end + 4 + Number(len)) finish(null);
    });
    sock.on("connect", async () => {
      for (const part of [].concat(request)) {
        if (settled) return;
        if (!sock.write(part)) await new Promise((r) => sock.once("drain", r).once("close", r));
      }
      if (destroyAfterWrite) finish(null);
    });
  });
}

// --- malformed, oversized and hostile requests --------------------------------------------------------
async function post(p, rawBody, headers = HEADERS) {
  const r = await fetch(BASE + p, { method: "POST", headers, body: rawBody });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text };
}
const errorObject = (j) => typeof j?.error?.message === "string" && typeof j.error.type === "string";
const BIG = "x".repeat(2 << 20);  // twice --max-body's default
const LONG_PROMPT = "Lily and Tom went to the park. ".repeat(120);  // beyond a slot's context of CTX tokens

const MALFORMED = {
  async bad_json() {
    const r = await post("/v1/chat/completions", "{not json");
    return r.status === 400 && r.json?.error?.type === "invalid_request_error" || `${r.status} ${r.text.slice(0, 120)}`;
  },
  async not_an_object() {
    const r = await post("/v1/completions", "[1, 2, 3]");
    return r.status === 400 && errorObject(r.json) || `${r.status} ${r.text.slice(0, 120)}`;
  },
  async bad_field() {
    const r = await post("/v1/completions", JSON.stringify({ prompt: "x", temperature: 5 }));
    return r.status === 400 && r.json?.error?.param === "temperature" || `${r.status} ${r.text.slice(0, 120)}`;
  },
  async wrong_key() {
    const r = await post("/v1/completions", JSON.stringify({ prompt: "x" }), { ...HEADERS, Authorization: "Bearer nope" });
    return r.status === 401 && r.json?.error?.code === "invalid_api_key" || `${r.status} ${r.text.slice(0, 120)}`;
  },
  async unknown_route() {
    const r = await post("/v1/nothing", "{}");
    return r.status === 404 && errorObject(r.json) || `${r.status} ${r.text.slice(0, 120)}`;
  },
  async oversized_body() {
    const r = await post("/v1/completions", JSON.stringify({ prompt: BIG }));
    return r.status === 413 && errorObject(r.json) || `${r.status} ${r.text.slice(0, 120)}`;
  },
  async prompt_beyond_context() {
    const r = await post("/v1/completions", JSON.stringify({ prompt: LONG_PROMPT, max_tokens: 4 }));
    return r.status === 400 && r.json?.error?.code === "context_length_exceeded" || `${r.status} ${r.text.slice(0, 120)}`;
  },
  // A chunked body, and one without a Content-Length: 411 before any of it is read. The client sends the
  // head and 64 KiB of body and waits: a server that reads such a body (whole, past --max-body) would
  // wait for the rest until its read timeout, past this exchange's bound.
  async chunked_body() {
    const head = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
                 `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = BIG.slice(0, 64 << 10);
    const r = await rawExchange(BASE_PORT, [head, chunk.length.toString(16) + "\r\n" + chunk + "\r\n"], { timeoutMs: 15000, untilResponse: true });
    return !r.timedOut && /^HTTP\/1\.1 411/.test(r.head) && /"length_required"/.test(r.body) || `${r.err} ${r.head.slice(0, 80)}`;
  },
  async no_length() {
    const head = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
                 `Content-Type: application/json\r\n\r\n`;
    const r = await rawExchange(BASE_PORT, [head, `{"prompt": "${BIG.slice(0, 64 << 10)}`], { timeoutMs: 15000, untilResponse: true });
    return !r.timedOut && /^HTTP\/1\.1 411/.test(r.head) && /"length_required"/.test(r.body) || `${r.err} ${r.head.slice(0, 80)}`;
  },
  // Not HTTP at all: a 400, or closed.
  async garbage() {
    const r = await rawExchange(BASE_PORT, "\x16\x03\x01\x02\x00 GARBAGE \xff\xfe\r\n\r\n");
    return !r.timedOut && (/^HTTP\/1\.1 4\d\d/.test(r.head) || r.head === "") || `${r.err} ${r.head.slice(0, 80)}`;
  },
  // A header line of 64 KiB: a 4xx, or closed.
  async huge_header() {
    const r = await rawExchange(BASE_PORT, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(64 << 10)}\r\nConnection: close\r\n\r\n`);
    return !r.timedOut && (/^HTTP\/1\.1 4\d\d/.test(r.head) || r.head === "") || `${r.err} ${r.head.slice(0, 80)}`;
  },
  // A body shorter than its Content-Length, then the client goes away.
  async truncated_body() {
    const payload = JSON.stringify(body(CASES[0], true));
    const req = rawPost("/v1/completions", payload).replace(/Content-Length: \d+/, `Content-Length: ${payload.length + 500}`);
    const r = await rawExchange(BASE_PORT, req, { destroyAfterWrite: true });
    return !r.timedOut || "timed out";
  },
};
const MALFORMED_KINDS = Object.keys(MALFORMED);

async function malformed(kind, what) {
  let verdict;
  try {
    verdict = await MALFORMED[kind]();
  } catch (e) {
    verdict = String(e.cause ?? e);
  }
  kinds[kind] = (kinds[kind] ?? 0) + 1;
  stats.malformed++;
  check(verdict === true, `${what}: ${kind}`, verdict);
}

// --- the load ------------------------------------------------------------------------------------------
let BASE = "", BASE_PORT = 0;
const HOWS = ["sdk", "sdk-stream", "fetch-stream"], CANCEL_HOWS = ["sdk", "fetch", "socket"];

async function checkingClient(id, end, refs) {
  const r = rng(Number(args.seed) * 1000 + id);
  const client = new OpenAI({ baseURL: BASE + "/v1", apiKey: KEY, maxRetries: 0 });
  for (let n = 0; Date.now() < end; n++) {
    if (r() < 0.2) {
      await malformed(MALFORMED_KINDS[Math.floor(r() * MALFORMED_KINDS.length)], `client ${id}`);
      continue;
    }
    const i = Math.floor(r() * CASES.length), how = HOWS[Math.floor(r() * HOWS.length)];
    const busyBefore = stats.busy429;
    await greedy(client, CASES[i], refs[i], how, `client ${id} case ${i} ${how}`);
    if (stats.busy429 > busyBefore) await sleep(20 + r() * 30);
  }
}

async function cancellingClient(id, end, refs) {
  const r = rng(Number(args.seed) * 1000 + id);
  const client = new OpenAI({ baseURL: BASE + "/v1", apiKey: KEY, maxRetries: 0 });
  while (Date.now() < end) {
    if (r() < 0.2) {
      await malformed(MALFORMED_KINDS[Math.floor(r() * MALFORMED_KINDS.length)], `client ${id}`);
      continue;
    }
    const i = Math.floor(r() * CANCEL_CASES.length), how = CANCEL_HOWS[Math.floor(r() * CANCEL_HOWS.length)];
    const k = 1 + Math.floor(r() * 60);
    const busyBefore = stats.busy429;
    await cancelled(client, CANCEL_CASES[i], refs[i], how, k, `client ${id} cancel case ${i} ${how} after ${k}`);
    if (stats.busy429 > busyBefore) await sleep(20 + r() * 30);
  }
}

// /health and /metrics all along: each must answer 200 (a stuck server fails the 15 s bound).
async function poller(end) {
  for (let n = 0; Date.now() < end; n++) {
    const p = n % 3 === 2 ? "/metrics" : "/health";
    try {
      const res = await fetch(BASE + p, { headers: HEADERS, signal: AbortSignal.timeout(15000) });
      const text = await res.text();
      check(res.status === 200 && (p === "/health" || text.includes("edgedecode_slots_busy")), `${p} during the load`,
            `${res.status} ${text.slice(0, 80)}`);
      p === "/health" ? stats.health++ : stats.metrics++;
    } catch (e) {
      check(false, `${p} during the load answers`, String(e));
    }
    await sleep(200);
  }
}

async function load(seconds, refs, cancelRefs) {
  const end = Date.now() + seconds * 1000;
  const clients = [];
  for (let id = 0; id < CLIENTS; id++)
    clients.push(id % 3 === 2 ? cancellingClient(id, end, cancelRefs) : checkingClient(id, end, refs));
  clients.push(poller(end));
  await Promise.all(clients.map((p) => p.catch((e) => check(false, "a client threw", String(e.stack ?? e)))));
}

async function metric(name) {
  const t = await (await fetch(BASE + "/metrics", { headers: HEADERS })).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(t)?.[1] ?? -1);
}

async function waitIdle() {
  for (let i = 0; i < 200; i++) {
    if ((await metric("edgedecode_slots_busy")) === 0 && (await metric("edgedecode_queue_depth")) === 0) return true;
    await sleep(50);
  }
  return false;
}

// Every case once, one at a time, whole and streamed.
async function sequentialRound(refs, what) {
  const client = new OpenAI({ baseURL: BASE + "/v1", apiKey: KEY, maxRetries: 0 });
  for (const [i, c] of CASES.entries())
    for (const how of HOWS) await greedy(client, c, refs[i], how, `${what} case ${i} ${how}`);
}

// Every slot's KV cache filled to the end of its context (ignore_eos, max_tokens beyond it): the pages a
// slot can ever use are touched before the RSS baseline.
async function fillSlots() {
  const c = { chat: false, prompt: "Lily and Tom", max_tokens: 4 * CTX, ignore_eos: true };
  const all = [];
  for (let i = 0; i < PARALLEL; i++)
    all.push(fetch(BASE + "/v1/completions", { method: "POST", headers: HEADERS, body: JSON.stringify(body(c, false)) })
               .then((r) => r.json()));
  for (const j of await Promise.all(all))
    check(j.choices?.[0]?.finish_reason === "length" && j.usage.prompt_tokens + j.usage.completion_tokens >= CTX - 1,
          "warm-up: a slot runs to the end of its context", JSON.stringify(j.usage ?? j));
}

async function main() {
  const t0 = Date.now();
  const refs = CASES.map(reference), cancelRefs = CANCEL_CASES.map(reference);
  check(new Set(refs.map((r) => r.text)).size === refs.length, "the references differ from each other (the checks can fail)");
  check(cancelRefs.every((r) => r.completion_tokens === LONG), "the cancelled cases' references are LONG tokens");
  if (args["break-reference"] === "1") refs[1].text = refs[1].text.replace(/ /, "  ");
  ({ base: BASE, port: BASE_PORT } = await startServer());
  console.log(`load_test: server up (pid ${server.pid}), ${PARALLEL} slots x ${CTX} tokens, queue ${QUEUE}; ` +
              `${CLIENTS} clients (${Math.floor((CLIENTS + 1) / 3)} cancelling) for ${DURATION_S} s`);

  // Warm-up: every way of asking once, every slot full once, then a short burst of the load itself.
  await sequentialRound(refs, "warm-up");
  await fillSlots();
  for (const kind of MALFORMED_KINDS) await malformed(kind, "warm-up");
  await load(Math.min(3, DURATION_S / 4), refs, cancelRefs);
  check(await waitIdle(), "warm-up: every slot is freed");
  await sleep(1000);
  const rssBefore = rssKiB();

  const tLoad = Date.now();
  await load(DURATION_S, refs, cancelRefs);
  const loadS = (Date.now() - tLoad) / 1000;
  check(await waitIdle(), "after the load: no slot busy, nothing queued (cancelled streams freed their slots)");
  check((await fetch(BASE + "/health")).status === 200, "after the load: /health answers 200");
  await sequentialRound(refs, "after the load");
  check(await waitIdle(), "after the load: idle again");
  await sleep(1000);
  const rssAfter = rssKiB();
  const growthMiB = (rssAfter - rssBefore) / 1024;
  const requests = stats.ok + stats.cancelled + stats.completedBeforeCancel + stats.busy429 + stats.malformed;
  console.log(`load_test: ${loadS.toFixed(1)} s of load (and a warm-up); ${stats.ok} greedy answers checked ` +
              `(${stats.streamed} streamed), ${stats.cancelled} streams cancelled mid-way, ` +
              `${stats.completedBeforeCancel} ran to their end before their cancel, ${stats.busy429} x 429 (queue full), ` +
              `${stats.malformed} bad requests (${Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(", ")}), ` +
              `${stats.health} /health and ${stats.metrics} /metrics answers; ` +
              `completion tokens ${await metric("edgedecode_completion_tokens_total")}, ` +
              `prompt tokens reused ${await metric("edgedecode_prompt_tokens_reused_total")}`);
  console.log(`load_test: server RSS ${(rssBefore / 1024).toFixed(1)} MiB after the warm-up, ${(rssAfter / 1024).toFixed(1)} MiB ` +
              `after the load: ${growthMiB >= 0 ? "+" : ""}${growthMiB.toFixed(2)} MiB over ${requests} requests`);
  check(stats.ok > 0 && stats.cancelled > 0 && stats.malformed > 0, "the load ran every kind of request",
        JSON.stringify(stats));
  if (Number(args.lookup) > 0 || args["draft-quant"]) {
    const drafted = await metric("edgedecode_draft_tokens_total"), accepted = await metric("edgedecode_draft_tokens_accepted_total");
    const how = `--lookup ${args.lookup}${args["draft-quant"] ? " --draft-quant " + args["draft-quant"] : ""}`;
    console.log(`load_test: ${how}: ${accepted} of ${drafted} drafted tokens accepted`);
    check(accepted > 0, `the load drafted tokens and kept some (${how})`, `${accepted} of ${drafted}`);
  }
  if (SANITIZED)
    console.log(`load_test: RSS bound not checked under ASan (its quarantine keeps freed memory resident); ` +
                `LeakSanitizer checks the server's heap at exit instead`);
  else
    check(growthMiB <= RSS_BOUND_MIB, `RSS growth over the load within ${RSS_BOUND_MIB} MiB (no leak)`, `${growthMiB.toFixed(2)} MiB`);

  // SIGTERM: a clean exit, which is also when LeakSanitizer looks for leaks.
  server.kill("SIGTERM");
  const exit = await Promise.race([serverExit, sleep(120000).then(() => ({ code: "none within 120 s" }))]);
  check(exit.code === 0, "SIGTERM: the server exits 0", JSON.stringify(exit));
  const sanitizer = serverLog.split("\n").filter((l) => /ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer/.test(l));
  check(sanitizer.length === 0, "the server's stderr reports no sanitizer error", sanitizer.slice(0, 5).join(" | "));
  console.log(`load_test: ${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
}

const watchdog = setTimeout(() => {
  console.log(`FAIL the test ran past ${DURATION_S + 240} s`);
  killServer();
  process.exit(1);
}, (DURATION_S + 240) * 1000);
try {
  await main();
} catch (e) {
  failures++;
  console.log("FAIL " + (e.stack ?? e));
} finally {
  killServer();
  clearTimeout(watchdog);
}
if (failures) {
  if (failLines.length > 40) console.log(`... ${failLines.length - 40} more failures`);
  console.log("load_test: server stderr (tail):\n" + serverLog.slice(-4000));
}
console.log(failures ? `load_test: ${failures} check(s) failed` : "load_test: all checks passed");
process.exit(failures ? 1 : 0);
