// `offgraph serve`'s tool calls and reasoning driven by the official OpenAI
// JavaScript SDK, on scripted synthetic models (og-synth --script, docs/tools.md)
// whose replies are fixed, under the real Qwen 3 and Llama 3.2 chat templates:
//  - a Qwen 3 tool call whole: message.tool_calls (id "call_...", type
//    function, get_weather, arguments JSON {city: "Paris"}), content null,
//    reasoning_content trimmed of the <think> block's newlines, finish_reason
//    "tool_calls";
//  - the same streamed: deltas accumulated by index as agent frameworks do
//    (first {index, id, type, name, arguments: ""}, then arguments), reasoning
//    before the call; and through the SDK's own chat.completions.stream()
//    helper (finalChatCompletion and its tool-call event);
//  - a round trip: the assistant message echoed as the SDK returned it
//    (tool_calls, content null, reasoning_content) plus a role "tool" result;
//    POST /apply-template shows the call as a <tool_call> block and the result
//    in a <tool_response> block;
//  - reasoning without tools, whole and streamed (reasoning deltas before
//    content deltas), and --reasoning-format none leaving <think> in content;
//  - chat_template_kwargs {enable_thinking: false} passed through the SDK's
//    body (checked on the wire): no reasoning, the call still parsed;
//  - tool_choice "none": the <tool_call> text stays content, no tool_calls;
//  - a Llama 3.2 JSON tool call ({"name", "parameters"} ended by <|eom_id|>);
//  - fields agents send (cache_prompt, refusal: null on an echoed assistant
//    message, parallel_tool_calls) are accepted;
//  - structured output: chat.completions.parse with a JSON schema (no zod) gives
//    a parsed object on a model whose free reply is not JSON; tool_choice
//    required and a named function give a valid call; an unenforceable schema
//    keyword is a BadRequestError naming it;
//  - every server exits 143 on SIGTERM.
// Run by ctest: node openai_tools_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES SOURCE_DIR.
// The models are written into a temporary directory removed at exit; the
// servers bind 127.0.0.1 on free ports; the whole run is bounded.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { promisify } from "node:util";

const [offgraphArg, ogSynthArg, nodeModulesArg, srcDirArg] = process.argv.slice(2);
if (!offgraphArg || !ogSynthArg || !nodeModulesArg || !srcDirArg) {
  console.error("usage: node openai_tools_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES SOURCE_DIR");
  process.exit(2);
}
const offgraph = path.resolve(offgraphArg);
const ogSynth = path.resolve(ogSynthArg);
const nodeModules = path.resolve(nodeModulesArg);
const srcDir = path.resolve(srcDirArg);
const data = path.join(srcDir, "tests/e2e/data");
const templates = path.join(srcDir, "tests/template/data/templates");
for (const f of [path.join(data, "script_qwen3_tool.json"), path.join(data, "script_qwen3_reply.json"),
                 path.join(data, "script_llama32_tool.json"), path.join(templates, "Qwen-Qwen3-0.6B.jinja"),
                 path.join(templates, "meta-llama-Llama-3.2-3B-Instruct.jinja")]) {
  if (!fs.existsSync(f)) {
    console.error(`FAIL: missing test data ${f}`);
    process.exit(1);
  }
}
let OpenAI;
try {
  OpenAI = createRequire(import.meta.url)(path.join(nodeModules, "openai")).OpenAI;
} catch (e) {
  console.error(`FAIL: the openai package is not in ${nodeModules}: run scripts/node_deps.sh (${e.message})`);
  process.exit(1);
}

// Everything started here is undone at exit, however the run ends.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "og_js_tools_"));
const servers = [];
process.on("exit", () => {
  for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL");
  fs.rmSync(tmp, { recursive: true, force: true });
});
const watchdog = setTimeout(() => { console.error("FAIL: the test ran past 90 s"); process.exit(1); }, 90000);

// The scripted replies (tests/e2e/data/*.json).
const THINK_TOOL = "The user wants the weather.";
const CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const THINK_REPLY = "The user greets me.";
const ANSWER = "Hello! How can I help you today?";

const TOOLS = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];
const ASK = [{ role: "user", content: "What is the weather in Paris?" }];

