// End to end: the Chat view in the real app window (WebKitGTK under Xvfb, tauri-driver).
//
// - A real Secret Service (GNOME Keyring on a private D-Bus session) holds the API key that
//   Settings → Models stores; the remote server must receive it, app.json must not hold it.
// - A chat with the repo's tiny GGUF model, run in the app by llama.cpp (nothing leaves), and
//   one with llama-cpp-python's OpenAI-compatible server on loopback serving the same model.
// - A chat with an OpenAI-compatible server on this machine's network address (so it counts as
//   remote): the consent preview blocks the send until accepted; the model calls
//   read_project_file, the app asks, the user allows, the file goes back, the answer streams.
//   That server is scripted: a real one with the tiny model's random words never calls a tool,
//   and cannot be made to break mid-answer — the last turn, which must stay, marked partial.
// - The chat is forked after its first answer from the Chat view, then found by `zblade
//   search` and in Conversations.
//
// Run by scripts/test.sh with the other e2e files (needs ZBLADE_APP, ZBLADE, a built ui/dist,
// gnome-keyring and the tiny GGUF at $ZBLADE_TEST_GGUF).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, createWriteStream } from "node:fs";
import { tmpdir, homedir, networkInterfaces } from "node:os";
import { join } from "node:path";
import http from "node:http";
import { remote } from "webdriverio";
import { startSecretService } from "./secret-service.mjs";
import { freePort, sleep, startTauriDriver, waitForPort } from "./harness.mjs";

const app = process.env.ZBLADE_APP;
const cli = process.env.ZBLADE;
const gguf = process.env.ZBLADE_TEST_GGUF ?? join(homedir(), ".cache/zblade/models/test/tiny-llama.gguf");
const repo = new URL("../..", import.meta.url).pathname;
const out = process.env.ZBLADE_E2E_OUT ?? join(tmpdir(), "zblade-e2e");
mkdirSync(out, { recursive: true });
const SECRET = "sk-e2e-keyring-1234567890";

/** This machine's first non-loopback IPv4 address: an endpoint there is not "on this machine". */
function lanAddress() {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  throw new Error("this machine has no non-loopback IPv4 address for the remote-model test");
}

const sse = (obj) => `data: ${JSON.stringify(obj)}\n\n`;
const delta = (content) => sse({ model: "scripted", choices: [{ index: 0, delta: { content } }] });

