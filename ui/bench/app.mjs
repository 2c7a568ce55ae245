// Desktop app benchmark (issue 6), on the real app binary under Xvfb:
//   1. cold start: process spawn → the first view rendered and interactive (the UI calls
//      `ui_ready` after its first paint; ZBLADE_STARTUP_REPORT makes the app write the time);
//   2. idle memory of the tray process (`--hidden`, project open, indexer watching, no model
//      loaded): RSS of the app process itself, and RSS/PSS of its WebKit helper processes;
//   3. a search keystroke → results rendered, typed into the Search view through WebDriver on a
//      project of 100,000 message chunks, next to the engine's own search time for the same
//      request (the ratio is what the app adds: IPC, JSON, Svelte rendering);
//   4. the Chat view's frame rate while a model streams 100 tokens/s into a chat of 2,000
//      messages (a model server on loopback sends one token every 10 ms).
//
// Usage (scripts/bench-app.sh sets these): ZBLADE_APP=… ZBLADE=… node ui/bench/app.mjs [--full]
// Without --full it runs a small smoke version and writes nothing; with --full it rewrites the
// "desktop-app" section of docs/BENCHMARKS.md.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import http from "node:http";
import { remote } from "webdriverio";
import { coldStarts, fmt, idleMemory, machine, mb, quantile, rng, sleep, startDisplay, vocabulary, writeSection } from "./common.mjs";

const full = process.argv.includes("--full");
// --chat: only the chat streaming measure (its own section of docs/BENCHMARKS.md), on the small
// project — the chat it streams into has 2,000 messages either way.
const chatOnly = process.argv.includes("--chat");
const app = process.env.ZBLADE_APP;
const cli = process.env.ZBLADE;
if (!app || !cli) throw new Error("ZBLADE_APP and ZBLADE must name the built binaries");
const repo = new URL("../..", import.meta.url).pathname;
const children = new Set();
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

const MESSAGES = full && !chatOnly ? 100_000 : 2_000;
const PER_CONVERSATION = 10; // 100,000 messages → 10,000 conversations in the list
const STARTS = full ? 7 : 2;
const QUERIES = full ? 20 : 3;
const CHAT_MESSAGES = 2_000;
const STREAM_SECONDS = full || chatOnly ? 10 : 2;

// ---------------------------------------------------------------------------------------------
// A project of MESSAGES synthetic messages (Zipf-distributed vocabulary, deterministic).

function buildProject(root, env) {
  const random = rng(42);
  const { vocab, word } = vocabulary(random);
  const text = (min, max) => {
    const target = min + Math.floor(random() * (max - min));
    const parts = [];
    let length = 0;
    while (length < target) {
      const w = word();
      parts.push(w);
      length += w.length + 1;
    }
    return parts.join(" ");
  };
  mkdirSync(root, { recursive: true });
  execFileSync("git", ["init", "-q"], { cwd: root });
  execFileSync(cli, ["init", "--project", root], { stdio: "ignore", env });
  const staging = mkdtempSync(join(tmpdir(), "zblade-bench-json-"));
  const conversations = MESSAGES / PER_CONVERSATION;
  const batch = 100;
  process.stderr.write(`bench-app: adding ${MESSAGES} messages in ${conversations} conversations …\n`);
  for (let first = 0; first < conversations; first += batch) {
    const files = [];
    for (let c = first; c < Math.min(first + batch, conversations); c++) {
      const messages = Array.from({ length: PER_CONVERSATION }, (_, m) => ({
        role: m % 2 === 0 ? "user" : "assistant",
        content: m % 2 === 0 ? text(40, 400) : text(200, 1500),
      }));
      const file = join(staging, `c${c}.json`);
      writeFileSync(file, JSON.stringify({ title: text(10, 40), messages }));
      files.push(file);
    }
    execFileSync(cli, ["add", "conversation", "--project", root, ...files], { stdio: "ignore", env });
    files.forEach((f) => rmSync(f));
  }
  rmSync(staging, { recursive: true, force: true });
  // What the app's indexer would do on its first start (conversation summaries; no model, so
  // nothing is embedded), done up front so it does not run during the measurements.
  process.stderr.write("bench-app: zblade index …\n");
  execFileSync(cli, ["index", "--project", root], { stdio: "ignore", env });
  // The chat the streaming measure answers into: CHAT_MESSAGES messages, added last (the Chat
  // view lists the newest chats).
  const chat = Array.from({ length: CHAT_MESSAGES }, (_, m) => ({
    role: m % 2 === 0 ? "user" : "assistant",
    content: m % 2 === 0 ? text(40, 200) : text(200, 800),
  }));
  const chatFile = join(root, "..", "chat.json");
  writeFileSync(chatFile, JSON.stringify({ conversation_id: "conv_chat-bench", title: "the long chat", messages: chat }));
  execFileSync(cli, ["add", "conversation", "--project", root, chatFile], { stdio: "ignore", env });
  // Search queries: 1–3 words from vocabulary ranks 100–5,100, as users type them.
  const queries = Array.from({ length: QUERIES }, () => {
    const n = 1 + Math.floor(random() * 3);
    return Array.from({ length: n }, () => vocab[100 + Math.floor(random() ** 2 * 5000)]).join(" ");
  });
  const status = JSON.parse(execFileSync(cli, ["status", "--json", "--project", root], { encoding: "utf8", env }));
  return { queries, status };
}

