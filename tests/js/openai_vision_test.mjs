// `offgraph serve --mmproj` with og-synth's tiny Gemma 3 vision model, driven
// by the official OpenAI JavaScript SDK: image_url parts with data: URLs (PNG
// images written here), the same image twice gives the same greedy text and
// the second is a prefix-cache hit (its cached_tokens and /metrics'
// offgraph:prefix_cache_hits_total), another image misses past the text before
// it; streaming with an image; Ollama's /api/chat images (base64, no data:
// prefix) and /api/generate's give the OpenAI route's text (generate's context
// cannot carry the image back); the SDK's typed 400s naming the field
// for an http URL, bad base64, bytes that are no image, and an image sent to a
// model without a tower; with --allow-image-urls an http:// URL (a loopback
// server here) answers as its data: URL, a 404 and https are 400s; a clean
// exit on SIGTERM.
// Run by ctest: node openai_vision_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import zlib from "node:zlib";

const [offgraphArg, ogSynth, nodeModulesArg] = process.argv.slice(2);
if (!offgraphArg || !ogSynth || !nodeModulesArg) {
  console.error("usage: node openai_vision_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES");
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

// A w x h RGB PNG (filter 0 rows, zlib), a gradient shifted by `seed`.
function png(w, h, seed) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4), sum = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
    sum.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 2;  // RGB
  const raw = Buffer.alloc(h * (1 + 3 * w));
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let c = 0; c < 3; c++) raw[y * (1 + 3 * w) + 1 + 3 * x + c] = (x * 29 + y * 13 + c * 70 + seed * 101) % 256;
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr),
                        chunk("IDAT", zlib.deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

const cat = png(32, 24, 1), dog = png(32, 24, 2);
const dataUrl = (buf) => `data:image/png;base64,${buf.toString("base64")}`;
const ask = (url, text = "What is in the picture?") =>
  [{ role: "user", content: [{ type: "image_url", image_url: { url } }, { type: "text", text }] }];

async function counter(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " ") || l.startsWith(name + "{"));
  assert.ok(line, `${name} is not in /metrics`);
  return Number(line.split(" ").pop());
}

async function expectError(promise, status, param, words) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    assert.equal(e.status, status, e.message);
    if (param) assert.equal(e.param, param, e.message);
    if (words) assert.ok(e.message.includes(words), e.message);
    return e;
  }
  assert.fail(`expected HTTP ${status}`);
}

const greedy = { model: "vis", max_tokens: 8, temperature: 0 };
const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("the same image twice: the same text, the second from the prefix cache; another image misses",
     async ({ vis, servers }) => {
  const base = servers.vis.base;
  const hits0 = await counter(base, "offgraph:prefix_cache_hits_total");
  const a = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(cat)) });
  const hits1 = await counter(base, "offgraph:prefix_cache_hits_total");
  const b = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(cat)) });
  const hits2 = await counter(base, "offgraph:prefix_cache_hits_total");
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.ok(a.choices[0].message.content.length > 0);
  assert.equal(a.usage.prompt_tokens, b.usage.prompt_tokens);
  assert.equal(a.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(b.usage.prompt_tokens_details.cached_tokens, b.usage.prompt_tokens - 1);
  assert.equal(hits1, hits0);
  assert.equal(hits2, hits1 + 1);
  // Another image, the same text and ids: only what precedes the image is shared; the same
  // image before other text shares the image too (og-synth's tiny tower: 4 rows per image).
  const c = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(dog)) });
  const d = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(cat), "Who made it?") });
  assert.equal(c.usage.prompt_tokens, a.usage.prompt_tokens);
  const other = c.usage.prompt_tokens_details.cached_tokens, same = d.usage.prompt_tokens_details.cached_tokens;
  assert.ok(same - other >= 4, `same image shares ${same} tokens, another image ${other}`);
  // The image's tokens count in the prompt.
  const t = await vis.chat.completions.create({ ...greedy, messages: [{ role: "user", content: "What is in the picture?" }] });
  assert.ok(a.usage.prompt_tokens >= t.usage.prompt_tokens + 4, `${a.usage.prompt_tokens} vs ${t.usage.prompt_tokens}`);
});

test("streaming with an image gives the whole reply's text", async ({ vis }) => {
  const whole = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(dog), "Describe it.") });
  const stream = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(dog), "Describe it."), stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(text, whole.choices[0].message.content);
});

