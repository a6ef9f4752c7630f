// `offgraph serve` driven by the official OpenAI JavaScript SDK: the model
// list and models.retrieve, chat and text completions whole and streamed (the
// streamed text equals the whole one under greedy sampling), usage, token-id
// prompts, prompt lists, echo with prompt logprobs, n choices, the SDK's
// typed errors for bad requests and a wrong key, a stream aborted by the
// client being cancelled on the server, and a clean exit on SIGTERM.
// Run by ctest: node openai_client_test.mjs OFFGRAPH MODEL NODE_MODULES OG_SYNTH.
// The server binds 127.0.0.1 on a free port; the whole run is bounded. The
// abort test runs on a synthetic model big enough (~10 ms a token) that the
// reply is still being generated when the client leaves.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

const [offgraphArg, model, nodeModulesArg, ogSynth] = process.argv.slice(2);
if (!offgraphArg || !model || !nodeModulesArg || !ogSynth) {
  console.error("usage: node openai_client_test.mjs OFFGRAPH MODEL NODE_MODULES OG_SYNTH");
  process.exit(2);
}
const offgraph = path.resolve(offgraphArg);
const nodeModules = path.resolve(nodeModulesArg);
if (!fs.existsSync(model)) {
  console.error(`FAIL: missing test data ${model}`);
  process.exit(1);
}
let OpenAI;
try {
  OpenAI = createRequire(import.meta.url)(path.join(nodeModules, "openai")).OpenAI;
} catch (e) {
  console.error(`FAIL: the openai package is not in ${nodeModules}: run scripts/node_deps.sh (${e.message})`);
  process.exit(1);
}

const KEY = "test-key-123";
const ALIAS = "stories-test";
const watchdog = setTimeout(() => { console.error("FAIL: the test ran past 180 s"); process.exit(1); }, 180000);

// Starts a server and resolves with {proc, base} once it prints its ready line.
function startServer(args) {
  const proc = spawn(offgraph, ["serve", "--host", "127.0.0.1", "--port", "0", ...args],
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

async function health(base) {
  const r = await fetch(`${base}/health`);
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { status: "ok" });
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

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("models.list names the alias", async ({ client }) => {
  const list = await client.models.list();
  assert.equal(list.data[0].id, ALIAS);
});

test("models.retrieve gives the listed model; another id is a 404", async ({ client }) => {
  const m = await client.models.retrieve(ALIAS);
  assert.equal(m.id, ALIAS);
  assert.equal(m.object, "model");
  await expectError(client.models.retrieve("no-such-model"), 404, "model_not_found");
});

test("completions: a prompt list, echo with logprobs, suffix refused without FIM tokens", async ({ client }) => {
  const prompts = ["Once upon a time", "Tom had a dog"];
  const list = await client.completions.create({ model: ALIAS, prompt: prompts, max_tokens: 8, temperature: 0 });
  assert.equal(list.choices.length, 2);
  for (let i = 0; i < 2; i++) {
    const one = await client.completions.create({ model: ALIAS, prompt: prompts[i], max_tokens: 8, temperature: 0 });
    assert.equal(list.choices[i].index, i);
    assert.equal(list.choices[i].text, one.choices[0].text);
  }
  const echo = await client.completions.create({ model: ALIAS, prompt: prompts[0], max_tokens: 0, echo: true, logprobs: 1 });
  assert.equal(echo.choices[0].text, prompts[0]);
  const lp = echo.choices[0].logprobs;
  assert.equal(lp.token_logprobs[0], null);
  assert.ok(lp.token_logprobs.length >= 2);
  for (const x of lp.token_logprobs.slice(1)) assert.ok(x <= 0);
  await expectError(client.completions.create({ model: ALIAS, prompt: "x", suffix: "y", max_tokens: 4 }), 400);
});

test("chat: whole and streamed give the same greedy text", async ({ client }) => {
  const req = { model: ALIAS, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 24, temperature: 0 };
  const whole = await client.chat.completions.create(req);
  assert.equal(whole.object, "chat.completion");
  assert.equal(whole.choices.length, 1);
  const text = whole.choices[0].message.content;
  assert.ok(text.length > 0);
  assert.ok(["stop", "length"].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.prompt_tokens > 0);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let streamed = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    streamed += chunk.choices[0].delta.content ?? "";
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(streamed, text);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
});

test("n choices: single requests with consecutive seeds, whole and streamed", async ({ client }) => {
  const req = { model: ALIAS, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 12,
                temperature: 0.9, seed: 77 };
  const whole = await client.chat.completions.create({ ...req, n: 3 });
  assert.equal(whole.choices.length, 3);
  let completion = 0;
  for (let i = 0; i < 3; i++) {
    assert.equal(whole.choices[i].index, i);
    const one = await client.chat.completions.create({ ...req, seed: 77 + i });
    assert.equal(whole.choices[i].message.content, one.choices[0].message.content);
    completion += one.usage.completion_tokens;
  }
  assert.equal(whole.usage.completion_tokens, completion);
  const stream = await client.chat.completions.create({ ...req, n: 3, stream: true });
  const texts = ["", "", ""];
  const finishes = [0, 0, 0];
  for await (const chunk of stream) {
    assert.equal(chunk.choices.length, 1);
    const c = chunk.choices[0];
    texts[c.index] += c.delta.content ?? "";
    if (c.finish_reason) finishes[c.index]++;
  }
  assert.deepEqual(texts, whole.choices.map((c) => c.message.content));
  assert.deepEqual(finishes, [1, 1, 1]);
});

test("completions: text and token-id prompts, whole and streamed", async ({ client }) => {
  const req = { model: ALIAS, prompt: "Once upon a time", max_tokens: 16, temperature: 0 };
  const whole = await client.completions.create(req);
  assert.equal(whole.object, "text_completion");
  const text = whole.choices[0].text;
  assert.ok(text.length > 0);
  let streamed = "";
  for await (const chunk of await client.completions.create({ ...req, stream: true })) streamed += chunk.choices[0]?.text ?? "";
  assert.equal(streamed, text);
  const ids = await (await fetch(`${client.baseURL.replace(/\/v1$/, "")}/tokenize`, {
    method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ prompt: "Once upon a time" }) })).json();
  const byIds = await client.completions.create({ ...req, prompt: ids.tokens });
  assert.equal(byIds.choices[0].text, text);
});

