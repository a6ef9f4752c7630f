// The chat page at `/` (src/server/webui/) in a real browser: Debian's
// chromium driven by puppeteer-core (pinned in tests/js/package.json; no
// browser download) against `offgraph serve` on a scripted synthetic model
// (og-synth --script tests/js/data/script_webui.json: thinks, answers in
// markdown holding <script> and <img onerror>, then repeats " [more] [again]"
// until max_tokens). Checked:
//  - the page loads under its Content-Security-Policy with no error, shows the
//    model's name, and asks for nothing but its own files and /v1 routes;
//  - Enter sends, Shift+Enter is a new line; the reply streams in with the
//    reasoning folded, the markdown rendered (heading, bold, list, code
//    block), the markup shown as text and inert (no script ran, no element
//    made, no request for the image, no javascript: link), and the speed line
//    (tokens, tok/s, TTFT);
//  - a long reply is seen growing, then stopped with Esc (the server sees the
//    client leave);
//  - New chat empties the page; after a reload both conversations are listed
//    and the first comes back whole;
//  - tool calls (a streamed reply injected by request interception) are shown;
//  - a server with --api-key: the page asks for the key, keeps it, and works;
//  - screenshots at desktop width (light and dark) and phone width, written to
//    OUT_DIR (docs/images/webui.png is one of them), with no sideways scroll;
//  - a reply's copy button puts its markdown on the clipboard;
//  - conversations or settings in localStorage of another shape are dropped.
// Run by ctest: node webui_browser_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES SOURCE_DIR OUT_DIR.
// Chromium missing is a failure (scripts/setup.sh installs it).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { promisify } from "node:util";

const [offgraphArg, ogSynthArg, nodeModulesArg, srcDirArg, outDirArg] = process.argv.slice(2);
if (!offgraphArg || !ogSynthArg || !nodeModulesArg || !srcDirArg || !outDirArg) {
  console.error("usage: node webui_browser_test.mjs OFFGRAPH OG_SYNTH NODE_MODULES SOURCE_DIR OUT_DIR");
  process.exit(2);
}
const CHROMIUM = "/usr/bin/chromium";
const srcDir = path.resolve(srcDirArg);
const outDir = path.resolve(outDirArg);
const script = path.join(srcDir, "tests/js/data/script_webui.json");
const template = path.join(srcDir, "tests/template/data/templates/Qwen-Qwen3-0.6B.jinja");
for (const f of [script, template]) {
  if (!fs.existsSync(f)) {
    console.error(`FAIL: missing test data ${f}`);
    process.exit(1);
  }
}
if (!fs.existsSync(CHROMIUM)) {
  console.error(`FAIL: ${CHROMIUM} is missing: install Debian's chromium (scripts/setup.sh does)`);
  process.exit(1);
}
let puppeteer;
try {
  puppeteer = createRequire(import.meta.url)(path.join(path.resolve(nodeModulesArg), "puppeteer-core"));
} catch (e) {
  console.error(`FAIL: puppeteer-core is not in ${nodeModulesArg}: run scripts/node_deps.sh (${e.message})`);
  process.exit(1);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "og_webui_"));
const servers = [];
let browser = null;
process.on("exit", () => {
  for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL");
  if (browser?.process()) browser.process().kill("SIGKILL");
  fs.rmSync(tmp, { recursive: true, force: true });
});
const watchdog = setTimeout(() => { console.error("FAIL: the test ran past 60 s"); process.exit(1); }, 60000);

const MODEL = "webui-model";
const KEY = "sk-webui-test";
const ANSWER_START = "## Result";

