// The client side of bench/serve_vs_llamaserver.sh: one OpenAI-compatible server (edgedecode serve or
// llama-server, already started and loaded), driven with plain fetch over streamed server-sent events;
// times are taken from the stream as it arrives. Prints one JSON object.
//
//   node serve_bench.mjs --url http://127.0.0.1:PORT [--streams 4] [--tg 128] [--ttft-prompt 256]
//                        [--ttft-samples 5] [--history 2000] [--fresh 50] [--seed 1]
//   node serve_bench.mjs --summarize FILE.jsonl   (lines {"server": NAME, "rep": R, ...result})
//
// Results:
//   single_tps      decode tok/s of one stream (first to last token of --tg tokens; prefill excluded)
//   aggregate_tps   decode tok/s of --streams concurrent streams together, over the window in which all
//                   of them decode (from the last stream's first token to the first stream's last token)
//   ttft_busy_ms    p50 time to first token of a --ttft-prompt-token prompt while --streams - 1 other
//                   streams decode (a different prompt each sample: nothing comes from a cache)
//   followup_ms     time to first token of the next turn of a chat transcript of about --history tokens
//                   whose previous turn (prompt and answer) the server has just generated, so its prefix
//                   can come from the slot's KV cache
//   fresh_ms        time to first token of a fresh --fresh-token prompt
//   fresh_same_ms   time to first token of a fresh prompt of as many tokens as the follow-up did not take
//                   from the cache (followup_new_tokens)
//   ids_followup_ms the follow-up again with the transcript sent as token ids and its last answer given by
//                   the client and a new turn of --fresh tokens (see followupIds), against ids_fresh_ms,
//                   a fresh --fresh-token prompt
//   retries         phases run again because the server reported an error inside a stream
// The transcript is sent as plain text to /v1/completions (the same bytes to both servers; no chat
// template is involved). Greedy decoding, ignore_eos, so every stream generates exactly its tokens.
import fs from "node:fs";

const args = { streams: "4", tg: "128", "ttft-prompt": "256", "ttft-samples": "5", history: "2000", fresh: "50", seed: "1" };
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const num = (k) => Number(args[k]);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

if (args.summarize) {
  summarize(args.summarize);
  process.exit(0);
}

const URL_ = args.url;
const WORDS = ("the a little girl boy dog cat went to park and saw big red ball tree bird house river small happy sad " +
               "played with her his mom dad friend one day sun sky blue green water ran jumped found old box under " +
               "bed toy car train book read wrote story about king queen castle forest night star moon").split(" ");
let seed = num("seed") >>> 0;
const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 4294967296);
const words = (n) => Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(" ");

async function tokenIds(text, addSpecial = false) {
  const r = await fetch(URL_ + "/tokenize", { method: "POST", headers: { "Content-Type": "application/json" },
                                              body: JSON.stringify({ content: text, add_special: addSpecial }) });
  if (!r.ok) throw new Error(`/tokenize: HTTP ${r.status}`);
  return (await r.json()).tokens;
}
const tokens = async (text) => (await tokenIds(text)).length;

// A prompt of about n tokens (by this server's /tokenize): a distinct head, then random words.
async function promptOf(n, head) {
  let text = head;
  for (let step = Math.max(8, n >> 2); ; ) {
    const more = text + " " + words(step);
    const t = await tokens(more);
    if (t > n) {
      if (step === 1) return text;
      step = Math.max(1, step >> 1);
    } else {
      text = more;
      if (t === n) return text;
    }
  }
}

