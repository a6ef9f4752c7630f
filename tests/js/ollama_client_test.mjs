// `offgraph serve`'s Ollama API driven by the official `ollama` JavaScript
// client (npm, pinned in package.json), on scripted synthetic models
// (og-synth --script, docs/tools.md) under the real Qwen 3 template:
//  - list, show, ps, version: the served model under its name:tag, details,
//    capabilities (completion, tools, thinking, insert; embedding);
//  - chat whole and streamed (the pieces add up to the whole reply; the last
//    one done with done_reason and the timings in nanoseconds);
//  - a tool round trip: message.tool_calls with arguments as an object, sent
//    back with a role "tool" result;
//  - think: true gives message.thinking, false turns it off (enable_thinking);
//  - format "json" and a JSON schema: the reply parses and validates; with
//    thinking on (or think omitted) the reasoning comes first, in thinking,
//    whole and streamed, chat and generate; options.max_reasoning_tokens;
//  - generate: templated with thinking, raw (no template, nothing parsed),
//    suffix (fill-in-the-middle tokens), context continuing an exchange;
//  - embed and embeddings equal to /v1/embeddings;
//  - errors: ResponseError carrying the server's message and status;
//    pull of the served model succeeds, of another fails; a key is a Bearer header.
// Run by ctest: node ollama_client_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES SOURCE_DIR.
// The models are written into a temporary directory removed at exit; the
// servers bind 127.0.0.1 on free ports; the whole run is bounded.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

const [offgraphArg, ogSynthArg, nodeModulesArg, srcDirArg] = process.argv.slice(2);
if (!offgraphArg || !ogSynthArg || !nodeModulesArg || !srcDirArg) {
  console.error("usage: node ollama_client_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES SOURCE_DIR");
  process.exit(2);
}
const offgraph = path.resolve(offgraphArg);
const ogSynth = path.resolve(ogSynthArg);
const srcDir = path.resolve(srcDirArg);
const data = path.join(srcDir, "tests/e2e/data");
const qwenTemplate = path.join(srcDir, "tests/template/data/templates/Qwen-Qwen3-0.6B.jinja");
for (const f of [path.join(data, "script_qwen3_tool.json"), path.join(data, "script_qwen3_reply.json"), qwenTemplate]) {
  if (!fs.existsSync(f)) {
    console.error(`FAIL: missing test data ${f}`);
    process.exit(1);
  }
}
let Ollama;
try {
  ({ Ollama } = createRequire(import.meta.url)(path.join(path.resolve(nodeModulesArg), "ollama")));
} catch (e) {
  console.error(`FAIL: the ollama package is not in ${nodeModulesArg}: run scripts/node_deps.sh (${e.message})`);
  process.exit(1);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "og_js_ollama_"));
const servers = [];
process.on("exit", () => {
  for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL");
  fs.rmSync(tmp, { recursive: true, force: true });
});
const watchdog = setTimeout(() => { console.error("FAIL: the test ran past 100 s"); process.exit(1); }, 100000);

const KEY = "ollama-test-key";
const THINK = "The user greets me.";
const ANSWER = "Hello! How can I help you today?";
const FIM_MIDDLE = "    return a + b\n";
const TOOLS = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];