// Starts a server and resolves with {proc, base, model, client, stderr} once it prints its ready line.
function startServer(modelPath, alias, extra = []) {
  const proc = spawn(offgraph, ["serve", "--host", "127.0.0.1", "--port", "0", "--model", modelPath, "--alias", alias,
                                "--parallel", "2", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  const server = { proc, model: alias, name: alias + (extra.length ? ` ${extra.join(" ")}` : "") };
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
        server.client = new OpenAI({ baseURL: `${m[1]}/v1`, apiKey: "none", maxRetries: 0, timeout: 30000 });
        resolve(server);
      }
    });
    proc.on("exit", (code) => reject(new Error(`the server ${server.name} exited (${code}) before it was ready:\n${out}\n${err}`)));
    setTimeout(() => reject(new Error(`the server ${server.name} was not ready within 30 s:\n${out}\n${err}`)), 30000).unref();
  });
}

async function stopServer(server) {
  if (server.proc.exitCode !== null || server.proc.signalCode !== null) return server.proc.exitCode ?? server.proc.signalCode;
  const exited = new Promise((resolve) => server.proc.on("exit", (code, signal) => resolve(code ?? signal)));
  server.proc.kill("SIGTERM");
  return exited;
}

// POST /apply-template with plain fetch: {status, body}.
async function applyTemplate(server, body) {
  const r = await fetch(`${server.base}/apply-template`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ model: server.model, ...body }) });
  return { status: r.status, body: await r.json() };
}

// A streamed chat reply read chunk by chunk and accumulated as agent frameworks
// do: reasoning and content concatenated, tool calls gathered by index (id,
// type and name from the delta that has them, arguments concatenated). Also
// records each call's raw deltas and the order of the kinds of delta.
async function streamReply(server, body) {
  const stream = await server.client.chat.completions.create({ model: server.model, temperature: 0, ...body, stream: true });
  const acc = { reasoning: "", content: "", calls: [], deltas: [], order: [], finish: null, role: null };
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    const ch = chunk.choices[0];
    if (!ch) continue;
    const d = ch.delta ?? {};
    if (d.role) acc.role = d.role;
    if (d.reasoning_content) { acc.reasoning += d.reasoning_content; acc.order.push("reasoning"); }
    if (d.content) { acc.content += d.content; acc.order.push("content"); }
    for (const tc of d.tool_calls ?? []) {
      acc.deltas.push(tc);
      acc.order.push("tool_calls");
      const call = acc.calls[tc.index] ??= { id: "", type: "", name: "", arguments: "" };
      if (tc.id) call.id = tc.id;
      if (tc.type) call.type = tc.type;
      if (tc.function?.name) call.name = tc.function.name;
      if (tc.function?.arguments) call.arguments += tc.function.arguments;
    }
    if (ch.finish_reason) acc.finish = ch.finish_reason;
  }
  return acc;
}

// The one get_weather(Paris) call every tool script makes.
function assertWeatherCall(call) {
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  assert.equal(typeof call.function.arguments, "string");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("1. tool call, whole: tool_calls, content null, trimmed reasoning_content", async ({ tool }) => {
  const r = await tool.client.chat.completions.create({ model: tool.model, messages: ASK, tools: TOOLS, temperature: 0 });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.finish_reason, "tool_calls");
  assert.equal(c.message.role, "assistant");
  // OpenAI's shape: content null when the reply is only tool calls.
  assert.equal(c.message.content, null);
  // The script thinks "\nThe user wants the weather.\n": whitespace is trimmed at
  // both ends of the reasoning (docs/serving.md), and the <think> markers are gone.
  assert.equal(c.message.reasoning_content, THINK_TOOL);
  assert.equal(c.message.tool_calls.length, 1);
  assertWeatherCall(c.message.tool_calls[0]);
  assert.ok(r.usage.completion_tokens > 0);
});