// One streamed completion. Returns the arrival times (ms) of the chunks with text, the first chunk's
// time after sending (TTFT), the text and the usage. signal: an AbortSignal that ends it early (a
// background stream); onFirst: called at its first token.
async function stream(prompt, maxTokens, signal, onFirst = () => {}) {
  const t0 = performance.now();
  const times = [];
  let usage = null, timings = null, text = "", error = null;
  try {
    const res = await fetch(URL_ + "/v1/completions", {
      method: "POST", headers: { "Content-Type": "application/json" }, signal,
      body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true,
                             stream_options: { include_usage: true } }),
    });
    if (!res.ok) throw new Error(`/v1/completions: HTTP ${res.status} ${await res.text()}`);
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of res.body) {
      const now = performance.now();
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
        const j = JSON.parse(ev.slice(6));
        if (j.error) error = j.error.message ?? JSON.stringify(j.error);  // llama-server reports some failures in the stream
        if (j.usage) usage = j.usage;
        if (j.timings) timings = j.timings;  // llama-server: prompt_n tokens prefilled, cache_n reused
        if (j.choices?.[0]?.text) {
          if (times.length === 0) onFirst();
          times.push(now);
          text += j.choices[0].text;
        }
      }
    }
  } catch (e) {
    if (!signal?.aborted) throw e;
  }
  onFirst();  // an empty or failed stream must not hold up its waiter
  if (error !== null) throw new Error(`server error in the stream: ${error}`);
  return { t0, times, text, ttft: times.length ? times[0] - t0 : NaN, usage, timings };
}

// Tokens per chunk of a stream (a chunk may carry several tokens, or a token none when its bytes are held
// back): scales chunk counts to tokens.
const perChunk = (s) => (s.usage?.completion_tokens ?? s.times.length) / Math.max(1, s.times.length);

async function singleTps(tg) {
  const s = await stream(await promptOf(16, "Single."), tg);
  const n = s.times.length;
  return ((n - 1) * perChunk(s)) / ((s.times[n - 1] - s.times[0]) / 1000);
}

async function aggregateTps(streams, tg) {
  const prompts = [];
  for (let i = 0; i < streams; i++) prompts.push(await promptOf(16, `Stream ${i}.`));
  const all = await Promise.all(prompts.map((p) => stream(p, tg)));
  const start = Math.max(...all.map((s) => s.times[0])), end = Math.min(...all.map((s) => s.times[s.times.length - 1]));
  if (!(end > start)) return NaN;
  const tokensIn = all.reduce((a, s) => a + s.times.filter((t) => t > start && t <= end).length * perChunk(s), 0);
  return tokensIn / ((end - start) / 1000);
}

// TTFT of a fresh prompt while streams - 1 others decode (they run until every sample is taken).
async function ttftBusy(streams, promptTokens, samples) {
  const ac = new AbortController();
  const bg = [], started = [];
  let bgError = null;  // a background stream that failed: the phase is run again (retry)
  for (let i = 0; i < streams - 1; i++) {
    const p = await promptOf(16, `Background ${i}.`);
    let mark;
    started.push(new Promise((r) => (mark = r)));
    bg.push(stream(p, 100000, ac.signal, mark).catch((e) => (bgError = e)));
  }
  await Promise.all(started);  // every background stream decodes (its prefill is over)
  const ttfts = [];
  for (let i = 0; i < samples; i++) {
    const p = await promptOf(promptTokens, `Question ${i} of ${args.seed}.`);
    const s = await stream(p, 2);
    ttfts.push(s.ttft);
  }
  ac.abort();
  await Promise.all(bg);
  if (bgError) throw bgError;
  return { p50: median(ttfts), samples: ttfts };
}

// A chat transcript of about `history` tokens (turns of random words), ending where the assistant answers.
async function transcriptOf(history) {
  let transcript = "";
  while ((await tokens(transcript)) < history - 120) transcript += `User: ${words(40)}?\nAssistant: ${words(60)}.\n`;
  return transcript + `User: ${words(20)}?\nAssistant:`;
}

// Prompt tokens a request took from the cache: llama-server's timings.cache_n, or edgedecode's counter
// since `before` (edgedecodeReused() read just before the request).
async function reusedSince(s, before) {
  return s.timings?.cache_n ?? (await edgedecodeReused()) - before;
}