// ---------------------------------------------------------------------------------------------
// Helpers: the app's environment and settings (Xvfb and process memory: common.mjs).

function appEnv(work, display) {
  return {
    ...process.env,
    DISPLAY: display,
    ZBLADE_CONFIG_DIR: join(work, "config"),
    ZBLADE_MODELS_DIR: join(work, "models"), // empty: no model is loaded (keyword search)
    WEBKIT_DISABLE_COMPOSITING_MODE: "1",
  };
}

/** The app's settings as after the wizard, with `project` as the last one opened (and a chat
 * model at `modelUrl`, on loopback). */
function writeConfig(work, project, modelUrl) {
  mkdirSync(join(work, "config"), { recursive: true });
  const config = {
    wizard_completed: true,
    storage_mode: "local",
    allow_network: false,
    recent_projects: [{ path: project, name: "bench", opened_at: new Date().toISOString() }],
    indexer_paused: false,
    chat_models: [{ id: "stream", label: "Streaming", provider: "openai", base_url: modelUrl, model: "stream", tier: "fast", context_window: 32768, tools: false }],
  };
  writeFileSync(join(work, "config", "app.json"), JSON.stringify(config, null, 2));
}

// ---------------------------------------------------------------------------------------------
// 1. Cold start and 2. idle memory: common.mjs (coldStarts, idleMemory).
// 3. Keystroke → rendered results, through WebDriver in the real window.

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The app on `project` under tauri-driver, as WebdriverIO drives it; `close` ends both. */
async function openApp(work, display, project) {
  const env = appEnv(work, display);
  const port = await freePort();
  const driver = spawn("tauri-driver", ["--port", String(port), "--native-port", String(await freePort())], {
    env,
    stdio: "ignore",
  });
  children.add(driver);
  for (let i = 0; ; i++) {
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => (socket.end(), resolve(true)));
      socket.on("error", () => resolve(false));
    });
    if (open) break;
    if (i > 150) throw new Error("tauri-driver did not start");
    await sleep(100);
  }
  const browser = await remote({
    hostname: "127.0.0.1",
    port,
    logLevel: "error",
    capabilities: { "tauri:options": { application: app, args: [project] } },
  });
  const close = async () => {
    await browser.deleteSession().catch(() => {});
    driver.kill("SIGTERM");
    children.delete(driver);
  };
  return { browser, close };
}

async function keystrokes(work, display, project, queries) {
  const { browser, close } = await openApp(work, display, project);
  try {
    const searchButton = await browser.$('button[data-view="search"]');
    await searchButton.waitForDisplayed({ timeout: 60_000 });
    // Let the indexer finish its start-up pass first (the status bar says "Up to date").
    await browser.waitUntil(async () => /Up to date/.test(await (await browser.$(".statusbar")).getText()), {
      timeout: 300_000,
      interval: 500,
    });
    // Scrolling the conversation list (all of them, virtualized) as fast as a flick: 400 px
    // per frame; the time between frames says whether it stays smooth.
    await (await browser.$('button[data-view="conversations"]')).click();
    await (await browser.$(".vlist")).waitForDisplayed({ timeout: 30_000 });
    await browser.waitUntil(async () => (await browser.$$(".vlist .vrow")).length > 0, { timeout: 60_000 });
    const scroll = await browser.executeAsync((done) => {
      const list = document.querySelector(".vlist");
      const frames = [];
      let last = performance.now();
      let domRows = 0;
      const step = (now) => {
        frames.push(now - last);
        last = now;
        domRows = Math.max(domRows, list.querySelectorAll(".vrow").length);
        list.scrollTop += 400;
        if (frames.length < 400 && list.scrollTop + list.clientHeight < list.scrollHeight - 1) requestAnimationFrame(step);
        else done({ frames: frames.slice(1), domRows, rows: Math.round(list.scrollHeight / 64) });
      };
      requestAnimationFrame(step);
    });
    await searchButton.click();
    const input = await browser.$('[data-testid="search-input"]');
    await input.waitForDisplayed({ timeout: 10_000 });
    await input.click();
    for (const query of queries) {
      for (const ch of query) {
        await browser.keys([ch]);
        await sleep(150); // a quick typist: one key every ~150 ms
      }
      await sleep(600);
      await browser.keys(Array.from(query, () => "Backspace"));
      await sleep(400);
    }
    const timings = await browser.execute(() => window.__zbladeSearchTimings ?? []);
    return { timings, scroll };
  } finally {
    await close();
  }
}