function startServer(modelPath, extra = []) {
  const proc = spawn(path.resolve(offgraphArg), ["serve", "--host", "127.0.0.1", "--port", "0", "--model", modelPath,
                                                 "--alias", MODEL, "--parallel", "2", ...extra],
                     { stdio: ["ignore", "pipe", "pipe"] });
  const server = { proc };
  servers.push(server);
  let out = "", err = "";
  server.stderr = () => err;
  proc.stderr.on("data", (d) => { err += d; });
  return new Promise((resolve, reject) => {
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/ready on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { server.base = m[1]; resolve(server); }
    });
    proc.on("exit", (code) => reject(new Error(`the server exited (${code}) before it was ready:\n${out}\n${err}`)));
    setTimeout(() => reject(new Error(`the server was not ready within 20 s:\n${out}\n${err}`)), 20000).unref();
  });
}

// A page on `base` that records what would mean a broken or unsafe page:
// script errors, console errors, CSP violations and requests for anything
// but the page's own files and the API.
async function openPage(base, viewport = { width: 1280, height: 800 }) {
  const page = await browser.newPage();
  await page.setViewport(viewport);
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  page.on("request", (r) => {
    const u = new URL(r.url());
    const ours = u.origin === base && (u.pathname === "/" || u.pathname.startsWith("/webui/") || u.pathname.startsWith("/v1/"));
    if (!ours && !r.url().startsWith("data:")) problems.push(`unexpected request: ${r.url()}`);
  });
  await page.evaluateOnNewDocument(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.problems = problems;
  await page.goto(base + "/", { waitUntil: "load" });
  return page;
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);
const count = (page, sel) => page.$$eval(sel, (es) => es.length);

async function setMaxTokens(page, n) {
  if (await page.$eval("#settings", (e) => e.hidden)) await page.click("#toggle-settings");
  await page.click("#max_tokens", { clickCount: 3 });
  await page.type("#max_tokens", String(n));
  await page.click("#toggle-settings");
}

// Types a message and sends it with Enter.
async function sendMessage(page, message) {
  await page.focus("#input");
  await page.keyboard.type(message);
  await page.keyboard.press("Enter");
}

// Waits until the last assistant reply has finished (its speed line is written).
async function waitReply(page) {
  await page.waitForFunction(() => {
    const last = [...document.querySelectorAll(".msg.assistant")].pop();
    return last && document.querySelector("#stop").hidden && /tokens/.test(last.querySelector(".stats")?.textContent ?? "");
  }, { timeout: 10000 });
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("1. the page loads under its policy and names the model", async ({ page }) => {
  await page.waitForFunction((m) => document.querySelector("#model-name").textContent === m, { timeout: 5000 }, MODEL);
  assert.equal(await page.title(), "offgraph chat");
  assert.ok(await page.$eval("#stop", (e) => e.hidden));
});

test("2. a message sent with Enter streams a safe markdown reply with its speed", async ({ page }) => {
  await setMaxTokens(page, 8);
  await page.focus("#input");
  await page.keyboard.type("Show me markup");
  await page.keyboard.down("Shift");
  await page.keyboard.press("Enter");
  await page.keyboard.up("Shift");
  await page.keyboard.type("please");
  await page.keyboard.press("Enter");
  await waitReply(page);
  assert.equal(await text(page, ".msg.user .plain"), "Show me markup\nplease");
  assert.equal(await page.$eval("#input", (e) => e.value), "");
  const reply = ".msg.assistant .body";
  // Markdown as elements.
  assert.equal(await text(page, `${reply} h4`), "Result");
  assert.equal(await text(page, `${reply} strong`), "bold");
  assert.equal(await text(page, `${reply} em`), "italic");
  assert.deepEqual(await page.$$eval(`${reply} li`, (es) => es.map((e) => e.textContent)), ["first item", "second item"]);
  assert.equal(await text(page, `${reply} pre code`), 'const ok = 1 < 2 && "<b>";');
  assert.equal(await text(page, `${reply} pre .lang`), "js");
  // The markup is text: nothing made, nothing run, nothing fetched.
  const all = await text(page, reply);
  assert.ok(all.includes("<script>window.__pwned = 1</script>"), all);
  assert.ok(all.includes('<img src=x onerror="window.__pwned = 2">'), all);
  assert.equal(await count(page, "#messages script, #messages img, #messages iframe"), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  // Only the https link is a link.
  assert.deepEqual(await page.$$eval(`${reply} a`, (es) => es.map((e) => [e.textContent, e.href, e.rel])),
                   [["good one", "https://example.com/", "noopener noreferrer"]]);
  assert.ok(all.includes("[bad link](javascript:window.__pwned=3)"), all);
  assert.ok(all.endsWith(" [more] [again] [more]"), all);
  // The reasoning, folded.
  assert.equal(await page.$eval(".msg.assistant details.reasoning", (e) => e.open), false);
  assert.equal(await text(page, ".msg.assistant .reasoning-text"), "Checking the markup.");
  // The speed line: the server's token count, tok/s and TTFT.
  const stats = await text(page, ".msg.assistant .stats");
  assert.match(stats, new RegExp(`^${MODEL} · 8 tokens · [0-9.]+ tok/s · TTFT \\d+ ms · stopped at max_tokens$`), stats);
});

test("3. screenshots: desktop light and dark, phone width without sideways scroll; copy", async ({ page }) => {
  fs.mkdirSync(outDir, { recursive: true });
  await page.screenshot({ path: path.join(outDir, "webui-desktop.png") });
  const lightBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
  const darkBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(lightBg, darkBg);
  await page.screenshot({ path: path.join(outDir, "webui-desktop-dark.png") });
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
  await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  assert.ok(await page.$eval("#toggle-sidebar", (e) => getComputedStyle(e).display !== "none"));
  const sidebarLeft = await page.$eval("#sidebar", (e) => e.getBoundingClientRect().right);
  assert.ok(sidebarLeft <= 0, `the sidebar is folded away at phone width (right edge ${sidebarLeft})`);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1),
            "the page scrolls sideways at phone width");
  await page.screenshot({ path: path.join(outDir, "webui-phone.png") });
  await page.setViewport({ width: 1280, height: 800 });
  // Copy puts the reply's markdown on the clipboard.
  await browser.defaultBrowserContext().overridePermissions(new URL(page.url()).origin,
                                                            ["clipboard-read", "clipboard-write", "clipboard-sanitized-write"]);
  await page.click(".msg.assistant .foot button.copy");
  await page.waitForFunction(() => document.querySelector(".msg.assistant .foot button.copy").textContent === "Copied",
                             { timeout: 3000 });
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.ok(copied.startsWith(ANSWER_START) && copied.includes("<script>window.__pwned = 1</script>"), copied);
});

test("4. a long reply streams in and Esc stops it", async ({ page, server }) => {
  await setMaxTokens(page, 15000);
  await sendMessage(page, "Go on");
  // Seen growing while the stop button shows.
  await page.waitForFunction(() => {
    const last = [...document.querySelectorAll(".msg.assistant")].pop();
    return !document.querySelector("#stop").hidden && (last?.textContent.match(/\[again\]/g) ?? []).length >= 3;
  }, { timeout: 10000 });
  assert.ok(await page.$eval("#send", (e) => e.hidden));
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => document.querySelector("#stop").hidden, { timeout: 5000 });
  const stats = await page.$$eval(".msg.assistant .stats", (es) => es.pop().textContent);
  assert.match(stats, /· stopped$/, stats);
  const before = await page.$$eval(".msg.assistant .body", (es) => es.pop().textContent);
  await new Promise((r) => setTimeout(r, 300));
  const after = await page.$$eval(".msg.assistant .body", (es) => es.pop().textContent);
  assert.equal(after, before, "the reply grew after it was stopped");
  assert.ok(before.length < 15000 * 7, "the reply ran to its end instead of being stopped");
  // The server saw the client leave (its access log line) and cancelled the request.
  for (let i = 0; i < 100 && !/POST \/v1\/chat\/completions 200 .*client=closed/.test(server.stderr()); i++)
    await new Promise((r) => setTimeout(r, 20));
  assert.match(server.stderr(), /POST \/v1\/chat\/completions 200 .*client=closed/);
});