test("chat in the app", { timeout: 480_000 }, async (t) => {
  assert.ok(app && cli, "ZBLADE_APP and ZBLADE must name the built binaries");
  const work = mkdtempSync(join(tmpdir(), "zblade-chat-e2e-"));
  const project = join(work, "demo");
  execFileSync("bash", [join(repo, "scripts/demo-project.sh"), project, cli], { stdio: "inherit" });

  const children = [];
  t.after(() => children.forEach((c) => c.kill("SIGTERM")));
  const env = { ...process.env, ZBLADE_CONFIG_DIR: join(work, "config"), ZBLADE_MODELS_DIR: join(work, "models") };
  env.WEBKIT_DISABLE_COMPOSITING_MODE = "1";

  // The tiny GGUF, installed as a local model of this machine.
  execFileSync(cli, ["compressor", "import", gguf, "--name", "tiny"], { cwd: project, env, stdio: "inherit" });

  // A private session bus with GNOME Keyring's Secret Service, unlocked with a test password.
  await startSecretService(env, work, children);

  // A display.
  if (!env.DISPLAY) {
    const display = `:${90 + Math.floor(Math.random() * 100)}`;
    children.push(spawn("Xvfb", [display, "-screen", "0", "1360x860x24", "-nolisten", "tcp"], { stdio: "ignore" }));
    env.DISPLAY = display;
    await sleep(800);
  }

  // The scripted model server on the LAN address: answers from a queue, records requests.
  const requests = [];
  const scripts = [];
  const model = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push({ url: req.url, auth: req.headers.authorization ?? null, body: body ? JSON.parse(body) : null });
      const next = scripts.shift();
      if (!next) return res.writeHead(500).end("{\"error\":{\"message\":\"no script\"}}");
      next(res);
    });
  });
  const host = lanAddress();
  await new Promise((r) => model.listen(0, host, r));
  t.after(() => model.close());
  const modelUrl = `http://${host}:${model.address().port}/v1`;

  // A real OpenAI-compatible server on loopback: llama-cpp-python's, on the same tiny model
  // (the one the proxy's tests use).
  const llamaPort = await freePort();
  const python = process.env.ZBLADE_PYTHON ?? "python3";
  const llamaLog = createWriteStream(join(out, "chat-llama-server.log"));
  const llama = spawn(python, ["-m", "llama_cpp.server", "--model", gguf, "--model_alias", "tiny-llama",
    "--host", "127.0.0.1", "--port", String(llamaPort), "--n_ctx", "2048", "--verbose", "False"], { env });
  llama.stdout.pipe(llamaLog);
  llama.stderr.pipe(llamaLog);
  children.push(llama);

  // The app's settings: the wizard done, network use allowed (the remote model needs it), the
  // tiny model registered twice — in the app and behind llama-cpp-python's server — and tool
  // calls asked about.
  mkdirSync(env.ZBLADE_CONFIG_DIR, { recursive: true });
  const appJson = join(env.ZBLADE_CONFIG_DIR, "app.json");
  writeFileSync(appJson, JSON.stringify({
    wizard_completed: true, storage_mode: "local", allow_network: true, recent_projects: [], indexer_paused: false,
    follow_sources: [], chat_tools: "ask",
    chat_models: [
      { id: "tiny", label: "Tiny (local)", provider: "local", base_url: "", model: "tiny", tier: "fast", context_window: 4096, tools: false },
      { id: "llama-server", label: "Tiny (llama.cpp server)", provider: "openai", base_url: `http://127.0.0.1:${llamaPort}/v1`, model: "tiny-llama", tier: "fast", context_window: 1024, tools: false },
    ],
  }));

  const port = await startTauriDriver(env, join(out, "chat-tauri-driver.log"), children);
  const browser = await remote({
    hostname: "127.0.0.1", port, logLevel: "warn",
    capabilities: { "tauri:options": { application: app, args: [project] } },
  });
  t.after(() => browser.deleteSession().catch(() => {}));
  const shot = async (name) => {
    await sleep(300);
    execFileSync("import", ["-window", "root", join(out, `${name}.png`)], { env });
  };
  const byTest = (id) => browser.$(`[data-testid="${id}"]`);
  const view = async (id) => {
    const button = await browser.$(`button[data-view="${id}"]`);
    await button.waitForDisplayed({ timeout: 30_000 });
    await button.click();
    await sleep(500);
  };
  const ask = async (text) => {
    const prompt = await byTest("chat-prompt");
    await prompt.waitForEnabled({ timeout: 10_000 });
    await prompt.setValue(text);
    await browser.keys(["Enter"]);
  };
  // (WebdriverIO's element arrays map asynchronously: the result is awaited, not Promise.all'd.)
  const texts = async (selector) => {
    const out = [];
    for (const element of await browser.$$(selector)) out.push(await element.getText());
    return out;
  };
  const messages = () => texts('[data-testid="chat-message"]');

  try {
    // 1. Settings → Models: add the remote model with its key (into the keyring).
    await view("settings");
    await (await byTest("chat-model-add")).click();
    await (await byTest("chat-model-provider")).selectByAttribute("value", "openai");
    await (await byTest("chat-model-label")).setValue("Scripted (remote)");
    await (await byTest("chat-model-url")).setValue(modelUrl);
    await (await byTest("chat-model-name")).setValue("scripted");
    await (await byTest("chat-model-tier")).selectByAttribute("value", "balanced");
    await (await byTest("chat-model-key")).setValue(SECRET);
    await (await byTest("chat-model-save")).click();
    await browser.waitUntil(async () => (await browser.$$('[data-testid="chat-model-row"]')).length === 3, { timeout: 10_000 });
    const rows = await texts('[data-testid="chat-model-row"]');
    assert.ok(rows.some((r) => r.includes("Scripted (remote)") && r.includes("key stored")), rows.join("\n"));
    await shot("chat-01-models");
    assert.ok(!readFileSync(appJson, "utf8").includes(SECRET), "the API key is not in app.json");

    // 2. The local model: an answer streams in and the turn is recorded.
    await view("chat");
    await (await byTest("chat-model")).selectByAttribute("value", "tiny");
    await ask("where do we validate tokens?");
    await browser.waitUntil(async () => (await messages()).length === 2, { timeout: 120_000, timeoutMsg: "the local model's turn was not recorded" });
    const local = await messages();
    assert.match(local[0], /where do we validate tokens\?/);
    assert.ok(local[1].replace(/^assistant/, "").trim().length > 0, "the local model answered");
    await shot("chat-02-local");
    assert.equal(requests.length, 0, "a local chat sends nothing");

    // 2b. A real OpenAI-compatible server on loopback: no consent asked (nothing leaves the
    // machine), the answer streams and is recorded.
    await waitForPort(llamaPort, 120_000);
    await (await byTest("chat-new")).click();
    await (await byTest("chat-model")).selectByAttribute("value", "llama-server");
    await ask("how do we sign tokens?");
    // The server generates on the CPU beside the app and tauri-driver; on a busy two-core
    // machine its first answer once took over two minutes (2026-11-28), so it gets four.
    await browser.waitUntil(async () => (await messages()).length === 2, { timeout: 240_000, timeoutMsg: "the llama.cpp server's turn was not recorded" });
    const served = await messages();
    assert.notEqual(await (await byTest("chat-pick")).getValue(), "", "the picker names the open chat");
    assert.match(served[0], /how do we sign tokens\?/);
    assert.ok(served[1].replace(/^assistant/i, "").trim().length > 0, "the server answered");
    await shot("chat-02b-llama-server");

    // 3. The remote model in a new chat: the consent preview comes first, and blocks.
    await (await byTest("chat-new")).click();
    await (await byTest("chat-model")).selectByAttribute("value", "model-3");
    await ask("where do we validate tokens?");
    const consent = await byTest("chat-consent");
    await consent.waitForDisplayed({ timeout: 30_000 });
    const preview = await (await byTest("chat-consent-text")).getText();
    assert.match(preview, /where do we validate tokens\?/);
    await shot("chat-03-consent");
    await sleep(500);
    assert.equal(requests.length, 0, "nothing is sent before the user accepts");

    // 4. Accepted: the model reads src/auth.ts through the tool (asked first), then answers.
    scripts.push((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sse({ model: "scripted", choices: [{ index: 0, delta: { role: "assistant", tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "read_project_file", arguments: "{\"path\":\"src/auth.ts\"}" } }] } }] }));
      res.write(sse({ model: "scripted", choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }));
      res.end("data: [DONE]\n\n");
    });
    scripts.push((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const words = ["Tokens ", "are ", "signed ", "in ", "`generateToken` ", "(src/auth.ts)."];
      let i = 0;
      const tick = setInterval(() => {
        if (i < words.length) res.write(delta(words[i++]));
        else {
          clearInterval(tick);
          res.write(sse({ model: "scripted", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
          res.end("data: [DONE]\n\n");
        }
      }, 80);
    });
    await (await byTest("chat-consent-send")).click();
    const askCard = await byTest("chat-tool-ask");
    await askCard.waitForDisplayed({ timeout: 30_000 });
    assert.match(await askCard.getText(), /read_project_file/);
    await shot("chat-04-tool-ask");
    await (await byTest("chat-tool-allow")).click();
    await browser.waitUntil(async () => (await messages()).some((m) => m.includes("generateToken")), { timeout: 30_000, timeoutMsg: "the remote answer did not arrive" });
    const card = await byTest("chat-tool-card");
    assert.match(await card.getText(), /read_project_file.*bytes/s);
    await shot("chat-05-answered");
    assert.equal(requests.length, 2);
    assert.equal(requests[0].auth, `Bearer ${SECRET}`, "the key came from the keyring");
    const sentBack = requests[1].body.messages.find((m) => m.role === "tool");
    assert.ok(sentBack && sentBack.content.includes("export function generateToken"), "the file went back to the model");
    assert.ok(requests[0].body.tools.some((tool) => tool.function.name === "read_project_file"));

    // 5. A model that errors mid-stream leaves a partial turn, marked as such.
    scripts.push((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(delta("Refresh tokens live in Red"));
      setTimeout(() => res.socket.destroy(), 200);
    });
    await ask("and refresh tokens?");
    await (await byTest("chat-partial")).waitForDisplayed({ timeout: 30_000 });
    assert.ok((await messages()).some((m) => m.includes("Refresh tokens live in Red")), "what arrived is kept");
    await shot("chat-06-partial");
    assert.equal(requests.length, 3, "consent is asked once per chat");

    // 6. Fork the chat after its first answer: the fork is open, with those two messages.
    const forks = await browser.$$('[data-testid="chat-fork"]');
    await forks[1].click();
    await browser.waitUntil(async () => (await messages()).length === 2 && (await (await byTest("chat-pick")).getValue()) !== "", {
      timeout: 10_000, timeoutMsg: "the fork did not open",
    });
    assert.match((await messages())[1], /generateToken/);
    await shot("chat-07-fork");

    // 7. The chat is memory: search finds it, Conversations lists it.
    const found = execFileSync(cli, ["search", "--json", "signed generateToken"], { cwd: project, env, encoding: "utf8" });
    assert.match(found, /conv_chat-/, "search finds the chat");
    const shown = JSON.parse(execFileSync(cli, ["list", "conversations", "--json"], { cwd: project, env, encoding: "utf8" }));
    const chatRows = JSON.stringify(shown);
    assert.ok((chatRows.match(/conv_chat-/g) ?? []).length >= 2, "both chats are conversations");
    await view("conversations");
    await shot("chat-08-conversations");
  } finally {
    await shot("chat-99-last").catch(() => {});
  }
});