/** A model server on loopback that streams one token every 10 ms for STREAM_SECONDS. */
async function streamingModel() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let sent = 0;
      const total = STREAM_SECONDS * 100;
      const tick = setInterval(() => {
        if (sent++ < total) {
          res.write(`data: ${JSON.stringify({ model: "stream", choices: [{ index: 0, delta: { content: sent % 12 === 0 ? "\n" : "token " } }] })}\n\n`);
        } else {
          clearInterval(tick);
          res.end(`data: ${JSON.stringify({ model: "stream", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`);
        }
      }, 10);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return server;
}

/** Frames drawn while the answer streams into the 2,000-message chat. */
async function chatStreaming(work, display, project) {
  const { browser, close } = await openApp(work, display, project);
  try {
    const chatButton = await browser.$('button[data-view="chat"]');
    await chatButton.waitForDisplayed({ timeout: 60_000 });
    await browser.waitUntil(async () => /Up to date/.test(await (await browser.$(".statusbar")).getText()), { timeout: 300_000, interval: 500 });
    await chatButton.click();
    const pick = await browser.$('[data-testid="chat-pick"]');
    await pick.waitForDisplayed({ timeout: 30_000 });
    await browser.waitUntil(async () => (await browser.$$('[data-testid="chat-pick"] option[value="conv_chat-bench"]')).length === 1, { timeout: 30_000 });
    await pick.selectByAttribute("value", "conv_chat-bench");
    await browser.waitUntil(async () => (await browser.$$('[data-testid="chat-message"]')).length >= CHAT_MESSAGES - 10, { timeout: 120_000, interval: 500 });
    const prompt = await browser.$('[data-testid="chat-prompt"]');
    await prompt.setValue("stream please");
    await browser.keys(["Enter"]);
    // Frames from the first streamed piece to the end of the answer.
    const frames = await browser.executeAsync((done) => {
      const intervals = [];
      let last = 0;
      let streaming = false;
      const step = (now) => {
        const live = document.querySelector('[data-testid="chat-streaming"]');
        if (live) {
          if (streaming) intervals.push(now - last);
          streaming = true;
          last = now;
        } else if (streaming) {
          return done({ intervals });
        }
        if (intervals.length > 5000) return done({ intervals });
        requestAnimationFrame(step);
      };
      requestAnimationFrame(step);
    });
    return frames.intervals;
  } finally {
    await close();
  }
}

// ---------------------------------------------------------------------------------------------