test("5. New chat, then a reload finds both conversations", async ({ page }) => {
  await setMaxTokens(page, 8);
  await page.click("#new-chat");
  assert.equal(await count(page, "#messages .msg"), 0);
  assert.ok(await page.$("#empty"));
  await sendMessage(page, "Second chat");
  await waitReply(page);
  assert.equal(await count(page, "#chats li"), 2);
  await page.reload({ waitUntil: "load" });
  await page.waitForFunction((m) => document.querySelector("#model-name").textContent === m, { timeout: 5000 }, MODEL);
  const titles = await page.$$eval("#chats li .open", (es) => es.map((e) => e.textContent));
  assert.deepEqual(titles, ["Second chat", "Show me markup"]);
  assert.equal(await text(page, "#chats li.active .open"), "Second chat");
  assert.equal(await text(page, ".msg.user .plain"), "Second chat");
  // The first conversation, whole: both turns, the stopped reply's line kept.
  await page.click("#chats li:nth-child(2) .open");
  assert.deepEqual(await page.$$eval(".msg.user .plain", (es) => es.map((e) => e.textContent)),
                   ["Show me markup\nplease", "Go on"]);
  assert.equal(await count(page, ".msg.assistant"), 2);
  assert.equal(await text(page, ".msg.assistant .body h4"), "Result");
  assert.match(await page.$$eval(".msg.assistant .stats", (es) => es.pop().textContent), /· stopped$/);
  // The settings survive the reload too.
  assert.equal(await page.$eval("#max_tokens", (e) => e.value), "8");
});

