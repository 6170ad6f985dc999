// ONNX Runtime (npm onnxruntime-node, CPU execution provider) as the oracle for `edgedecode rewrite`.
//
//   node ort_compare.mjs compare A.onnx B.onnx [--input NAME:TYPE:D0,D1,...]... [--seed N] [--range LO,HI]
//                        [--b-opt all|extended|basic|disabled]
//       Runs both models on the same seeded random inputs; prints one JSON object on stdout:
//       {"ok":true,"max_abs_diff":X,"outputs":[{"name","dims","max_abs_diff","max_abs"}...],"inputs":[...]}
//       Outputs are matched by name; a missing output, a shape or type mismatch, or a NaN on one side only
//       makes that output's max_abs_diff null (and the whole result's too). --b-opt sets ONNX Runtime's graph
//       optimization level for B (default all, as for A): `compare A A --b-opt disabled` measures how much ORT's
//       own fusions change this model's outputs, the float-rounding noise floor a rewrite is judged against.
//   node ort_compare.mjs eval MODEL.onnx [--input ...]... [--seed N] [--range LO,HI] [--max-data N]
//       Runs one model; prints {"ok":true,"outputs":[{"name","type","dims","data"}...]}, with "data" only for
//       outputs of at most --max-data elements (default 4096; int64 as decimal strings, exact; float16 as its
//       16-bit patterns).
//
// Inputs not given with --input take their shape from the model (all dims must be fixed). Random values:
// floats (float32/64/16) uniform in [LO, HI) (default -1,1), integers uniform in {0, 1}, bools fair coin; mulberry32 seeded
// by --seed (default 1) and the input's position, so both models see identical tensors.
// A model that fails to load or run gives {"ok":false,"model":"a"|"b","error":"..."} and exit code 1;
// exit code 2 is a usage error. One intra-op thread: deterministic, and ctest runs tests side by side.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');

function usage(msg) {
  process.stderr.write(`ort_compare: ${msg}\n` +
    'usage: ort_compare.mjs compare A.onnx B.onnx [--input NAME:TYPE:DIMS]... [--seed N] [--range LO,HI] [--b-opt LEVEL]\n' +
    '       ort_compare.mjs eval MODEL.onnx [--input NAME:TYPE:DIMS]... [--seed N] [--range LO,HI] [--max-data N]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { mode: argv[0], models: [], inputs: [], seed: 1, lo: -1, hi: 1, maxData: 4096, bOpt: 'all' };
  if (a.mode !== 'compare' && a.mode !== 'eval') usage(`unknown mode '${a.mode ?? ''}'`);
  for (let i = 1; i < argv.length; ++i) {
    const k = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(`${k} needs a value`); return argv[++i]; };
    if (k === '--input') {
      const spec = next();
      // NAME may itself contain ':' (TensorFlow names like "x:0"), so split from the right.
      const j = spec.lastIndexOf(':'), t = spec.lastIndexOf(':', j - 1);
      if (j < 0 || t < 0) usage(`--input '${spec}': expected NAME:TYPE:D0,D1,...`);
      const dimsText = spec.slice(j + 1);
      const dims = dimsText === '' ? [] : dimsText.split(',').map(Number);
      if (dims.some((d) => !Number.isInteger(d) || d < 0)) usage(`--input '${spec}': bad dims`);
      a.inputs.push({ name: spec.slice(0, t), type: spec.slice(t + 1, j), dims });
    } else if (k === '--seed') a.seed = Number(next());
    else if (k === '--range') {
      const [lo, hi] = next().split(',').map(Number);
      if (!(lo < hi)) usage('--range: expected LO,HI with LO < HI');
      a.lo = lo; a.hi = hi;
    } else if (k === '--max-data') a.maxData = Number(next());
    else if (k === '--b-opt') {
      a.bOpt = next();
      if (!['all', 'extended', 'basic', 'disabled'].includes(a.bOpt)) usage('--b-opt: all, extended, basic or disabled');
    }
    else if (k.startsWith('--')) usage(`unknown option ${k}`);
    else a.models.push(k);
  }
  if (a.models.length !== (a.mode === 'compare' ? 2 : 1)) usage(`${a.mode} takes ${a.mode === 'compare' ? 2 : 1} model(s)`);
  return a;
}