const work = mkdtempSync(join(tmpdir(), "zblade-bench-app-"));
try {
  const project = join(work, "project");
  const { queries, status } = buildProject(project, appEnv(work, process.env.DISPLAY ?? ""));
  const chunks = status.indexed.messages + status.indexed.moments + status.code_chunks;
  const model = await streamingModel();
  writeConfig(work, project, `http://127.0.0.1:${model.address().port}/v1`);
  const display = await startDisplay(children);

  if (chatOnly) {
    process.stderr.write("bench-app: chat streaming …\n");
    const frames = await chatStreaming(work, display, project);
    model.close();
    const fps = 1000 / (frames.reduce((a, b) => a + b, 0) / frames.length);
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repo, encoding: "utf8" }).trim();
    const now = new Date().toISOString().slice(0, 16).replace("T", " ");
    const build = app.includes("/release/") ? "release build" : "debug build";
    const report = `## Desktop app: the Chat view while an answer streams

\`scripts/bench-app.sh --chat\` — ${now} UTC, commit ${commit}, ${machine()}, ${build} of zblade-app, WebKitGTK under Xvfb.

A model server on loopback streams one token every 10 ms (100 tokens/s) for ${STREAM_SECONDS} s into a chat of ${CHAT_MESSAGES} messages (every message rendered, Markdown and chips); the page counts its frames (\`requestAnimationFrame\`) from the first streamed piece to the end of the answer. Pieces are gathered and drawn once per frame.

| measure | zblade-app | target |
|---|---|---|
| frames per second while streaming (${frames.length} frames) | **${fmt(fps)}** | ≥ 30 |
| time between frames p50 / p95 / max | ${fmt(quantile(frames, 0.5))} / ${fmt(quantile(frames, 0.95))} / ${fmt(Math.max(...frames))} ms | ≤ 33.3 ms |
`;
    console.log(report);
    if (full) writeSection("desktop-chat", report);
    children.forEach((c) => c.kill("SIGKILL"));
    rmSync(work, { recursive: true, force: true });
    process.exit(0);
  }

  process.stderr.write("bench-app: cold start …\n");
  const start = await coldStarts({ app, project, env: appEnv(work, display), runs: STARTS, work, children });
  process.stderr.write("bench-app: idle memory …\n");
  const memory = await idleMemory({ app, project, env: appEnv(work, display), settleMs: full ? 20_000 : 6_000, children });
  process.stderr.write("bench-app: keystrokes …\n");
  const { timings, scroll } = await keystrokes(work, display, project, queries);
  if (timings.length === 0) throw new Error("no search was rendered");
  process.stderr.write("bench-app: chat streaming …\n");
  const frames = await chatStreaming(work, display, project);
  model.close();
  if (frames.length < 10) throw new Error(`the streamed answer drew only ${frames.length} frames`);
  const fps = 1000 / (frames.reduce((a, b) => a + b, 0) / frames.length);
  const rendered = timings.map((t) => t.renderedMs);
  const engine = timings.map((t) => t.engineMs);

  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repo, encoding: "utf8" }).trim();
  const now = new Date().toISOString().slice(0, 16).replace("T", " ");
  const build = app.includes("/release/") ? "release build" : "debug build";
  const typed = 2 * queries.reduce((a, q) => a + q.length, 0); // each query typed, then deleted
  const report = `## Desktop app: start, idle memory, scrolling, search as you type, chat streaming

\`scripts/bench-app.sh\` — ${now} UTC, commit ${commit}, ${machine()}, ${build} of zblade-app, WebKitGTK under Xvfb.

Project: ${status.indexed.messages} messages in ${status.indexed.conversations} conversations (synthetic, Zipf vocabulary), ${chunks} chunks; no model installed, so search is keyword-only (BM25 over FTS5) — the semantic benchmark above measures hybrid search at this size without the app.

| measure | zblade-app | engine alone, same run | target |
|---|---|---|---|
| cold start: spawn → first view rendered and interactive, p50 / max of ${STARTS} | ${fmt(quantile(start.wall, 0.5))} / ${fmt(Math.max(...start.wall))} ms (in-process part ${fmt(quantile(start.inApp, 0.5))} ms) | – | ≤ 1500 ms |
| idle in the tray (\`--hidden\`: no window), project open and watched: the app process | RSS ${mb(memory.ownRss)} MB: ${mb(memory.ownAnon)} MB allocated + ${mb(memory.ownFile)} MB mapped code and libraries (PSS ${mb(memory.ownPss)} MB) | – | ≤ 120 MB |
| idle: its WebKit helper processes (${[...new Set(memory.helperNames)].join(", ") || "none: no web view without a window"}) | RSS ${mb(memory.helpersRss)} MB (PSS ${mb(memory.helpersPss)} MB) | – | – |
| scrolling the list of all ${status.indexed.conversations} conversations, 400 px per frame: time between frames p50 / p95 / max (${scroll.frames.length} frames) | ${fmt(quantile(scroll.frames, 0.5))} / ${fmt(quantile(scroll.frames, 0.95))} / ${fmt(Math.max(...scroll.frames))} ms, at most ${scroll.domRows} rows in the DOM | – | smooth (≤ 16.7 ms at 60 Hz) |
| Chat view: a model streams 100 tokens/s (${STREAM_SECONDS} s) into a chat of ${CHAT_MESSAGES} messages: frames per second, and time between frames p50 / p95 / max (${frames.length} frames) | ${fmt(fps)} frames/s; ${fmt(quantile(frames, 0.5))} / ${fmt(quantile(frames, 0.95))} / ${fmt(Math.max(...frames))} ms | – | ≥ 30 frames/s |
| search keystroke → results rendered, p50 / p95 of ${rendered.length} rendered (${queries.length} queries typed and deleted: ${typed} keystrokes, one per 150 ms) | ${fmt(quantile(rendered, 0.5))} / ${fmt(quantile(rendered, 0.95))} ms | ${fmt(quantile(engine, 0.5))} / ${fmt(quantile(engine, 0.95))} ms (the engine's search inside the same request) | ≤ 100 ms |

The keystroke time runs from the input event to the frame after Svelte rendered the results (\`requestAnimationFrame\`); answers overtaken by a newer keystroke are dropped, not rendered, and not counted. The difference to the engine column is IPC, JSON and rendering.
`;
  console.log(report);
  if (full) writeSection("desktop-app", report);
} finally {
  children.forEach((c) => c.kill("SIGKILL"));
  rmSync(work, { recursive: true, force: true });
}
