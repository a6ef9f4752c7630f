// `offgraph serve` with embedding models, driven by the official OpenAI
// JavaScript SDK's embeddings.create: an EmbeddingGemma-style model
// (bidirectional, mean pooling, dense projections) and a Qwen3-Embedding-style
// one (last-token pooling), both written by og-synth --embedding. The SDK asks
// for base64 by default and decodes it: its vectors must equal the float ones;
// lists of inputs, token ids, dimensions, usage; the SDK's typed errors for a
// bad request, a generative model asked for embeddings and a bidirectional
// model asked to generate; a clean exit on SIGTERM.
// Run by ctest: node openai_embeddings_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

const [offgraphArg, ogSynth, nodeModulesArg] = process.argv.slice(2);
if (!offgraphArg || !ogSynth || !nodeModulesArg) {
  console.error("usage: node openai_embeddings_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES");
  process.exit(2);
}
let OpenAI;
try {
  OpenAI = createRequire(import.meta.url)(path.join(path.resolve(nodeModulesArg), "openai")).OpenAI;
} catch (e) {
  console.error(`FAIL: the openai package is not in ${nodeModulesArg}: run scripts/node_deps.sh (${e.message})`);
  process.exit(1);
}
const watchdog = setTimeout(() => { console.error("FAIL: the test ran past 100 s"); process.exit(1); }, 100000);

function startServer(args) {
  const proc = spawn(path.resolve(offgraphArg), ["serve", "--host", "127.0.0.1", "--port", "0", ...args],
                     { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  proc.stderr.on("data", (d) => { err += d; });
  return new Promise((resolve, reject) => {
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/ready on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) resolve({ proc, base: m[1], stderr: () => err });
    });
    proc.on("exit", (code) => reject(new Error(`the server exited (${code}) before it was ready:\n${out}\n${err}`)));
    setTimeout(() => reject(new Error(`the server was not ready within 60 s:\n${out}\n${err}`)), 60000).unref();
  });
}

async function expectError(promise, status, code) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    assert.equal(e.status, status, e.message);
    if (code) assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected HTTP ${status}`);
}

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("embeddings.create: base64 (the SDK's default) equals float; lists; usage", async ({ gemma }) => {
  const inputs = ["Once upon a time", "The little dog ran home"];
  const decoded = await gemma.embeddings.create({ model: "eg", input: inputs });
  const floats = await gemma.embeddings.create({ model: "eg", input: inputs, encoding_format: "float" });
  assert.equal(decoded.object, "list");
  assert.equal(decoded.data.length, 2);
  for (let i = 0; i < 2; i++) {
    assert.equal(decoded.data[i].index, i);
    assert.equal(decoded.data[i].embedding.length, 64);
    assert.ok(Math.abs(norm(decoded.data[i].embedding) - 1) < 1e-5);
    for (let k = 0; k < 64; k++) assert.ok(Math.abs(decoded.data[i].embedding[k] - floats.data[i].embedding[k]) < 1e-7);
  }
  assert.ok(decoded.usage.prompt_tokens > 4);
  assert.equal(decoded.usage.total_tokens, decoded.usage.prompt_tokens);
  const one = await gemma.embeddings.create({ model: "eg", input: inputs[1], encoding_format: "float" });
  assert.deepEqual(one.data[0].embedding, floats.data[1].embedding);
});

test("embeddings.create: token ids and dimensions", async ({ qwen }) => {
  const ids = await qwen.embeddings.create({ model: "qe", input: [[1, 5, 9], [1, 7]], encoding_format: "float" });
  assert.equal(ids.data.length, 2);
  assert.equal(ids.usage.prompt_tokens, 5);
  const cut = await qwen.embeddings.create({ model: "qe", input: [1, 5, 9], dimensions: 16, encoding_format: "float" });
  assert.equal(cut.data[0].embedding.length, 16);
  assert.ok(Math.abs(norm(cut.data[0].embedding) - 1) < 1e-5);
  const full = ids.data[0].embedding.slice(0, 16), n = norm(full);
  for (let k = 0; k < 16; k++) assert.ok(Math.abs(cut.data[0].embedding[k] - full[k] / n) < 1e-5);
});

test("typed errors: bad input, dimensions, a generative model, generation on a bidirectional model",
     async ({ gemma, generative }) => {
  await expectError(gemma.embeddings.create({ model: "eg", input: "" }), 400);
  await expectError(gemma.embeddings.create({ model: "eg", input: "x", dimensions: 65 }), 400);
  await expectError(generative.embeddings.create({ model: "gen", input: "hello" }), 400, "model_not_embedding");
  await expectError(gemma.completions.create({ model: "eg", prompt: "hello", max_tokens: 2 }), 400,
                    "model_not_generative");
});

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "og_js_embed_"));
  const write = (name, args) => {
    const out = path.join(tmp, name);
    execFileSync(ogSynth, [...args, "--format", "gguf", "--out", out], { stdio: "ignore" });
    return out;
  };
  const servers = {
    gemma: await startServer(["--model", write("eg.gguf", ["--family", "gemma3", "--embedding"]), "--alias", "eg"]),
    qwen: await startServer(["--model", write("qe.gguf", ["--family", "qwen3", "--embedding"]), "--alias", "qe"]),
    generative: await startServer(["--model", write("gen.gguf", ["--family", "qwen3"]), "--alias", "gen"]),
  };
  const clients = {};
  for (const [k, s] of Object.entries(servers))
    clients[k] = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "none", maxRetries: 0, timeout: 30000 });
  let failed = 0;
  for (const t of tests) {
    try {
      await t.fn(clients);
      console.log(`ok - ${t.name}`);
    } catch (e) {
      ++failed;
      console.log(`FAIL - ${t.name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  for (const [name, s] of Object.entries(servers)) {
    const exited = new Promise((resolve) => s.proc.on("exit", (code, signal) => resolve(code ?? signal)));
    s.proc.kill("SIGTERM");
    const code = await exited;
    if (code !== 143) {
      ++failed;
      console.log(`FAIL - the ${name} server exited with ${code} on SIGTERM:\n${s.stderr()}`);
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  clearTimeout(watchdog);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(`FAIL: ${e && e.stack ? e.stack : e}`); process.exit(1); });