// A transcript of about `history` tokens: its last turn generated, then the next user turn's TTFT (the
// prefix, prompt and answer, is in the slot's cache) against a fresh prompt of `fresh` tokens.
async function followup(history, fresh) {
  const transcript = await transcriptOf(history);
  const first = await stream(transcript, 16);
  const next = transcript + first.text + `\nUser: ${words(20)}?\nAssistant:`;
  const reusedBefore = await edgedecodeReused();
  const f = await stream(next, 2);
  const reused = await reusedSince(f, reusedBefore);
  const fr = await stream(await promptOf(fresh, "Fresh."), 2);
  // The follow-up's new tokens (those not from the cache) also as a fresh prompt: what the history itself
  // costs on top of the same prefill work. Random-weight answers do not retokenize to the tokens generated
  // (a trained model's mostly do), so the new tokens exceed the new turn's own.
  const newTokens = (f.usage?.prompt_tokens ?? NaN) - reused;
  const same = Number.isFinite(newTokens) && newTokens > 0 ? await stream(await promptOf(newTokens, "Same."), 2) : null;
  return { history_tokens: first.usage?.prompt_tokens, first_ms: first.ttft, followup_ms: f.ttft,
           followup_prompt_tokens: f.usage?.prompt_tokens, followup_reused_tokens: reused, followup_new_tokens: newTokens,
           fresh_ms: fr.ttft, fresh_prompt_tokens: fr.usage?.prompt_tokens, fresh_same_ms: same?.ttft ?? NaN,
           fresh_same_prompt_tokens: same?.usage?.prompt_tokens };
}

// The same follow-up with the transcript sent as token ids, its last answer given by the client: the slot's
// cache then holds exactly the ids the next request repeats, and the follow-up's new tokens are the new
// turn's own, as with a trained model whose answers retokenize to the tokens it generated. The new turn has
// --fresh tokens, as many as the fresh prompt it is compared with: the ratio is what ~2,000 tokens of cached
// history add to the same prefill.
async function followupIds(history, fresh) {
  const transcript = await transcriptOf(history);
  const prefix = [...(await tokenIds(transcript, true)), ...(await tokenIds(` ${words(12)}.`))];
  const first = await stream(prefix, 1);  // the whole history prefilled; the slot's cache holds it
  const turn = await tokenIds(await promptOf(fresh, "\nUser:"));
  const reusedBefore = await edgedecodeReused();
  const f = await stream([...prefix, ...turn], 2);
  const reused = await reusedSince(f, reusedBefore);
  const fr = await stream(await promptOf(fresh, "Fresh ids."), 2);
  return { ids_history_tokens: prefix.length, ids_first_ms: first.ttft, ids_followup_ms: f.ttft,
           ids_followup_new_tokens: (f.usage?.prompt_tokens ?? NaN) - reused, ids_followup_reused_tokens: reused,
           ids_fresh_ms: fr.ttft, ids_fresh_prompt_tokens: fr.usage?.prompt_tokens };
}

async function edgedecodeReused() {
  const m = await fetch(URL_ + "/metrics").then((r) => (r.ok ? r.text() : "")).catch(() => "");
  return Number(/^edgedecode_prompt_tokens_reused_total (\S+)$/m.exec(m)?.[1] ?? NaN);
}

