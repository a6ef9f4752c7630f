// offgraph's chat page: talks to this server's OpenAI routes (/v1/models,
// /v1/chat/completions with stream: true). Conversations, settings and the
// API key live in this browser's localStorage. A model's text is never parsed
// as HTML: the small markdown renderer below builds DOM nodes and puts text
// in as text, so markup in a reply is shown, never run.
"use strict";

const KEY_CHATS = "offgraph.chats";
const KEY_CURRENT = "offgraph.current";
const KEY_SETTINGS = "offgraph.settings";
const KEY_API = "offgraph.apiKey";

const $ = (id) => document.getElementById(id);

// ---- DOM helpers -----------------------------------------------------------

// An element with a class and children (strings become text nodes).
function el(tag, cls, ...children) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const c of children) e.append(typeof c === "string" ? document.createTextNode(c) : c);
  return e;
}

// ---- markdown ----------------------------------------------------------------

// Inline spans: `code`, **bold**, *em* / _em_, [text](http(s) link).
const INLINE = /`([^`\n]+)`|\*\*([^\n]+?)\*\*|\*([^*\s][^*\n]*?)\*|\b_([^_\n]+)_\b|\[([^\]\n]+)\]\(([^)\s]+)\)/;

function renderInline(text, parent) {
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) { parent.append(document.createTextNode(rest)); break; }
    if (m.index > 0) parent.append(document.createTextNode(rest.slice(0, m.index)));
    if (m[1] !== undefined) parent.append(el("code", "", m[1]));
    else if (m[2] !== undefined) renderInline(m[2], parent.appendChild(el("strong")));
    else if (m[3] !== undefined) renderInline(m[3], parent.appendChild(el("em")));
    else if (m[4] !== undefined) renderInline(m[4], parent.appendChild(el("em")));
    else if (/^https?:\/\//i.test(m[6])) {
      const a = el("a");
      a.href = m[6];  // only http(s): a javascript: URL never becomes a link
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      renderInline(m[5], a);
      parent.append(a);
    } else {
      parent.append(document.createTextNode(m[0]));
    }
    rest = rest.slice(m.index + m[0].length);
  }
}

function codeBlock(code, lang) {
  const pre = el("pre");
  const bar = el("div", "code-bar", el("span", "lang", lang || "text"));
  bar.append(copyButton(() => code));
  const c = el("code", "", code);
  pre.append(bar, c);
  return pre;
}

// Block structure: fenced code, headings, rules, quotes, lists, paragraphs.
// An unclosed fence (a reply still streaming) runs to the end.
function renderMarkdown(text, parent) {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) renderInline(para.join("\n"), parent.appendChild(el("p")));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
      i++;
      parent.append(codeBlock(body.join("\n"), m[2]));
      continue;
    }
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      flush();
      renderInline(m[2], parent.appendChild(el("h" + Math.min(6, m[1].length + 2))));
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      parent.append(el("hr"));
    } else if (/^\s*>/.test(line)) {
      flush();
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*> ?/, ""));
      renderMarkdown(quoted.join("\n"), parent.appendChild(el("blockquote")));
      continue;
    } else if ((m = /^\s*([-*+]|\d{1,9}[.)])\s+/.exec(line))) {
      flush();
      const ordered = /\d/.test(m[1]);
      const list = el(ordered ? "ol" : "ul");
      if (ordered && parseInt(m[1], 10) !== 1) list.start = parseInt(m[1], 10);
      const item = ordered ? /^\s*\d{1,9}[.)]\s+(.*)$/ : /^\s*[-*+]\s+(.*)$/;
      for (; i < lines.length; i++) {
        const im = item.exec(lines[i]);
        if (im) renderInline(im[1], list.appendChild(el("li")));
        else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) renderInline(" " + lines[i].trim(), list.lastChild);
        else break;
      }
      parent.append(list);
      continue;
    } else if (!line.trim()) {
      flush();
    } else {
      para.push(line);
    }
    i++;
  }
  flush();
}

// ---- clipboard ---------------------------------------------------------------

async function copyText(text) {
  // The Clipboard API needs a secure context (https or localhost); elsewhere
  // the old selection route still works.
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(text); return true; } catch (_) { /* fall through */ }
  }
  const t = el("textarea");
  t.value = text;
  t.setAttribute("readonly", "");
  t.style.position = "fixed";
  t.style.opacity = "0";
  document.body.append(t);
  t.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
  t.remove();
  return ok;
}

function copyButton(getText) {
  const b = el("button", "copy", "Copy");
  b.type = "button";
  b.title = "Copy to the clipboard";
  b.addEventListener("click", async () => {
    const ok = await copyText(getText());
    b.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => { b.textContent = "Copy"; }, 1500);
  });
  return b;
}

// ---- storage -----------------------------------------------------------------

function load(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v ?? fallback;
  } catch (_) {
    return fallback;
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    showError("cannot save to the browser's storage: " + e.message);
  }
}

// Storage written by something else (another version, a hand edit) is
// dropped rather than trusted to have the expected shape.
function loadChats() {
  const v = load(KEY_CHATS, []);
  if (!Array.isArray(v)) return [];
  return v.filter((c) => c && typeof c === "object" && typeof c.id === "string" && Array.isArray(c.messages) &&
                         c.messages.every((m) => m && (m.role === "user" || m.role === "assistant")));
}

function loadSettings() {
  const v = load(KEY_SETTINGS, {});
  const out = { system: "", temperature: "", top_p: "", max_tokens: "" };
  for (const k of Object.keys(out)) if (v && typeof v[k] === "string") out[k] = v[k];
  return out;
}

const state = {
  chats: loadChats(),
  current: load(KEY_CURRENT, null),
  settings: loadSettings(),
  model: null,
  busy: null,  // {controller} while a reply streams
};

function currentChat() {
  return state.chats.find((c) => c.id === state.current) ?? null;
}

function saveChats() {
  save(KEY_CHATS, state.chats);
  save(KEY_CURRENT, state.current);
}

function newChat() {
  if (state.busy) stop();
  state.current = null;  // made when the first message is sent
  saveChats();
  renderAll();
  $("input").focus();
}

// ---- rendering -----------------------------------------------------------------

function fmt(n, digits) {
  return Number.isFinite(n) ? n.toFixed(digits) : "?";
}

function statsLine(s) {
  const parts = [];
  if (s.model) parts.push(s.model);
  if (s.tokens !== undefined) parts.push((s.approx ? "~" : "") + s.tokens + " tokens");
  if (s.tok_s !== undefined) parts.push(fmt(s.tok_s, 1) + " tok/s");
  if (s.ttft_ms !== undefined) parts.push("TTFT " + fmt(s.ttft_ms, 0) + " ms");
  if (s.finish) parts.push(s.finish === "length" ? "stopped at max_tokens" : s.finish === "stopped" ? "stopped" : s.finish);
  return parts.join(" · ");
}

function renderMessage(m, streaming) {
  const box = el("div", "msg " + m.role);
  box.append(el("div", "who", m.role === "user" ? "You" : "Assistant"));
  if (m.reasoning) {
    const d = el("details", "reasoning");
    d.append(el("summary", "", streaming && !m.content ? "Thinking…" : "Reasoning"));
    d.append(el("div", "reasoning-text", m.reasoning));
    box.append(d);
  }
  const body = el("div", "body");
  if (m.role === "user") body.append(el("p", "plain", m.content));
  else renderMarkdown(m.content || "", body);
  box.append(body);
  for (const call of m.tool_calls ?? []) {
    const d = el("details", "tool-call");
    d.open = true;
    d.append(el("summary", "", "Tool call: " + (call.name || "?")));
    let args = call.arguments || "";
    try { args = JSON.stringify(JSON.parse(args), null, 2); } catch (_) { /* partial: as sent */ }
    d.append(el("pre", "", el("code", "", args)));
    box.append(d);
  }
  if (m.role === "assistant") {
    const foot = el("div", "foot");
    foot.append(el("span", "stats", m.stats ? statsLine(m.stats) : streaming ? "…" : ""));
    if (!streaming) foot.append(copyButton(() => m.content || ""));
    box.append(foot);
  }
  return box;
}

function renderMessages() {
  const list = $("messages");
  list.replaceChildren();
  const chat = currentChat();
  if (!chat || !chat.messages.length) {
    list.append(el("p", "", "Send a message to start. Enter sends, Shift+Enter starts a new line, Esc stops a reply."));
    list.lastChild.id = "empty";
    return;
  }
  chat.messages.forEach((m, i) => {
    list.append(renderMessage(m, state.busy && i === chat.messages.length - 1));
  });
}

function renderChats() {
  const ul = $("chats");
  ul.replaceChildren();
  for (const c of [...state.chats].sort((a, b) => b.updated - a.updated)) {
    const li = el("li", c.id === state.current ? "active" : "");
    const open = el("button", "open", c.title || "New chat");
    open.type = "button";
    open.title = c.title;
    open.addEventListener("click", () => {
      if (state.busy) stop();
      state.current = c.id;
      saveChats();
      renderAll();
      document.body.classList.remove("show-sidebar");
    });
    const del = el("button", "delete", "×");
    del.type = "button";
    del.title = "Delete this conversation";
    del.setAttribute("aria-label", "Delete " + (c.title || "conversation"));
    del.addEventListener("click", () => {
      if (state.busy && c.id === state.current) stop();
      state.chats = state.chats.filter((x) => x.id !== c.id);
      if (state.current === c.id) state.current = null;
      saveChats();
      renderAll();
    });
    li.append(open, del);
    ul.append(li);
  }
}

function renderAll() {
  renderChats();
  renderMessages();
  $("send").hidden = !!state.busy;
  $("stop").hidden = !state.busy;
}

let pending = false;
// Redraws the streaming reply at most once a frame.
function scheduleRender() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    const list = $("messages");
    const chat = currentChat();
    if (!chat) return;
    const last = list.lastElementChild;
    const fresh = renderMessage(chat.messages[chat.messages.length - 1], !!state.busy);
    // A reasoning block the user unfolded stays open while the reply streams.
    const was = last?.querySelector("details.reasoning");
    const now = fresh.querySelector("details.reasoning");
    if (was && now) now.open = was.open;
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    if (last && last.classList.contains("assistant")) last.replaceWith(fresh);
    else list.append(fresh);
    if (nearBottom) list.scrollTop = list.scrollHeight;
  });
}

function showError(text) {
  const e = $("error");
  e.textContent = text;
  e.hidden = !text;
}

// ---- the API -------------------------------------------------------------------

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = load(KEY_API, "");
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

// The server's error message from an error response.
async function errorText(res) {
  const text = await res.text().catch(() => "");
  try {
    const j = JSON.parse(text);
    if (j.error) return typeof j.error === "string" ? j.error : j.error.message ?? text;
  } catch (_) { /* not JSON */ }
  return text || res.status + " " + res.statusText;
}

// Asks for the API key; resolves true when one was saved.
function askKey(message) {
  const d = $("key-dialog");
  d.querySelector("p").textContent = message;
  $("key-input").value = "";
  return new Promise((resolve) => {
    const done = (ok) => {
      $("key-save").onclick = $("key-cancel").onclick = d.oncancel = null;
      $("key-input").onkeydown = null;
      if (ok) save(KEY_API, $("key-input").value.trim());
      d.close();
      resolve(ok);
    };
    $("key-save").onclick = () => done(true);
    $("key-cancel").onclick = () => done(false);
    d.oncancel = () => done(false);
    $("key-input").onkeydown = (e) => { if (e.key === "Enter") { e.preventDefault(); done(true); } };
    d.showModal();
    $("key-input").focus();
  });
}

const KEY_PROMPT = "This server needs an API key (serve --api-key). It is kept in this browser only.";

async function fetchModel() {
  let res;
  try {
    res = await fetch("v1/models", { headers: headers() });
  } catch (e) {
    $("model-name").textContent = "server unreachable";
    setTimeout(fetchModel, 3000);
    return;
  }
  if (res.status === 401) {
    $("model-name").textContent = "API key needed";
    if (await askKey(KEY_PROMPT + " " + (await errorText(res)))) return fetchModel();
    return;
  }
  if (res.status === 503) {
    $("model-name").textContent = "loading…";
    setTimeout(fetchModel, 2000);
    return;
  }
  if (!res.ok) {
    $("model-name").textContent = "?";
    showError(await errorText(res));
    return;
  }
  const j = await res.json();
  state.model = j.data?.[0]?.id ?? null;
  $("model-name").textContent = state.model ?? "?";
}

function requestBody(chat) {
  const s = state.settings;
  const messages = [];
  if (s.system.trim()) messages.push({ role: "system", content: s.system });
  for (const m of chat.messages) {
    if (m.role === "user") messages.push({ role: "user", content: m.content });
    else if (m.content) messages.push({ role: "assistant", content: m.content });
  }
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  if (state.model) body.model = state.model;
  const num = (v) => (v === "" || v === null || v === undefined ? undefined : Number(v));
  if (num(s.temperature) !== undefined) body.temperature = num(s.temperature);
  if (num(s.top_p) !== undefined) body.top_p = num(s.top_p);
  if (num(s.max_tokens) !== undefined) body.max_tokens = num(s.max_tokens);
  return body;
}

// Reads Server-Sent Events from a fetch response, calling onData with each
// parsed `data:` JSON until [DONE].
async function readEvents(res, onData) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") return;
        onData(JSON.parse(data));
      }
    }
  }
}

async function send() {
  const input = $("input");
  const text = input.value;
  if (!text.trim() || state.busy) return;
  showError("");
  let chat = currentChat();
  if (!chat) {
    chat = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 6), title: "", messages: [], updated: 0 };
    state.chats.push(chat);
    state.current = chat.id;
  }
  if (!chat.title) chat.title = text.trim().split("\n")[0].slice(0, 60);
  chat.messages.push({ role: "user", content: text });
  chat.updated = Date.now();
  input.value = "";
  saveChats();
  await run(chat);
}

// Streams one assistant reply into `chat` (asking for the key on a 401).
async function run(chat) {
  const reply = { role: "assistant", content: "", reasoning: "", tool_calls: [], stats: null };
  chat.messages.push(reply);
  const controller = new AbortController();
  state.busy = { controller };
  renderAll();
  $("messages").scrollTop = $("messages").scrollHeight;
  const t0 = performance.now();
  let tFirst = 0;
  let deltas = 0;
  let usage = null;
  let finish = null;
  let model = state.model;
  try {
    const res = await fetch("v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(requestBody(chat)), signal: controller.signal });
    if (res.status === 401) {
      chat.messages.pop();
      state.busy = null;
      const again = await askKey(KEY_PROMPT + " " + (await errorText(res)));
      if (again) return run(chat);
      renderAll();
      return;
    }
    if (!res.ok) throw new Error(await errorText(res));
    await readEvents(res, (j) => {
      if (j.model) model = j.model;
      if (j.usage) usage = j.usage;
      const ch = j.choices?.[0];
      if (!ch) return;
      const d = ch.delta ?? {};
      if (d.content || d.reasoning_content || d.tool_calls) {
        if (!tFirst) tFirst = performance.now();
        deltas++;
      }
      if (d.reasoning_content) reply.reasoning += d.reasoning_content;
      if (d.content) reply.content += d.content;
      for (const tc of d.tool_calls ?? []) {
        const call = (reply.tool_calls[tc.index ?? 0] ??= { name: "", arguments: "" });
        if (tc.function?.name) call.name = tc.function.name;
        if (tc.function?.arguments) call.arguments += tc.function.arguments;
      }
      if (ch.finish_reason) finish = ch.finish_reason;
      scheduleRender();
    });
  } catch (e) {
    if (e.name === "AbortError") finish = "stopped";
    else {
      finish = "error";
      showError(e.message);
    }
  }
  const tEnd = performance.now();
  // Speed over the generation itself (first token to last). A short reply can
  // arrive in one network read, which leaves no time to divide by: then over
  // the whole request. The token count is the server's when it sent usage,
  // else the number of deltas (a stopped reply), marked approximate.
  const tokens = usage ? usage.completion_tokens : deltas;
  const stats = { model, tokens, approx: !usage, finish: finish ?? undefined };
  if (tFirst) {
    stats.ttft_ms = tFirst - t0;
    if (tokens > 1 && tEnd - tFirst >= 250) stats.tok_s = (tokens - 1) / ((tEnd - tFirst) / 1000);
    else if (tokens > 0 && tEnd > t0) stats.tok_s = tokens / ((tEnd - t0) / 1000);
  }
  reply.stats = stats;
  if (!reply.tool_calls.length) delete reply.tool_calls;
  if (!reply.reasoning) delete reply.reasoning;
  chat.updated = Date.now();
  state.busy = null;
  saveChats();
  renderAll();
  $("messages").scrollTop = $("messages").scrollHeight;
  $("input").focus();
}

function stop() {
  if (state.busy) state.busy.controller.abort();
}

// ---- settings and start-up -----------------------------------------------------

function bindSettings() {
  for (const name of ["system", "temperature", "top_p", "max_tokens"]) {
    const input = $(name);
    input.value = state.settings[name] ?? "";
    input.addEventListener("input", () => {
      state.settings[name] = input.value;
      save(KEY_SETTINGS, state.settings);
    });
  }
  $("toggle-settings").addEventListener("click", () => {
    const s = $("settings");
    s.hidden = !s.hidden;
    $("toggle-settings").setAttribute("aria-expanded", String(!s.hidden));
  });
  $("forget-key").addEventListener("click", () => {
    localStorage.removeItem(KEY_API);
    $("forget-key").textContent = "Key forgotten";
  });
}

function start() {
  if (!state.chats.some((c) => c.id === state.current)) state.current = null;
  bindSettings();
  $("send").addEventListener("click", send);
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", newChat);
  $("toggle-sidebar").addEventListener("click", () => {
    const shown = document.body.classList.toggle("show-sidebar");
    $("toggle-sidebar").setAttribute("aria-expanded", String(shown));
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && state.busy) {
      e.preventDefault();
      stop();
    }
  });
  renderAll();
  $("messages").scrollTop = $("messages").scrollHeight;
  fetchModel();
  $("input").focus();
}

start();