test("6. tool calls in a streamed reply are shown", async ({ page }) => {
  const chunk = (delta, finish = null) =>
    `data: ${JSON.stringify({ object: "chat.completion.chunk", model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const sse = chunk({ role: "assistant" }) + chunk({ reasoning_content: "Needs the weather." }) +
    chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }] }) +
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Paris"}' } }] }) + chunk({}, "tool_calls") +
    `data: ${JSON.stringify({ object: "chat.completion.chunk", model: MODEL, choices: [],
                              usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } })}\n\ndata: [DONE]\n\n`;
  await page.setRequestInterception(true);
  const handler = (r) => {
    if (r.url().endsWith("/v1/chat/completions")) r.respond({ status: 200, contentType: "text/event-stream", body: sse });
    else r.continue();
  };
  page.on("request", handler);
  try {
    await page.click("#new-chat");
    await sendMessage(page, "Weather in Paris?");
    await waitReply(page);
  } finally {
    page.off("request", handler);
    await page.setRequestInterception(false);
  }
  assert.equal(await text(page, ".msg.assistant .tool-call summary"), "Tool call: get_weather");
  assert.equal(await text(page, ".msg.assistant .tool-call code"), '{\n  "city": "Paris"\n}');
  assert.match(await text(page, ".msg.assistant .stats"), /9 tokens .* · tool_calls$/);
});

test("7. storage in another shape is dropped, not trusted", async ({ page }) => {
  await page.evaluate(() => {
    localStorage.setItem("offgraph.chats", JSON.stringify({ not: "a list" }));
    localStorage.setItem("offgraph.settings", "null");
    localStorage.setItem("offgraph.current", "[1,2]");
  });
  await page.reload({ waitUntil: "load" });
  await page.waitForFunction((m) => document.querySelector("#model-name").textContent === m, { timeout: 5000 }, MODEL);
  assert.equal(await count(page, "#chats li"), 0);
  assert.ok(await page.$("#empty"));
  await page.evaluate(() => {
    localStorage.setItem("offgraph.chats", JSON.stringify([{ id: "a", title: "t", messages: [{ role: "user", content: "kept" }] },
                                                          { id: "b", messages: [{ role: "<img>" }] }, null, 7]));
  });
  await page.reload({ waitUntil: "load" });
  assert.equal(await count(page, "#chats li"), 1);
});

async function keyTest(base) {
  const page = await openPage(base);
  await page.waitForSelector("#key-dialog[open]", { timeout: 5000 });
  assert.match(await text(page, "#key-dialog p"), /API key/);
  await page.type("#key-input", KEY);
  await page.click("#key-save");
  await page.waitForFunction((m) => document.querySelector("#model-name").textContent === m, { timeout: 5000 }, MODEL);
  assert.equal(await page.evaluate(() => JSON.parse(localStorage.getItem("offgraph.apiKey"))), KEY);
  await setMaxTokens(page, 8);
  await sendMessage(page, "With a key");
  await waitReply(page);
  assert.equal(await text(page, ".msg.assistant .body h4"), "Result");
  return page;
}

async function main() {
  const t0 = Date.now();
  const model = path.join(tmp, "webui.gguf");
  // The browser starts while the model is written.
  const launched = puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: path.join(tmp, "profile"),
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  launched.then((b) => { browser = b; }, () => {});
  await promisify(execFile)(path.resolve(ogSynthArg), ["--family", "qwen3", "--format", "gguf", "--out", model,
                                                       "--script", script, "--chat-template", template,
                                                       "--ctx", "16384", "--dtype", "f16",
                                                       // the smallest shape that follows the script: quick to write and load
                                                       "--d-model", "32", "--layers", "1", "--heads", "2",
                                                       "--kv-heads", "1", "--head-dim", "16", "--d-ff", "32"]);
  const [open, keyed] = await Promise.all([startServer(model, ["--max-session-tokens", "16384"]),
                                           startServer(model, ["--api-key", KEY])]);
  browser = await launched;
  console.log(`# model, servers and browser ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  let failed = 0;
  const page = await openPage(open.base);
  const pages = [page];
  for (const t of tests) {
    const t1 = Date.now();
    try {
      await t.fn({ page, server: open });
      console.log(`ok - ${t.name} (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
    } catch (e) {
      ++failed;
      console.log(`FAIL - ${t.name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  const t1 = Date.now();
  try {
    pages.push(await keyTest(keyed.base));
    console.log(`ok - 8. a server with --api-key: the page asks for the key and works with it (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
  } catch (e) {
    ++failed;
    console.log(`FAIL - 8. the API key: ${e && e.stack ? e.stack : e}`);
  }
  for (const p of pages) {
    const violations = await p.evaluate(() => window.__violations);
    const problems = [...p.problems, ...violations.map((v) => `CSP violation: ${v}`)];
    // The keyed server's first /v1/models is a 401, which the console reports.
    const real = problems.filter((s) => !/status of 401/.test(s));
    if (real.length) {
      ++failed;
      console.log(`FAIL - the page reported problems:\n  ${real.join("\n  ")}`);
    }
  }
  const t2 = Date.now();
  await browser.close();
  browser = null;
  console.log(`# browser closed in ${((Date.now() - t2) / 1000).toFixed(1)} s`);
  const t3 = Date.now();
  // Both stopped at once; each must exit as every offgraph command on SIGTERM (128 + 15).
  const codes = await Promise.all(servers.map((s) => {
    const exited = new Promise((resolve) => s.proc.on("exit", (code, signal) => resolve(code ?? signal)));
    s.proc.kill("SIGTERM");
    return exited;
  }));
  codes.forEach((code, i) => {
    if (code !== 143) {
      ++failed;
      console.log(`FAIL - a server exited with ${code} on SIGTERM:\n${servers[i].stderr()}`);
    }
  });
  console.log(`# servers stopped in ${((Date.now() - t3) / 1000).toFixed(1)} s`);
  console.log(`# ${failed ? "FAILED" : "passed"} in ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${outDir}`);
  clearTimeout(watchdog);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(`FAIL: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