// The tool script with a fill-in-the-middle chain added (Qwen 2.5 Coder's markers).
function toolFimScript() {
  const s = JSON.parse(fs.readFileSync(path.join(data, "script_qwen3_tool.json"), "utf8"));
  for (const t of ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"]) s.tokens.push({ text: t, special: true });
  s.tokens.push({ text: FIM_MIDDLE });
  s.chains.push(["<|fim_middle|>", FIM_MIDDLE, "<|im_end|>"]);
  const out = path.join(tmp, "tool_fim.json");
  fs.writeFileSync(out, JSON.stringify(s));
  return out;
}

// The reply script with a JSON answer reachable from "{" (its free reply,
// "Hello! ...", is not JSON: only the grammar of `format` leads there).
const JSON_REPLY = '"answer": "yes", "score": 7}';
function replyJsonScript() {
  const s = JSON.parse(fs.readFileSync(path.join(data, "script_qwen3_reply.json"), "utf8"));
  s.tokens.push({ text: JSON_REPLY });
  s.chains.push(["{", JSON_REPLY, "<|im_end|>"]);
  const out = path.join(tmp, "reply_json.json");
  fs.writeFileSync(out, JSON.stringify(s));
  return out;
}

function synth(name, args) {
  const out = path.join(tmp, name);
  execFileSync(ogSynth, [...args, "--format", "gguf", "--out", out], { stdio: "ignore" });
  return out;
}

function startServer(modelPath, alias, extra = []) {
  const proc = spawn(offgraph, ["serve", "--host", "127.0.0.1", "--port", "0", "--model", modelPath, "--alias", alias,
                                "--parallel", "2", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  const server = { proc, alias };
  servers.push(server);
  let out = "", err = "";
  server.stderr = () => err;
  proc.stderr.on("data", (d) => { err += d; });
  return new Promise((resolve, reject) => {
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/ready on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        server.base = m[1];
        resolve(server);
      }
    });
    proc.on("exit", (code) => reject(new Error(`the server ${alias} exited (${code}) before it was ready:\n${out}\n${err}`)));
    setTimeout(() => reject(new Error(`the server ${alias} was not ready within 30 s:\n${out}\n${err}`)), 30000).unref();
  });
}

const client = (server, headers = { Authorization: `Bearer ${KEY}` }) => new Ollama({ host: server.base, headers });

// The error the client raises, checked to be its ResponseError with the server's text.
async function expectResponseError(promise, status, text) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.name, "ResponseError", `not a ResponseError: ${e}`);
    assert.equal(e.status_code, status, e.message);
    assert.ok(e.error.includes(text), `"${e.error}" does not hold "${text}"`);
    return e;
  }
  assert.fail(`expected HTTP ${status}`);
}