test("2. tool call, streamed: deltas by index, and the SDK's stream helper", async ({ tool }) => {
  const s = await streamReply(tool, { messages: ASK, tools: TOOLS });
  assert.equal(s.role, "assistant");
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.reasoning, THINK_TOOL);
  assert.equal(s.content, "");
  assert.equal(s.calls.length, 1);
  const c = s.calls[0];
  assertWeatherCall({ id: c.id, type: c.type, function: { name: c.name, arguments: c.arguments } });
  // The documented delta shapes: first {index, id, type, function: {name, arguments: ""}},
  // then {index, function: {arguments}} only (a framework that concatenates names
  // or overwrites ids would be hurt by repeats).
  assert.deepEqual(s.deltas[0], { index: 0, id: c.id, type: "function", function: { name: "get_weather", arguments: "" } });
  assert.ok(s.deltas.length >= 2, JSON.stringify(s.deltas));
  for (const d of s.deltas.slice(1)) assert.deepEqual(Object.keys(d).sort(), ["function", "index"], JSON.stringify(d));
  for (const d of s.deltas.slice(1)) assert.deepEqual(Object.keys(d.function), ["arguments"], JSON.stringify(d));
  // Reasoning comes first, then the call.
  assert.equal(s.order[0], "reasoning");
  assert.ok(s.order.lastIndexOf("reasoning") < s.order.indexOf("tool_calls"), s.order.join(","));

  // The SDK's helper (openai >= 4.55: client.chat.completions.stream) accumulates
  // the same chunks into a chat.completion and announces the finished call.
  assert.equal(typeof tool.client.chat.completions.stream, "function", "the SDK has no chat.completions.stream helper");
  const helper = tool.client.chat.completions.stream({ model: tool.model, messages: ASK, tools: TOOLS, temperature: 0 });
  const done = [];
  helper.on("tool_calls.function.arguments.done", (e) => done.push(e));
  const final = await helper.finalChatCompletion();
  const fc = final.choices[0];
  assert.equal(fc.finish_reason, "tool_calls");
  assert.equal(fc.message.content, null);
  assert.equal(fc.message.tool_calls.length, 1);
  assertWeatherCall(fc.message.tool_calls[0]);
  // Each reply draws its own ids.
  assert.notEqual(fc.message.tool_calls[0].id, c.id);
  assert.equal(done.length, 1);
  assert.equal(done[0].name, "get_weather");
  assert.deepEqual(JSON.parse(done[0].arguments), { city: "Paris" });
  // The helper merges delta fields it does not know (reasoning_content) by
  // assignment, not concatenation, so it keeps the last reasoning piece only:
  // what it holds must be the end of the reasoning.
  assert.ok(THINK_TOOL.endsWith(fc.message.reasoning_content ?? "\u0000"), String(fc.message.reasoning_content));
});

test("3. tool round trip: the SDK's message echoed with a tool result; /apply-template shows both blocks", async ({ tool }) => {
  const first = await tool.client.chat.completions.create({ model: tool.model, messages: ASK, tools: TOOLS, temperature: 0 });
  const assistant = first.choices[0].message;  // as the SDK returned it: tool_calls, content null, reasoning_content
  assert.equal(assistant.content, null);
  const messages = [...ASK, assistant, { role: "tool", tool_call_id: assistant.tool_calls[0].id, content: "sunny, 21 C" }];
  const second = await tool.client.chat.completions.create({ model: tool.model, messages, tools: TOOLS, temperature: 0 });
  // The generation prompt ends "<|im_start|>assistant\n" again, so the script replies as before.
  assert.equal(second.choices[0].finish_reason, "tool_calls");
  assert.equal(second.choices[0].message.reasoning_content, THINK_TOOL);
  assertWeatherCall(second.choices[0].message.tool_calls[0]);
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);

  const t = await applyTemplate(tool, { messages, tools: TOOLS });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  const prompt = t.body.prompt;
  assert.equal(typeof prompt, "string");
  // Qwen 3's rendering: the tools in the system turn, the earlier turn with its
  // reasoning (it follows the last user query) and the call as a <tool_call>
  // block (the arguments string parsed and re-serialised by the template's
  // tojson), the result as a user turn's <tool_response> block.
  assert.ok(prompt.startsWith("<|im_start|>system\n"), prompt);
  assert.ok(prompt.includes('"name": "get_weather"'), prompt);
  assert.ok(prompt.endsWith(
    "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n" +
    `<|im_start|>assistant\n<think>\n${THINK_TOOL}\n</think>\n\n${CALL_TEXT}<|im_end|>\n` +
    "<|im_start|>user\n<tool_response>\nsunny, 21 C\n</tool_response><|im_end|>\n" +
    "<|im_start|>assistant\n"), prompt);
});

