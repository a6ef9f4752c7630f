#!/usr/bin/env node
// Serving benchmark and load test for any OpenAI-compatible server (offgraph
// serve, llama-server, vLLM), in the style of `vllm bench serve`: random
// prompts of a fixed token length (token-id prompts on /v1/completions, so
// the length is exact), an optional shared prefix, streamed replies of a fixed
// length (ignore_eos), at a given concurrency. Two modes:
//   --num-prompts K   send K requests (benchmark)
//   --duration S      keep every client busy for S seconds (load test)
// Reports requests/s, output tok/s, TTFT, TPOT and inter-token latency
// (mean, p50, p99), the prompt tokens the server says it took from its cache,
// and the errors; a reply whose completion_tokens is not --output-len is an
// error (the comparison between servers needs equal work). Exits 1 when any
// request failed, so a bounded run doubles as a test. Needs only Node >= 18.
// TTFT is the time to the first chunk with text; TPOT = (end - TTFT) /
// (tokens - 1) per request.
import process from "node:process";

const HELP = `usage: node bench/serve_bench.mjs --url http://127.0.0.1:8080 [options]
  --url URL            server base URL (required)
  --model ID           model id (default: the first of /v1/models)
  --api-key K          sent as Authorization: Bearer K
  --concurrency N      clients sending at once (default 8)
  --num-prompts K      requests in all (default 32; ignored with --duration)
  --duration S         load-test mode: run for S seconds
  --input-len L        prompt tokens (default 128)
  --prefix-len P       leading prompt tokens shared by every request (default 0)
  --output-len O       tokens generated per request (default 64)
  --vocab-max V        prompt token ids are drawn from [10, V) (default 500)
  --seed S             prompt generator seed (default 1)
  --warmup N           requests sent one at a time before the measured ones (default 0);
                       they share the prefix, so a prefix cache holds it when timing starts
  --timeout S          per-request timeout in seconds (default 300)
  --json               print the report as one JSON object`;

function parseArgs(argv) {
  const o = { concurrency: 8, numPrompts: 32, duration: 0, inputLen: 128, prefixLen: 0, outputLen: 64,
              vocabMax: 500, seed: 1, warmup: 0, timeout: 300, json: false, model: "", apiKey: "", url: "" };
  const names = { "--url": "url", "--model": "model", "--api-key": "apiKey", "--concurrency": "concurrency",
                  "--num-prompts": "numPrompts", "--duration": "duration", "--input-len": "inputLen",
                  "--prefix-len": "prefixLen", "--output-len": "outputLen", "--vocab-max": "vocabMax",
                  "--seed": "seed", "--warmup": "warmup", "--timeout": "timeout" };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === "--help" || a === "-h") { console.log(HELP); process.exit(0); }
    if (a === "--json") { o.json = true; continue; }
    const key = names[a];
    if (!key || i + 1 >= argv.length) { console.error(`serve_bench: bad argument '${a}'\n${HELP}`); process.exit(2); }
    const v = argv[++i];
    if (typeof o[key] === "number") {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) { console.error(`serve_bench: ${a} needs a number >= 0, not '${v}'`); process.exit(2); }
      o[key] = n;
    } else {
      o[key] = v;
    }
  }
  if (!o.url) { console.error(`serve_bench: --url is required\n${HELP}`); process.exit(2); }
  if (o.prefixLen > o.inputLen) { console.error("serve_bench: --prefix-len exceeds --input-len"); process.exit(2); }
  if (o.concurrency < 1 || o.outputLen < 1 || o.inputLen < 1) { console.error("serve_bench: --concurrency, --input-len and --output-len must be >= 1"); process.exit(2); }
  o.url = o.url.replace(/\/+$/, "");
  return o;
}

// A small seeded PRNG (mulberry32) so that runs are repeatable.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function percentile(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[k];
}
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function headers(o) {
  const h = { "Content-Type": "application/json" };
  if (o.apiKey) h.Authorization = `Bearer ${o.apiKey}`;
  return h;
}