test("Ollama's /api/chat images give the OpenAI route's text", async ({ vis, servers }) => {
  const want = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(cat), "Name it.") });
  const res = await fetch(`${servers.vis.base}/api/chat`, {
    method: "POST",
    body: JSON.stringify({ model: "vis", stream: false, options: { temperature: 0, num_predict: 8 },
                           messages: [{ role: "user", content: "Name it.", images: [cat.toString("base64")] }] }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const got = await res.json();
  assert.equal(got.message.content, want.choices[0].message.content);
  const bad = await fetch(`${servers.vis.base}/api/generate`, {
    method: "POST", body: JSON.stringify({ model: "vis", prompt: "x", images: ["not base64!"], stream: false }),
  });
  assert.equal(bad.status, 400);
  assert.ok((await bad.json()).error.includes("'images[0]' is not valid base64"));
  // /api/generate with an image; its context holds the image's placeholders, which cannot stand for it again.
  const gen = await (await fetch(`${servers.vis.base}/api/generate`, {
    method: "POST", body: JSON.stringify({ model: "vis", prompt: "Name it.", images: [cat.toString("base64")],
                                           stream: false, options: { temperature: 0, num_predict: 8 } }),
  })).json();
  assert.equal(gen.response, want.choices[0].message.content);
  const again = await fetch(`${servers.vis.base}/api/generate`, {
    method: "POST", body: JSON.stringify({ model: "vis", prompt: "And?", context: gen.context, stream: false }),
  });
  assert.equal(again.status, 400);
  assert.ok((await again.json()).error.includes("is an image's placeholder token"));
});

test("typed 400s naming the field: http URL, bad base64, not an image, a model without a tower",
     async ({ vis, text }) => {
  await expectError(vis.chat.completions.create({ ...greedy, messages: ask("https://example.com/cat.png") }), 400,
                    "messages[0].content[0].image_url.url",
                    "image URLs are not fetched; send a data: URL or start serve with --allow-image-urls");
  await expectError(vis.chat.completions.create({ ...greedy, messages: ask("data:image/png;base64,@@@@") }), 400,
                    "messages[0].content[0].image_url.url", "base64");
  await expectError(vis.chat.completions.create({ ...greedy, messages: ask("data:image/png;base64,aGVsbG8gd29ybGQ=") }),
                    400, "messages[0].content[0]", "image");
  await expectError(vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(cat.subarray(0, 60))) }), 400,
                    "messages[0].content[0]", "image");
  await expectError(text.chat.completions.create({ ...greedy, model: "text", messages: ask(dataUrl(cat)) }), 400,
                    "messages[0].content[0]", "no vision tower");
});

test("--allow-image-urls: an http:// URL is fetched and answers as its data: URL; 404 and https are 400s",
     async ({ vis, fetching, images }) => {
  const want = await vis.chat.completions.create({ ...greedy, messages: ask(dataUrl(cat)) });
  const got = await fetching.chat.completions.create({ ...greedy, messages: ask(`${images}/cat.png`) });
  assert.equal(got.choices[0].message.content, want.choices[0].message.content);
  assert.equal(got.usage.prompt_tokens, want.usage.prompt_tokens);
  await expectError(fetching.chat.completions.create({ ...greedy, messages: ask(`${images}/missing.png`) }), 400,
                    "messages[0].content[0].image_url.url", "answered 404");
  await expectError(fetching.chat.completions.create({ ...greedy, messages: ask("https://127.0.0.1:9/cat.png") }), 400,
                    "messages[0].content[0].image_url.url", "https is not fetched");
});

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "og_js_vision_"));
  const model = path.join(tmp, "vis.gguf"), mmproj = path.join(tmp, "vis-mmproj.gguf");
  execFileSync(ogSynth, ["--family", "gemma3", "--vision", "--format", "gguf", "--out", model, "--mmproj-out", mmproj],
               { stdio: "ignore" });
  // The pictures over plain HTTP on a loopback port, for --allow-image-urls.
  const imageServer = http.createServer((req, res) => {
    if (req.url === "/cat.png") {
      res.writeHead(200, { "Content-Type": "image/png" });
      res.end(cat);
    } else {
      res.writeHead(404);
      res.end("no");
    }
  });
  await new Promise((resolve) => imageServer.listen(0, "127.0.0.1", resolve));
  const servers = {
    vis: await startServer(["--model", model, "--mmproj", mmproj, "--alias", "vis", "--parallel", "2"]),
    text: await startServer(["--model", model, "--alias", "text"]),
    fetching: await startServer(["--model", model, "--mmproj", mmproj, "--alias", "vis", "--allow-image-urls"]),
  };
  const clients = { servers, images: `http://127.0.0.1:${imageServer.address().port}` };
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
  imageServer.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  clearTimeout(watchdog);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(`FAIL: ${e && e.stack ? e.stack : e}`); process.exit(1); });