function mulberry32(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const kArrays = {
  float16: Uint16Array, float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array,
};

// float16 travels as its bit pattern (Node 20 has no Float16Array): round-to-nearest-even conversions.
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
function toHalf(v) {
  f32[0] = v;
  const x = u32[0], sign = (x >>> 16) & 0x8000, e = ((x >>> 23) & 0xff) - 127 + 15;
  let m = x & 0x7fffff;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    m |= 0x800000;
    const shift = 14 - e, h = m >>> shift, rem = m & ((1 << shift) - 1), half = 1 << (shift - 1);
    return sign | (h + (rem > half || (rem === half && (h & 1)) ? 1 : 0));
  }
  const h = (e << 10) | (m >>> 13), rem = m & 0x1fff;
  return sign | (h + (rem > 0x1000 || (rem === 0x1000 && (h & 1)) ? 1 : 0));
}
function fromHalf(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function makeTensor(spec, index, a) {
  const type = spec.type === 'float' ? 'float32' : spec.type === 'double' ? 'float64' : spec.type;
  const Arr = kArrays[type];
  if (!Arr) throw new Error(`input '${spec.name}': type ${spec.type} is not supported by ort_compare`);
  const n = spec.dims.reduce((x, y) => x * y, 1);
  const rnd = mulberry32(a.seed * 1000003 + index * 7919);
  const data = new Arr(n);
  for (let i = 0; i < n; ++i) {
    const u = rnd();
    if (type === 'float32' || type === 'float64') data[i] = a.lo + (a.hi - a.lo) * u;
    else if (type === 'float16') data[i] = toHalf(a.lo + (a.hi - a.lo) * u);
    else if (type === 'int64' || type === 'uint64') data[i] = BigInt(u < 0.5 ? 0 : 1);
    else data[i] = u < 0.5 ? 0 : 1;
  }
  return new ort.Tensor(type, data, spec.dims);
}

async function open(path, opt = 'all') {
  return ort.InferenceSession.create(path, {
    executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3,
    graphOptimizationLevel: opt,
  });
}

// Feeds for a session: the --input specs, plus fixed-shape inputs from the model's own metadata.
function feedsFor(session, a) {
  const specs = new Map(a.inputs.map((s) => [s.name, s]));
  const meta = session.inputMetadata ?? [];
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    let spec = specs.get(name);
    if (!spec) {
      const m = meta[i];
      if (!m || !m.isTensor || !m.shape.every((d) => typeof d === 'number' && d >= 0))
        throw new Error(`input '${name}' has no fixed shape; pass --input ${name}:TYPE:D0,D1,...`);
      spec = { name, type: m.type, dims: m.shape };
    }
    feeds[name] = makeTensor(spec, i, a);
  });
  for (const name of specs.keys())
    if (!session.inputNames.includes(name)) throw new Error(`--input ${name}: the model has no such input (inputs: ${session.inputNames.join(', ')})`);
  return feeds;
}

async function runModel(path, a, tag, opt = 'all') {
  try {
    const s = await open(path, opt);
    const feeds = feedsFor(s, a);
    const out = await s.run(feeds);
    return { session: s, feeds, out };
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, model: tag, error: `${path}: ${e.message ?? e}` }) + '\n');
    process.exit(1);
  }
}

function describeInputs(feeds) {
  return Object.entries(feeds).map(([name, t]) => ({ name, type: t.type, dims: t.dims }));
}

function compareOne(name, x, y) {
  const r = { name, dims: x.dims, max_abs_diff: null, max_abs: 0 };
  if (!y) return { ...r, error: 'output missing in the second model' };
  if (x.type !== y.type) return { ...r, error: `type ${x.type} vs ${y.type}` };
  if (x.dims.length !== y.dims.length || x.dims.some((d, i) => d !== y.dims[i]))
    return { ...r, error: `shape [${x.dims}] vs [${y.dims}]` };
  let diff = 0, maxAbs = 0;
  const value = x.type === 'float16' ? fromHalf : Number;  // Number() also takes BigInt
  for (let i = 0; i < x.data.length; ++i) {
    const p = value(x.data[i]);
    const q = value(y.data[i]);
    if (Number.isNaN(p) || Number.isNaN(q)) {
      if (Number.isNaN(p) && Number.isNaN(q)) continue;
      return { ...r, error: `NaN on one side only at element ${i}` };
    }
    if (p === q) { maxAbs = Math.max(maxAbs, Math.abs(p)); continue; }  // also equal infinities
    const d = Math.abs(p - q);
    if (!Number.isFinite(d)) return { ...r, error: `infinity on one side only at element ${i}` };
    diff = Math.max(diff, d);
    maxAbs = Math.max(maxAbs, Math.abs(p));
  }
  return { ...r, max_abs_diff: diff, max_abs: maxAbs };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const t0 = Date.now();
  if (a.mode === 'eval') {
    const { feeds, out, session } = await runModel(a.models[0], a, 'a');
    const outputs = session.outputNames.map((name) => {
      const t = out[name];
      const o = { name, type: t.type, dims: t.dims };
      if (t.data.length <= a.maxData)
        o.data = Array.from(t.data, (v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'boolean' ? Number(v) : v));
      return o;
    });
    process.stdout.write(JSON.stringify({ ok: true, inputs: describeInputs(feeds), outputs, seconds: (Date.now() - t0) / 1e3 }) + '\n');
    return;
  }
  const A = await runModel(a.models[0], a, 'a');
  const B = await runModel(a.models[1], a, 'b', a.bOpt);
  const outputs = A.session.outputNames.map((name) => compareOne(name, A.out[name], B.out[name]));
  for (const name of B.session.outputNames)
    if (!A.session.outputNames.includes(name)) outputs.push({ name, dims: B.out[name].dims, max_abs_diff: null, error: 'output only in the second model' });
  const worst = outputs.some((o) => o.max_abs_diff === null) ? null : Math.max(0, ...outputs.map((o) => o.max_abs_diff));
  process.stdout.write(JSON.stringify({ ok: true, max_abs_diff: worst, inputs: describeInputs(A.feeds), outputs,
                                        seed: a.seed, seconds: (Date.now() - t0) / 1e3 }) + '\n');
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ ok: false, error: String(e.message ?? e) }) + '\n');
  process.exit(1);
});