function summarize(file) {
  const rows = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const servers = [...new Set(rows.map((r) => r.server))];
  const keys = ["single_tps", "aggregate_tps", "ttft_busy_ms", "followup_ms", "followup_reused_tokens", "followup_new_tokens",
                "fresh_ms", "fresh_same_ms", "fresh_same_prompt_tokens", "ids_followup_ms", "ids_followup_reused_tokens",
                "ids_followup_new_tokens", "ids_fresh_ms", "retries"];
  const med = {};
  for (const s of servers) {
    med[s] = {};
    for (const k of keys) med[s][k] = median(rows.filter((r) => r.server === s).map((r) => r[k]));
    med[s].agg_over_single = med[s].aggregate_tps / med[s].single_tps;
    med[s].followup_over_fresh = med[s].followup_ms / med[s].fresh_ms;
    med[s].followup_over_same = med[s].followup_ms / med[s].fresh_same_ms;
    med[s].ids_followup_over_fresh = med[s].ids_followup_ms / med[s].ids_fresh_ms;
  }
  const [a, b] = servers;  // edgedecode, llama-server
  const reps = rows.filter((r) => r.server === a).length;
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");
  console.log(`medians over ${reps} rep(s)\n`);
  console.log(`| measure | ${a} | ${b} | ${a} / ${b} |`);
  console.log("|---|---|---|---|");
  const line = (label, k, d = 1) => console.log(`| ${label} | ${f(med[a][k], d)} | ${f(med[b]?.[k], d)} | ${f(med[a][k] / med[b]?.[k], 2)} |`);
  line("decode tok/s, 1 stream", "single_tps");
  line(`decode tok/s, ${rows[0].streams} streams together`, "aggregate_tps");
  line("aggregate / single stream", "agg_over_single", 2);
  line(`TTFT p50 of a ${rows[0].ttft_prompt_tokens}-token prompt, ${rows[0].streams - 1} streams decoding (ms)`, "ttft_busy_ms", 0);
  line(`TTFT of a follow-up turn after ${rows[0].history_tokens} tokens of history (ms)`, "followup_ms", 0);
  line(`  of its ${rows[0].followup_prompt_tokens} prompt tokens, taken from the cache`, "followup_reused_tokens", 0);
  line(`TTFT of a fresh ${rows[0].fresh_prompt_tokens}-token prompt (ms)`, "fresh_ms", 0);
  line("follow-up / fresh", "followup_over_fresh", 2);
  line("  its new tokens (not from the cache)", "followup_new_tokens", 0);
  line("  TTFT of a fresh prompt of as many tokens (ms)", "fresh_same_ms", 0);
  line("  follow-up / that fresh prompt", "followup_over_same", 2);
  if (rows[0].ids_history_tokens !== undefined) {
    line(`TTFT of a follow-up sent as token ids after ${rows[0].ids_history_tokens} tokens of history (ms)`, "ids_followup_ms", 0);
    line("  its prompt tokens taken from the cache", "ids_followup_reused_tokens", 0);
    line("  its new tokens (the new turn's)", "ids_followup_new_tokens", 0);
    line(`TTFT of a fresh ${rows[0].ids_fresh_prompt_tokens}-token prompt, same phase (ms)`, "ids_fresh_ms", 0);
    line("follow-up (ids) / fresh", "ids_followup_over_fresh", 2);

  }
  line("phases run again after a server's stream error", "retries", 0);
}

// A phase again, with new random words, when a server reported an error in one of its streams (llama-server
// fails some streams of random-weight output: "does not match the expected Content-only format"); the
// retries are counted in the result.
let retries = 0;
async function retry(phase) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await phase();
    } catch (e) {
      if (attempt === 3 || !/server error in the stream/.test(e.message)) throw e;
      console.error(`serve_bench: ${e.message}; phase run again`);
      retries++;
    }
  }
}

// --only a,b: some of single, aggregate, ttft, followup, followup_ids (all by default).
const only = new Set((args.only ?? "single,aggregate,ttft,followup,followup_ids").split(","));
const out = { streams: num("streams"), tg: num("tg") };
if (only.has("single")) out.single_tps = await retry(() => singleTps(num("tg")));
if (only.has("aggregate")) out.aggregate_tps = await retry(() => aggregateTps(num("streams"), num("tg")));
if (only.has("ttft")) {
  const busy = await retry(() => ttftBusy(num("streams"), num("ttft-prompt"), num("ttft-samples")));
  out.ttft_busy_ms = busy.p50;
  out.ttft_busy_samples_ms = busy.samples.map((x) => Math.round(x));
  out.ttft_prompt_tokens = num("ttft-prompt");
}
if (only.has("followup")) Object.assign(out, await retry(() => followup(num("history"), num("fresh"))));
if (only.has("followup_ids")) Object.assign(out, await retry(() => followupIds(num("history"), num("fresh"))));
out.retries = retries;
console.log(JSON.stringify(out));