test("4. reasoning without tools: whole, streamed, and --reasoning-format none", async ({ reply, raw }) => {
  const req = { messages: [{ role: "user", content: "Hi!" }], temperature: 0 };
  const whole = await reply.client.chat.completions.create({ model: reply.model, ...req });
  const m = whole.choices[0].message;
  assert.equal(whole.choices[0].finish_reason, "stop");
  assert.equal(m.reasoning_content, THINK_REPLY);
  assert.equal(m.content, ANSWER);
  assert.equal(m.tool_calls, undefined);

  const s = await streamReply(reply, req);
  assert.equal(s.finish, "stop");
  assert.equal(s.reasoning, THINK_REPLY);
  assert.equal(s.content, ANSWER);
  assert.equal(s.calls.length, 0);
  assert.ok(s.order.includes("reasoning") && s.order.includes("content"), s.order.join(","));
  assert.ok(s.order.lastIndexOf("reasoning") < s.order.indexOf("content"), `reasoning after content: ${s.order.join(",")}`);

  const full = `<think>\n${THINK_REPLY}\n</think>\n\n${ANSWER}`;
  const r = await raw.client.chat.completions.create({ model: raw.model, ...req });
  assert.equal(r.choices[0].message.content, full);
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  const rs = await streamReply(raw, req);
  assert.equal(rs.content, full);
  assert.equal(rs.reasoning, "");
  assert.equal(rs.finish, "stop");
});

test("5. chat_template_kwargs {enable_thinking: false} through the SDK: no reasoning, the call parsed", async ({ tool }) => {
  // openai v5 has no extra_body option: fields the SDK does not know, put in the
  // body object, are sent as they are. Check on the wire with a fetch wrapper.
  const sent = [];
  const client = new OpenAI({ baseURL: `${tool.base}/v1`, apiKey: "none", maxRetries: 0, timeout: 30000,
                              fetch: (url, init) => { sent.push(init?.body); return fetch(url, init); } });
  const kwargs = { chat_template_kwargs: { enable_thinking: false } };
  const r = await client.chat.completions.create({ model: tool.model, messages: ASK, tools: TOOLS, temperature: 0, ...kwargs });
  assert.equal(sent.length, 1);
  assert.deepEqual(JSON.parse(sent[0]).chat_template_kwargs, { enable_thinking: false });
  const c = r.choices[0];
  assert.equal(c.finish_reason, "tool_calls");
  assert.equal(c.message.reasoning_content, undefined);
  assert.equal(c.message.content, null);
  assertWeatherCall(c.message.tool_calls[0]);
  // The template closed an empty think block in the prompt.
  const t = await applyTemplate(tool, { messages: ASK, tools: TOOLS, ...kwargs });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  assert.ok(t.body.prompt.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), t.body.prompt);
  // Streamed the same.
  const s = await streamReply(tool, { messages: ASK, tools: TOOLS, ...kwargs });
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.reasoning, "");
  assert.equal(s.content, "");
  assert.equal(s.calls.length, 1);
  assert.deepEqual(JSON.parse(s.calls[0].arguments), { city: "Paris" });
});

test('6. tool_choice "none": the <tool_call> text stays content', async ({ tool }) => {
  const req = { messages: ASK, tools: TOOLS, tool_choice: "none" };
  const r = await tool.client.chat.completions.create({ model: tool.model, temperature: 0, ...req });
  const c = r.choices[0];
  assert.equal(c.finish_reason, "stop");
  assert.equal(c.message.tool_calls, undefined);
  assert.equal(c.message.content, CALL_TEXT);
  assert.equal(c.message.reasoning_content, THINK_TOOL);  // reasoning is still split off
  const s = await streamReply(tool, req);
  assert.equal(s.finish, "stop");
  assert.equal(s.calls.length, 0);
  assert.equal(s.content, CALL_TEXT);
  assert.equal(s.reasoning, THINK_TOOL);
});