// One streamed request; resolves to {ok, ttft, itl[], e2e, outTokens, error}.
async function oneRequest(o, prompt) {
  const body = { model: o.model, prompt, max_tokens: o.outputLen, temperature: 0, ignore_eos: true, stream: true,
                 stream_options: { include_usage: true } };
  const t0 = performance.now();
  const r = { ok: false, ttft: NaN, itl: [], e2e: NaN, outTokens: 0, cachedTokens: 0, error: "" };
  try {
    const res = await fetch(`${o.url}/v1/completions`, { method: "POST", headers: headers(o), body: JSON.stringify(body),
                                                         signal: AbortSignal.timeout(o.timeout * 1000) });
    if (!res.ok) { r.error = `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`; return r; }
    const decoder = new TextDecoder();
    let buf = "", last = NaN, done = false, chunks = 0;
    for await (const part of res.body) {
      buf += decoder.decode(part, { stream: true });
      let at;
      while ((at = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, at);
        buf = buf.slice(at + 2);
        if (!ev.startsWith("data: ")) continue;
        const data = ev.slice(6);
        if (data === "[DONE]") { done = true; continue; }
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) {
          r.outTokens = j.usage.completion_tokens;
          const d = j.usage.prompt_tokens_details;
          if (d && Number.isFinite(d.cached_tokens)) r.cachedTokens = d.cached_tokens;
        }
        const text = j.choices && j.choices[0] ? j.choices[0].text : "";
        if (text) {
          const now = performance.now();
          if (chunks === 0) r.ttft = now - t0; else r.itl.push(now - last);
          last = now;
          ++chunks;
        }
      }
    }
    if (!done) throw new Error("the stream ended without [DONE]");
    r.e2e = performance.now() - t0;
    if (!r.outTokens) r.outTokens = chunks;
    if (r.outTokens !== o.outputLen) throw new Error(`${r.outTokens} tokens generated, not --output-len ${o.outputLen}`);
    r.ok = true;
  } catch (e) {
    // fetch's own message ("fetch failed") hides why: the cause says it (a reset, a closed socket).
    const cause = e && e.cause ? `: ${e.cause.code || ""} ${e.cause.message || e.cause}`.trimEnd() : "";
    r.error = String(e && e.message ? e.message : e) + cause;
  }
  return r;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!o.model) {
    const res = await fetch(`${o.url}/v1/models`, { headers: headers(o) });
    if (!res.ok) { console.error(`serve_bench: GET /v1/models: HTTP ${res.status}`); process.exit(1); }
    o.model = (await res.json()).data[0].id;
  }
  const rand = rng(o.seed);
  const token = () => 10 + Math.floor(rand() * (o.vocabMax - 10));
  const prefix = Array.from({ length: o.prefixLen }, token);
  const nextPrompt = () => prefix.concat(Array.from({ length: o.inputLen - o.prefixLen }, token));
  for (let i = 0; i < o.warmup; ++i) {
    const w = await oneRequest(o, nextPrompt());
    if (!w.ok) { console.error(`serve_bench: warmup request failed: ${w.error}`); process.exit(1); }
  }

  const results = [];
  let sent = 0;
  const t0 = performance.now();
  const deadline = o.duration > 0 ? t0 + o.duration * 1000 : Infinity;
  const more = () => (o.duration > 0 ? performance.now() < deadline : sent < o.numPrompts);
  async function client() {
    while (more()) {
      ++sent;
      results.push(await oneRequest(o, nextPrompt()));
    }
  }
  await Promise.all(Array.from({ length: o.concurrency }, client));
  const wall = (performance.now() - t0) / 1000;

  const ok = results.filter((r) => r.ok);
  const errors = results.filter((r) => !r.ok);
  const ttft = ok.map((r) => r.ttft), itl = ok.flatMap((r) => r.itl);
  const tpot = ok.filter((r) => r.outTokens > 1).map((r) => (r.e2e - r.ttft) / (r.outTokens - 1));
  const outTokens = ok.reduce((a, r) => a + r.outTokens, 0);
  const report = {
    model: o.model, concurrency: o.concurrency, input_len: o.inputLen, prefix_len: o.prefixLen, output_len: o.outputLen,
    requests: results.length, errors: errors.length, duration_s: wall,
    requests_per_s: ok.length / wall, output_tok_s: outTokens / wall,
    ttft_ms: { mean: mean(ttft), p50: percentile(ttft, 50), p99: percentile(ttft, 99) },
    tpot_ms: { mean: mean(tpot), p50: percentile(tpot, 50), p99: percentile(tpot, 99) },
    itl_ms: { mean: mean(itl), p50: percentile(itl, 50), p99: percentile(itl, 99) },
    cached_prompt_tokens_mean: mean(ok.map((r) => r.cachedTokens)),
    first_errors: errors.slice(0, 3).map((r) => r.error),
  };
  if (o.json) {
    console.log(JSON.stringify(report));
  } else {
    const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
    console.log(`model ${report.model}: ${report.requests} requests (${report.errors} errors) in ${f(wall)} s at concurrency ${o.concurrency}`);
    console.log(`  input ${o.inputLen} tokens (${o.prefixLen} shared), output ${o.outputLen} tokens`);
    console.log(`  requests/s ${f(report.requests_per_s)}, output tok/s ${f(report.output_tok_s)}, ` +
                `cached prompt tokens per request ${f(report.cached_prompt_tokens_mean)}`);
    for (const k of ["ttft_ms", "tpot_ms", "itl_ms"])
      console.log(`  ${k.padEnd(8)} mean ${f(report[k].mean)}  p50 ${f(report[k].p50)}  p99 ${f(report[k].p99)}`);
    for (const e of report.first_errors) console.log(`  error: ${e}`);
  }
  process.exit(errors.length > 0 || results.length === 0 ? 1 : 0);
}

main().catch((e) => { console.error(`serve_bench: ${e && e.stack ? e.stack : e}`); process.exit(1); });