const TIMINGS = ["total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"];
function assertTimings(r) {
  for (const k of TIMINGS) assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k}: ${JSON.stringify(r)}`);
  assert.ok(r.total_duration >= r.eval_duration, JSON.stringify(r));
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("list, show, ps, version", async ({ tool, embed }) => {
  const o = client(tool);
  const { models } = await o.list();
  assert.equal(models.length, 1);
  assert.equal(models[0].name, "qwen-tool:latest");
  assert.equal(models[0].model, "qwen-tool:latest");
  assert.match(models[0].digest, /^[0-9a-f]{64}$/);
  assert.ok(models[0].size > 1000000);
  assert.ok(!Number.isNaN(Date.parse(models[0].modified_at)));
  assert.equal(models[0].details.format, "gguf");
  assert.equal(models[0].details.family, "qwen3");
  assert.match(models[0].details.parameter_size, /^\d+(\.\d+)?[KMB]$/);
  assert.ok(models[0].details.quantization_level.length > 0);
  const show = await o.show({ model: "qwen-tool" });
  assert.deepEqual(show.capabilities, ["completion", "tools", "thinking", "insert"]);
  assert.ok(show.template.includes("<|im_start|>"));
  assert.equal(show.model_info["general.architecture"], "qwen3");
  assert.ok(show.model_info["general.parameter_count"] > 0);
  assert.deepEqual((await client(embed).show({ model: "qe:latest" })).capabilities, ["completion", "embedding"]);
  const ps = await o.ps();
  assert.equal(ps.models[0].name, "qwen-tool:latest");
  assert.ok(ps.models[0].context_length > 0);
  const v = await o.version();
  assert.match(v.version, /^\d+\.\d+\.\d+$/);
});

test("chat whole and streamed: pieces add up, done with timings", async ({ reply }) => {
  const o = client(reply);
  const messages = [{ role: "user", content: "Hi" }];
  const whole = await o.chat({ model: "qwen-reply", messages, options: { temperature: 0 } });
  assert.equal(whole.model, "qwen-reply");
  assert.equal(whole.message.role, "assistant");
  assert.equal(whole.message.content, ANSWER);
  assert.equal(whole.message.thinking, THINK);
  assert.equal(whole.done, true);
  assert.equal(whole.done_reason, "stop");
  assertTimings(whole);
  let content = "", thinking = "", last = null, pieces = 0;
  for await (const part of await o.chat({ model: "qwen-reply:latest", messages, stream: true, options: { temperature: 0 } })) {
    if (!part.done) pieces++;
    content += part.message.content;
    thinking += part.message.thinking ?? "";
    last = part;
  }
  assert.ok(pieces >= 2, `${pieces} pieces`);
  assert.equal(content, ANSWER);
  assert.equal(thinking, THINK);
  assert.equal(last.done, true);
  assert.equal(last.done_reason, "stop");
  assertTimings(last);
  assert.equal(last.eval_count, whole.eval_count);
});

test("tools round trip: tool_calls with object arguments, then a role tool result", async ({ tool }) => {
  const o = client(tool);
  const ask = [{ role: "user", content: "What is the weather in Paris?" }];
  const r = await o.chat({ model: "qwen-tool", messages: ask, tools: TOOLS, options: { temperature: 0 } });
  assert.equal(r.message.tool_calls.length, 1, JSON.stringify(r));
  assert.equal(r.message.tool_calls[0].function.name, "get_weather");
  assert.deepEqual(r.message.tool_calls[0].function.arguments, { city: "Paris" });
  assert.equal(r.message.content, "");
  assert.equal(r.message.thinking, "The user wants the weather.");
  let streamed = [];
  for await (const part of await o.chat({ model: "qwen-tool", messages: ask, tools: TOOLS, stream: true })) {
    streamed = streamed.concat(part.message.tool_calls ?? []);
  }
  assert.deepEqual(streamed.map((c) => c.function), r.message.tool_calls.map((c) => c.function));
  const back = [...ask, r.message, { role: "tool", content: "sunny, 21 C", tool_name: "get_weather" }];
  const after = await o.chat({ model: "qwen-tool", messages: back, tools: TOOLS, options: { temperature: 0 } });
  assert.equal(after.done, true, JSON.stringify(after));
  assert.ok(after.prompt_eval_count > r.prompt_eval_count, "the tool result reached the prompt");
});

test("think: true gives thinking, false turns it off", async ({ reply }) => {
  const o = client(reply);
  const messages = [{ role: "user", content: "Hi" }];
  const on = await o.chat({ model: "qwen-reply", messages, think: true, options: { temperature: 0 } });
  assert.equal(on.message.thinking, THINK);
  assert.equal(on.message.content, ANSWER);
  const off = await o.chat({ model: "qwen-reply", messages, think: false, options: { temperature: 0 } });
  assert.equal(off.message.thinking, undefined, JSON.stringify(off));
  assert.equal(off.message.content, ANSWER);
  const low = await o.chat({ model: "qwen-reply", messages, think: "low", options: { temperature: 0 } });
  assert.equal(low.done, true);
});

test("format json and a JSON schema: the reply validates", async ({ reply }) => {
  const o = client(reply);
  const messages = [{ role: "user", content: "Hi" }];
  const j = await o.chat({ model: "qwen-reply", messages, format: "json", think: false,
                           options: { temperature: 0, num_predict: 300 } });
  assert.equal(j.done_reason, "stop", JSON.stringify(j));
  const obj = JSON.parse(j.message.content);
  assert.equal(typeof obj, "object");
  const schema = { type: "object", properties: { answer: { type: "string", enum: ["yes", "no"] },
                                                 score: { type: "integer", minimum: 0, maximum: 9 } },
                   required: ["answer", "score"], additionalProperties: false };
  const s = await o.chat({ model: "qwen-reply", messages, format: schema, think: false,
                           options: { temperature: 0, num_predict: 300 } });
  const v = JSON.parse(s.message.content);
  assert.deepEqual(Object.keys(v).sort(), ["answer", "score"]);
  assert.ok(["yes", "no"].includes(v.answer) && Number.isInteger(v.score) && v.score >= 0 && v.score <= 9, s.message.content);
});

// Since structured output lets a reasoning model reason first (docs/serving.md
// "Reasoning before the constrained part"), format with thinking on (or think
// omitted) gives the reasoning in thinking and the JSON answer in content,
// whole and streamed, on chat and generate; options.max_reasoning_tokens 0
// closes the block at once.
async function formatReply(o, generate, body) {
  const req = generate ? { model: "qwen-reply", prompt: "Hi", ...body }
                       : { model: "qwen-reply", messages: [{ role: "user", content: "Hi" }], ...body };
  const call = (r) => (generate ? o.generate(r) : o.chat(r));
  const pick = (r) => (generate ? { content: r.response, thinking: r.thinking }
                                : { content: r.message.content, thinking: r.message.thinking });
  if (!body.stream) {
    const r = await call(req);
    assert.equal(r.done_reason, "stop", JSON.stringify(r));
    return pick(r);
  }
  let content = "", thinking = "", last = null;
  for await (const part of await call(req)) {
    const p = pick(part);
    content += p.content ?? "";
    thinking += p.thinking ?? "";
    last = part;
  }
  assert.equal(last.done_reason, "stop", JSON.stringify(last));
  return { content, thinking: thinking || undefined };
}

test("format with thinking: reasoning in thinking, the answer validates (chat, generate, streamed)", async ({ reply }) => {
  const o = client(reply);
  const schema = { type: "object", properties: { answer: { type: "string", enum: ["yes", "no"] },
                                                 score: { type: "integer", minimum: 0, maximum: 9 } },
                   required: ["answer", "score"], additionalProperties: false };
  const options = { temperature: 0, num_predict: 300 };
  for (const generate of [false, true]) {
    for (const format of ["json", schema]) {
      for (const think of [true, undefined]) {
        for (const stream of [false, true]) {
          const what = `${generate ? "generate" : "chat"} format ${typeof format} think ${think} stream ${stream}`;
          const r = await formatReply(o, generate, { format, think, stream, options });
          assert.equal(r.thinking, THINK, what);
          const v = JSON.parse(r.content);
          assert.deepEqual(v, { answer: "yes", score: 7 }, what);
        }
      }
    }
  }
  const none = await formatReply(o, false, { format: schema, think: true, options: { ...options, max_reasoning_tokens: 0 } });
  assert.ok(!none.thinking, JSON.stringify(none));
  assert.deepEqual(JSON.parse(none.content), { answer: "yes", score: 7 });
  await expectResponseError(o.chat({ model: "qwen-reply", messages: [{ role: "user", content: "Hi" }], format: "json",
                                     options: { max_reasoning_tokens: -1 } }), 400, "'options.max_reasoning_tokens'");
});

test("generate: templated, raw, suffix, and context continuing an exchange", async ({ reply, tool }) => {
  const o = client(reply);
  const first = await o.generate({ model: "qwen-reply", prompt: "Hi", options: { temperature: 0 } });
  assert.equal(first.response, ANSWER);
  assert.equal(first.thinking, THINK);
  assert.equal(first.done_reason, "stop");
  assertTimings(first);
  assert.ok(Array.isArray(first.context) && first.context.length > first.prompt_eval_count, JSON.stringify(first));
  const next = await o.generate({ model: "qwen-reply", prompt: "Again", context: first.context, options: { temperature: 0 } });
  assert.deepEqual(next.context.slice(0, first.context.length), first.context);
  assert.ok(next.prompt_eval_count > first.context.length, "the context was continued");
  const raw = await o.generate({ model: "qwen-reply", prompt: "Hi\n", raw: true, options: { temperature: 0 } });
  assert.equal(raw.response, `<think>\n${THINK}\n</think>\n\n${ANSWER}`);  // no template, nothing parsed
  assert.equal(raw.thinking, undefined);
  let streamed = "";
  for await (const part of await o.generate({ model: "qwen-reply", prompt: "Hi\n", raw: true, stream: true })) {
    streamed += part.response;
    if (part.done) assert.ok(Array.isArray(part.context));
  }
  assert.equal(streamed, raw.response);
  const fim = await client(tool).generate({ model: "qwen-tool", prompt: "def add(a, b):\n", suffix: "\nprint(add(1, 2))\n",
                                            options: { temperature: 0 } });
  assert.equal(fim.response, FIM_MIDDLE);
  const load = await o.generate({ model: "qwen-reply", prompt: "" });
  assert.equal(load.done, true);
  assert.equal(load.done_reason, "load");
});

test("embed and embeddings equal /v1/embeddings", async ({ embed }) => {
  const o = client(embed);
  const inputs = ["Once upon a time", "The cat sat"];
  const r = await fetch(`${embed.base}/v1/embeddings`, {
    method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: "qe", input: inputs }) });
  const v1 = await r.json();
  const e = await o.embed({ model: "qe", input: inputs });
  assert.equal(e.embeddings.length, 2);
  assert.deepEqual(e.embeddings[0], v1.data[0].embedding);
  assert.deepEqual(e.embeddings[1], v1.data[1].embedding);
  assert.equal(e.prompt_eval_count, v1.usage.prompt_tokens);
  const legacy = await o.embeddings({ model: "qe", prompt: inputs[0] });
  assert.deepEqual(legacy.embedding, v1.data[0].embedding);
  const cut = await o.embed({ model: "qe", input: inputs[0], dimensions: 16 });
  assert.equal(cut.embeddings[0].length, 16);
});

test("errors: ResponseError with the server's message; pull; the key", async ({ tool, reply }) => {
  const o = client(tool);
  await expectResponseError(o.chat({ model: "llama3", messages: [{ role: "user", content: "x" }] }), 404,
                            "model 'llama3' not found");
  await expectResponseError(o.chat({ model: "qwen-tool", messages: [{ role: "user", content: "x", images: ["aGk="] }] }),
                            400, "this model has no vision tower");
  await expectResponseError(o.chat({ model: "qwen-tool", messages: [{ role: "user", content: "x" }], format: "yaml" }),
                            400, "'format'");
  await expectResponseError(o.generate({ model: "qwen-tool", prompt: "x", options: { num_ctx: 10000000 } }), 400,
                            "'options.num_ctx'");
  await expectResponseError(o.embed({ model: "qwen-tool", input: "x" }), 400, "not an embedding model");
  await expectResponseError(o.show({ model: "other" }), 404, "not found");
  await expectResponseError(client(tool, {}).list(), 401, "API key");
  await expectResponseError(client(tool, { Authorization: "Bearer wrong" }).list(), 401, "not valid");
  const pulled = await o.pull({ model: "qwen-tool:latest" });
  assert.equal(pulled.status, "success");
  for await (const part of await o.pull({ model: "qwen-tool", stream: true })) assert.equal(part.status, "success");
  await expectResponseError(o.pull({ model: "llama3" }), 404, "models are files given to `offgraph serve`");
  await expectResponseError(o.delete({ model: "qwen-tool" }), 400, "cannot delete");
  await expectResponseError(o.copy({ source: "qwen-tool", destination: "x" }), 400, "cannot copy");
  await expectResponseError(o.create({ model: "x", from: "qwen-tool" }), 400, "cannot create");
  await expectResponseError(client(reply).push({ model: "qwen-reply" }), 400, "cannot push");
});

async function main() {
  const toolModel = synth("tool.gguf", ["--family", "qwen3", "--script", toolFimScript(), "--chat-template", qwenTemplate]);
  const replyModel = synth("reply.gguf", ["--family", "qwen3", "--script", replyJsonScript(),
                                          "--chat-template", qwenTemplate]);
  const embedModel = synth("embed.gguf", ["--family", "qwen3", "--embedding"]);
  const key = ["--api-key", KEY];
  const [tool, reply, embed] = await Promise.all([startServer(toolModel, "qwen-tool", key),
                                                  startServer(replyModel, "qwen-reply", key),
                                                  startServer(embedModel, "qe", key)]);
  let failed = 0;
  for (const t of tests) {
    const t0 = Date.now();
    try {
      await t.fn({ tool, reply, embed });
      console.log(`ok   ${t.name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name}: ${e.stack}`);
    }
  }
  for (const s of servers) s.proc.kill("SIGTERM");
  clearTimeout(watchdog);
  if (failed) {
    for (const s of servers) console.log(`--- ${s.alias} stderr (last 2000 bytes):\n${s.stderr().slice(-2000)}`);
    console.log(`${failed} of ${tests.length} failed`);
    process.exit(1);
  }
  console.log(`all ${tests.length} passed`);
}

main().catch((e) => {
  console.error(`FAIL: ${e.stack}`);
  process.exit(1);
});