test("7. Llama 3.2 JSON tool call, whole and streamed", async ({ llama }) => {
  const r = await llama.client.chat.completions.create({ model: llama.model, messages: ASK, tools: TOOLS, temperature: 0 });
  const c = r.choices[0];
  assert.equal(c.finish_reason, "tool_calls");
  assert.equal(c.message.content, null);
  assert.equal(c.message.reasoning_content, undefined);
  assert.equal(c.message.tool_calls.length, 1);
  assertWeatherCall(c.message.tool_calls[0]);  // "parameters" becomes arguments
  const s = await streamReply(llama, { messages: ASK, tools: TOOLS });
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.content, "");
  assert.equal(s.calls.length, 1);
  assertWeatherCall({ id: s.calls[0].id, type: s.calls[0].type,
                      function: { name: s.calls[0].name, arguments: s.calls[0].arguments } });
  // The round trip renders in Llama's template too (it reads no content on a call turn).
  const messages = [...ASK, c.message, { role: "tool", tool_call_id: c.message.tool_calls[0].id, content: "sunny, 21 C" }];
  const again = await llama.client.chat.completions.create({ model: llama.model, messages, tools: TOOLS, temperature: 0 });
  assert.equal(again.choices[0].finish_reason, "tool_calls");
});

test("8. fields agents send: cache_prompt, refusal: null, parallel_tool_calls", async ({ tool }) => {
  // The helper's final message carries refusal: null and content null, as an
  // agent keeps it in its history.
  const final = await tool.client.chat.completions.stream({ model: tool.model, messages: ASK, tools: TOOLS, temperature: 0 })
    .finalChatCompletion();
  const echoed = final.choices[0].message;
  assert.equal(echoed.refusal, null);
  for (const parallel of [true, false]) {
    const messages = [...ASK, { ...echoed, refusal: null },
                      { role: "tool", tool_call_id: echoed.tool_calls[0].id, content: "sunny, 21 C" }];
    const r = await tool.client.chat.completions.create({ model: tool.model, messages, tools: TOOLS, temperature: 0,
                                                          parallel_tool_calls: parallel, cache_prompt: true });
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    assertWeatherCall(r.choices[0].message.tool_calls[0]);
  }
  // cache_prompt is not a setting here: accepted, and logged once (the line is
  // written before the reply, but its pipe may be read after the response).
  const logged = () => tool.stderr().split("\n").filter((l) => l.includes("'cache_prompt'")).length;
  for (let i = 0; i < 50 && logged() === 0; ++i) await new Promise((r) => setTimeout(r, 20));
  assert.equal(logged(), 1, tool.stderr());
});

test("9. structured output: chat.completions.parse with a JSON schema (no zod), and a required tool call", async ({ reply, tool }) => {
  // The scripted model's free reply is not JSON: the grammar must make it so.
  const schema = { type: "object", properties: { answer: { type: "string", enum: ["yes", "no"] },
                                                 score: { type: "integer", minimum: 0, maximum: 9 } },
                   required: ["answer", "score"], additionalProperties: false };
  const parsed = await reply.client.chat.completions.parse({
    model: reply.model, messages: [{ role: "user", content: "Hi" }], temperature: 0, max_tokens: 400,
    response_format: { type: "json_schema", json_schema: { name: "verdict", schema, strict: true } },
  });
  const m = parsed.choices[0].message;
  assert.equal(parsed.choices[0].finish_reason, "stop", JSON.stringify(parsed));
  assert.ok(m.parsed && ["yes", "no"].includes(m.parsed.answer), JSON.stringify(m));
  assert.ok(Number.isInteger(m.parsed.score) && m.parsed.score >= 0 && m.parsed.score <= 9, JSON.stringify(m));
  assert.deepEqual(Object.keys(m.parsed).sort(), ["answer", "score"]);
  // tool_choice required and a named function: a valid call whatever the model prefers.
  for (const choice of ["required", { type: "function", function: { name: "get_weather" } }]) {
    const r = await tool.client.chat.completions.create({ model: tool.model, messages: ASK, tools: TOOLS,
                                                          tool_choice: choice, temperature: 0 });
    assert.equal(r.choices[0].finish_reason, "tool_calls", JSON.stringify(r));
    assertWeatherCall(r.choices[0].message.tool_calls[0]);
  }
  // A schema keyword the server cannot enforce is the SDK's BadRequestError naming it.
  await assert.rejects(reply.client.chat.completions.create({
    model: reply.model, messages: [{ role: "user", content: "Hi" }],
    response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", not: {} } } },
  }), (e) => e.status === 400 && /'not'/.test(e.message));
});