test("logprobs", async ({ client }) => {
  const r = await client.chat.completions.create({ model: ALIAS, messages: [{ role: "user", content: "Hi" }], max_tokens: 4,
                                                   temperature: 0, logprobs: true, top_logprobs: 2, stop: null });
  const lp = r.choices[0].logprobs.content;
  assert.ok(lp.length >= 1 && lp.length <= 4);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
  }
});

test("bad requests are the SDK's typed errors", async ({ client, base }) => {
  const msgs = [{ role: "user", content: "x" }];
  let e = await expectError(client.chat.completions.create({ model: "gpt-4o", messages: msgs }), 404, "model_not_found");
  assert.ok(e instanceof OpenAI.NotFoundError);
  await health(base);
  await expectError(client.chat.completions.create({ model: ALIAS, messages: msgs, n: 9 }), 400);
  await health(base);
  await expectError(client.chat.completions.create({ model: ALIAS, messages: [] }), 400);
  await health(base);
  await expectError(client.chat.completions.create({ model: ALIAS, messages: msgs, max_tokens: 100000 }), 400,
                    "context_length_exceeded");
  await health(base);
  // Fields the server does not know are ignored (and logged once), as vLLM does;
  // a setting it knows but cannot honour is a 400 naming it.
  const extra = await client.chat.completions.create({ model: ALIAS, messages: msgs, max_tokens: 2, bogus_field: 1 });
  assert.equal(extra.choices.length, 1);
  await expectError(client.chat.completions.create({ model: ALIAS, messages: msgs, functions: [{ name: "f" }] }), 400,
                    "unsupported_parameter");
  await health(base);
  const wrong = new OpenAI({ baseURL: `${base}/v1`, apiKey: "wrong", maxRetries: 0, timeout: 30000 });
  e = await expectError(wrong.chat.completions.create({ model: ALIAS, messages: msgs }), 401, "invalid_api_key");
  assert.ok(e instanceof OpenAI.AuthenticationError);
  await health(base);
});

test("a stream the client aborts is cancelled on the server", async ({ slow }) => {
  const { client, base } = slow;
  const metric = async () => {
    const t = await (await fetch(`${base}/metrics`)).text();
    const m = t.match(/offgraph:requests_total\{[^}]*endpoint="chat",finish_reason="cancelled"\} (\d+)/);
    return m ? Number(m[1]) : 0;
  };
  const before = await metric();
  const stream = await client.chat.completions.create({ model: "slow", messages: [{ role: "user", content: "Tell a story" }],
                                                        max_tokens: 1000, temperature: 0, stream: true, ignore_eos: true });
  let n = 0;
  for await (const chunk of stream) {
    if (++n === 3) { stream.controller.abort(); break; }
    void chunk;
  }
  for (let i = 0; i < 100 && (await metric()) === before; ++i) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await metric(), before + 1);
  await health(base);
});

async function stopServer(server) {
  const exited = new Promise((resolve) => server.proc.on("exit", (code, signal) => resolve(code ?? signal)));
  server.proc.kill("SIGTERM");
  return exited;
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "og_js_"));
  const slowModel = path.join(tmp, "slow.gguf");
  execFileSync(ogSynth, ["--family", "llama", "--format", "gguf", "--out", slowModel, "--dtype", "q8_0", "--d-model", "512",
                         "--layers", "8", "--heads", "8", "--kv-heads", "8", "--head-dim", "64", "--d-ff", "2048",
                         "--ctx", "2048"], { stdio: "ignore" });
  const { proc, base, stderr } = await startServer(["--model", model, "--api-key", KEY, "--alias", ALIAS, "--parallel", "4",
                                                   "--kv-max-capacity", "256"]);
  const slowServer = await startServer(["--model", slowModel, "--chat", "0"]);
  const slow = { base: slowServer.base, client: new OpenAI({ baseURL: `${slowServer.base}/v1`, apiKey: "none", maxRetries: 0,
                                                             timeout: 60000 }) };
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60000 });
  let failed = 0;
  for (const t of tests) {
    try {
      await t.fn({ client, base, slow });
      console.log(`ok - ${t.name}`);
    } catch (e) {
      ++failed;
      console.log(`FAIL - ${t.name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  for (const [name, server] of [["main", { proc, stderr }], ["slow", slowServer]]) {
    const code = await stopServer(server);
    if (code !== 143) {  // a graceful stop on SIGTERM exits 128 + 15, as every offgraph command
      ++failed;
      console.log(`FAIL - the ${name} server exited with ${code} on SIGTERM:\n${server.stderr()}`);
    } else {
      console.log(`ok - SIGTERM: the ${name} server exited 143`);
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  clearTimeout(watchdog);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(`FAIL: ${e && e.stack ? e.stack : e}`); process.exit(1); });