test("10. strict tools under tool_choice auto: a valid call passes unchanged, an invalid one never comes", async ({ tool }) => {
  const strictTool = (properties, required) => [{ type: "function", function: {
    name: "get_weather", strict: true,
    parameters: { type: "object", properties, required, additionalProperties: false } } }];
  // The script's call {"city": "Paris"} is valid for this schema: the grammar lets it through.
  const ok = await tool.client.chat.completions.create({ model: tool.model, messages: ASK, temperature: 0,
                                                         tools: strictTool({ city: { type: "string" } }, ["city"]) });
  assert.equal(ok.choices[0].finish_reason, "tool_calls", JSON.stringify(ok));
  assertWeatherCall(ok.choices[0].message.tool_calls[0]);
  // For a schema that wants "town", the script's call is invalid: whatever the
  // reply becomes, it holds no invalid call and no stray marker.
  const schema = { town: { type: "string", maxLength: 12 } };
  for (const seed of [1, 2]) {
    const r = await tool.client.chat.completions.create({ model: tool.model, messages: ASK, temperature: 0.7, seed,
                                                          max_tokens: 120, tools: strictTool(schema, ["town"]) });
    const m = r.choices[0].message;
    assert.ok(!(m.content ?? "").includes("<tool_call>"), JSON.stringify(r));
    for (const call of m.tool_calls ?? []) {
      const args = JSON.parse(call.function.arguments);
      assert.deepEqual(Object.keys(args), ["town"], JSON.stringify(r));
      assert.ok(typeof args.town === "string" && args.town.length <= 12, JSON.stringify(r));
    }
  }
});

async function main() {
  const t0 = Date.now();
  const synth = promisify(execFile);
  const qwen3 = (script) => ["--family", "qwen3", "--format", "gguf", "--out", path.join(tmp, `${script}.gguf`),
                             "--script", path.join(data, `script_${script}.json`),
                             "--chat-template", path.join(templates, "Qwen-Qwen3-0.6B.jinja")];
  await Promise.all([
    synth(ogSynth, qwen3("qwen3_tool")),
    synth(ogSynth, qwen3("qwen3_reply")),
    synth(ogSynth, ["--family", "llama", "--format", "gguf", "--out", path.join(tmp, "llama32_tool.gguf"),
                    "--script", path.join(data, "script_llama32_tool.json"),
                    "--chat-template", path.join(templates, "meta-llama-Llama-3.2-3B-Instruct.jinja")]),
  ]);
  const [tool, reply, raw, llama] = await Promise.all([
    startServer(path.join(tmp, "qwen3_tool.gguf"), "qwen3-tool"),
    startServer(path.join(tmp, "qwen3_reply.gguf"), "qwen3-reply"),
    startServer(path.join(tmp, "qwen3_reply.gguf"), "qwen3-raw", ["--reasoning-format", "none"]),
    startServer(path.join(tmp, "llama32_tool.gguf"), "llama32-tool"),
  ]);
  console.log(`# models written and servers ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  let failed = 0;
  for (const t of tests) {
    try {
      await t.fn({ tool, reply, raw, llama });
      console.log(`ok - ${t.name}`);
    } catch (e) {
      ++failed;
      console.log(`FAIL - ${t.name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  console.log(`# ${tests.length - failed} of ${tests.length} cases passed`);
  for (const server of servers) {
    const code = await stopServer(server);
    if (code !== 143) {  // a graceful stop on SIGTERM exits 128 + 15, as every offgraph command
      ++failed;
      console.log(`FAIL - the ${server.name} server exited with ${code} on SIGTERM:\n${server.stderr()}`);
    } else {
      console.log(`ok - SIGTERM: the ${server.name} server exited 143`);
    }
  }
  console.log(`# ${failed ? "FAILED" : "passed"} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  clearTimeout(watchdog);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(`FAIL: ${e && e.stack ? e.stack : e}`); process.exit(1); });
