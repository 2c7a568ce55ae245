// End-to-end journey in the real app window: WebKitGTK under Xvfb, driven through tauri-driver
// and WebKitWebDriver with WebdriverIO. First-run wizard → open the fixture project → search →
// open a conversation → the test edits the referenced file on disk → the chip's status changes
// without a reload; then every other view, a folder archive (set up, pushed, restored by the CLI), the migration wizard against a real sync server, and Settings → Team inviting a teammate. A screenshot of each step goes to $ZBLADE_E2E_OUT.
//
// Also proves the privacy promise: a counting HTTP server stands in for the model hub, and it
// must see no request at all before the user allows network use, and one after.
//
// Run by scripts/test.sh (needs ZBLADE_APP, ZBLADE, ZBLADE_SERVER and a built ui/dist).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import http from "node:http";
import { remote } from "webdriverio";
import { startSecretService } from "./secret-service.mjs";
import { freePort, sleep, startTauriDriver, waitForPort } from "./harness.mjs";

const app = process.env.ZBLADE_APP;
const cli = process.env.ZBLADE;
const server = process.env.ZBLADE_SERVER;
const repo = new URL("../..", import.meta.url).pathname;
const out = process.env.ZBLADE_E2E_OUT ?? join(tmpdir(), "zblade-e2e");
mkdirSync(out, { recursive: true });

test("desktop journey", { timeout: 240_000 }, async (t) => {
  assert.ok(app && cli && server, "ZBLADE_APP, ZBLADE and ZBLADE_SERVER must name the built binaries");
  const work = mkdtempSync(join(tmpdir(), "zblade-e2e-"));
  const project = join(work, "demo");
  execFileSync("bash", [join(repo, "scripts/demo-project.sh"), project, cli], { stdio: "inherit" });

  const children = [];
  t.after(() => children.forEach((c) => c.kill("SIGTERM")));

  // A display: Xvfb unless one is given.
  const env = { ...process.env };
  if (!env.DISPLAY) {
    const display = `:${90 + Math.floor(Math.random() * 100)}`;
    const xvfb = spawn("Xvfb", [display, "-screen", "0", "1360x860x24", "-nolisten", "tcp"], { stdio: "ignore" });
    children.push(xvfb);
    env.DISPLAY = display;
    await sleep(800);
  }

  // The stand-in model hub, counting every request it gets.
  const requests = [];
  const hub = http.createServer((req, res) => { requests.push(req.url); res.writeHead(404).end(); });
  await new Promise((r) => hub.listen(0, "127.0.0.1", r));
  t.after(() => hub.close());

  env.ZBLADE_CONFIG_DIR = join(work, "config");
  // No conversation model installed (downloads are offered); only the code model that ships
  // in the repository, as setup installs it.
  env.ZBLADE_MODELS_DIR = join(work, "models");
  cpSync(join(repo, "models/zblade-code-v2"), join(work, "models/zblade-code-v2"), { recursive: true });
  env.ZBLADE_MODEL_HUB = `http://127.0.0.1:${hub.address().port}`;
  env.WEBKIT_DISABLE_COMPOSITING_MODE = "1";
  // A Claude Code store holding one session recorded in the demo project (the importers'
  // fixture); the wizard is asked to follow Claude Code, so the tray imports it.
  env.CLAUDE_CONFIG_DIR = join(work, "claude");
  const fixture = readFileSync(join(repo, "crates/zblade-import/tests/fixtures/claude/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl"), "utf8");
  mkdirSync(join(work, "claude/projects/-demo"), { recursive: true });
  writeFileSync(
    join(work, "claude/projects/-demo/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl"),
    fixture.replaceAll("__ROOT__", realpathSync(project)),
  );
  // The model proxy (step 7d) listens on a free port and forwards to a stand-in provider that
  // answers every chat completion with one fixed message.
  const providerRequests = [];
  const provider = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      providerRequests.push(JSON.parse(body));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        id: "chatcmpl-e2e", object: "chat.completion", model: "gpt-4o",
        choices: [{ index: 0, message: { role: "assistant", content: "Answered through the proxy." }, finish_reason: "stop" }],
      }));
    });
  });
  await new Promise((r) => provider.listen(0, "127.0.0.1", r));
  t.after(() => provider.close());
  const proxyPort = await freePort();
  const settingsFile = join(project, ".zblade/config/settings.json");
  const projectSettings = JSON.parse(readFileSync(settingsFile, "utf8"));
  projectSettings.proxy = { listen: `127.0.0.1:${proxyPort}`, openai_upstream: `http://127.0.0.1:${provider.address().port}` };
  writeFileSync(settingsFile, JSON.stringify(projectSettings, null, 2));
  // A private session bus with GNOME Keyring's Secret Service (the archive's background push
  // keeps its master key there), and a background push every 2 s instead of every minute.
  await startSecretService(env, work, children);
  env.ZBLADE_ARCHIVE_PUSH_SECONDS = "2";
  // Turning network use on asks in a native GTK dialog, which WebDriver cannot click: the app
  // answers its own confirmations yes in this run (a page cannot set this; see guard.rs).
  env.ZBLADE_TEST_ANSWER_DIALOGS = "yes";
  const port = await startTauriDriver(env, join(out, "tauri-driver.log"), children);

  const browser = await remote({
    hostname: "127.0.0.1",
    port,
    logLevel: "warn",
    capabilities: { "tauri:options": { application: app } },
  });
  t.after(() => browser.deleteSession().catch(() => {}));
  // Screenshots of the whole X display with ImageMagick: WebKitWebDriver's own screenshot
  // command hangs under Xvfb.
  const shot = async (name) => {
    await sleep(300); // let the last change paint
    execFileSync("import", ["-window", "root", join(out, `${name}.png`)], { env });
  };
  const byTest = (id) => browser.$(`[data-testid="${id}"]`);
  try {

  // 1. First run: the privacy wizard comes before anything else.
  await (await byTest("wizard-next")).waitForDisplayed({ timeout: 30_000 });
  await shot("01-wizard");
  await (await byTest("wizard-next")).click();
  await (await byTest("wizard-next")).click();
  const allow = await byTest("allow-network");
  assert.equal(await allow.isSelected(), false, "network use is off by default");
  await shot("02-wizard-network");
  await (await byTest("wizard-next")).click();
  const agent = await byTest("wizard-agent-claude-code");
  await agent.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await agent.isSelected(), false, "no agent is imported from by default");
  await agent.click();
  await shot("02b-wizard-agents");
  await (await byTest("wizard-finish")).click();

  // 2. Open the fixture project by path.
  const pathInput = await byTest("project-path");
  await pathInput.waitForDisplayed({ timeout: 10_000 });
  await shot("03-projects");
  await pathInput.setValue(project);
  await (await byTest("project-open")).click();
  const row = await byTest("conversation-row");
  await row.waitForDisplayed({ timeout: 15_000 });
  await shot("04-conversations");

  // 3. Search from anywhere with Ctrl-K, open the hit.
  await browser.keys(["Control", "k"]);
  const palette = await byTest("palette-input");
  await palette.waitForDisplayed({ timeout: 5_000 });
  await palette.setValue("refresh token");
  await browser.waitUntil(async () => (await browser.$$(".palette-results button")).length > 0, { timeout: 10_000 });
  await shot("05-palette");
  await browser.keys(["Enter"]);

  // 4. The conversation, with its reference chips.
  const detail = await byTest("conversation-detail");
  await detail.waitForDisplayed({ timeout: 10_000 });
  const chip = await browser.$('[data-testid="ref-chip"][data-key$="/0"]');
  await chip.waitForDisplayed({ timeout: 10_000 });
  await browser.waitUntil(async () => (await chip.getAttribute("data-status")) === "ok", {
    timeout: 20_000,
    timeoutMsg: "the chip never showed ok",
  });
  await chip.click();
  await (await byTest("ref-code")).waitForDisplayed({ timeout: 10_000 });
  await shot("06-conversation");

  // 5. The code moves on disk; the chip follows without a reload.
  const file = join(project, "src/auth.ts");
  writeFileSync(file, "// Auth helpers\n// (see docs/auth.md)\n" + readFileSync(file, "utf8"));
  await browser.waitUntil(
    async () => (await browser.$('[data-testid="ref-chip"][data-key$="/0"]').getAttribute("data-status")) === "shifted",
    { timeout: 20_000, interval: 200, timeoutMsg: "the chip did not change to shifted after the file was edited" },
  );
  await shot("07-chip-shifted");

  // 6. The other views.
  const view = async (id) => {
    await (await browser.$(`button[data-view="${id}"]`)).click();
    await sleep(700);
  };
  await view("search");
  const search = await byTest("search-input");
  await search.setValue("cache eviction");
  await browser.waitUntil(async () => (await browser.$$('[data-testid="search-hit"]')).length > 0, { timeout: 10_000 });
  await shot("08-search");
  // 6b. The conversation graph: fork from a message, bring messages in, prompt history.
  await view("conversations");
  await (await byTest("conversation-row")).click();
  await (await byTest("conversation-detail")).waitForDisplayed({ timeout: 10_000 });
  const parentTitle = await (await browser.$('[data-testid="conversation-detail"] h1')).getText();
  const forkButtons = await browser.$$('[data-testid="fork-here"]');
  assert.ok(forkButtons.length >= 2, "every message offers Fork from here");
  await forkButtons[1].click();
  const strip = await byTest("lineage-strip");
  await strip.waitForDisplayed({ timeout: 10_000 });
  assert.match(await strip.getText(), /Forked from .* after message 2/);
  assert.equal((await browser.$$('[data-testid="fork-here"]')).length, 2, "the fork holds the first two messages");
  await shot("08b-forked");
  await (await byTest("bring-in")).click();
  const source = await byTest("bring-in-source");
  await source.waitForDisplayed({ timeout: 5_000 });
  // Another conversation than the parent (whose first messages the fork already holds).
  let other = null;
  for (const option of await source.$$("option")) {
    const value = await option.getAttribute("value");
    if (value && !(await option.getText()).startsWith(parentTitle)) {
      other = value;
      break;
    }
  }
  assert.ok(other, "the picker offers the other conversation");
  await source.selectByAttribute("value", other);
  await browser.waitUntil(async () => (await browser.$$('[data-testid="bring-in-message"]')).length > 1, { timeout: 10_000 });
  const boxes = await browser.$$('[data-testid="bring-in-message"]');
  await boxes[0].click();
  await boxes[1].click();
  await shot("08c-bring-in");
  await (await byTest("bring-in-merge")).click();
  await browser.waitUntil(async () => (await browser.$$('[data-testid="fork-here"]')).length === 4, {
    timeout: 10_000,
    timeoutMsg: "the two messages were not brought in",
  });
  assert.match(await (await byTest("lineage-strip")).getText(), /Merged 2 from/);
  await shot("08d-merged");
  await view("history");
  const history = await byTest("history-search");
  await history.waitForDisplayed({ timeout: 5_000 });
  await browser.waitUntil(async () => (await browser.$$('[data-testid="history-row"]')).length > 0, { timeout: 10_000 });
  await history.setValue("refre");
  await browser.waitUntil(
    async () => {
      const rows = await browser.$$('[data-testid="history-row"]');
      return rows.length > 0 && /refresh/i.test(await rows[0].getText());
    },
    { timeout: 10_000, timeoutMsg: "history search found no prompt about refreshing" },
  );
  await shot("08e-history");
  await view("moments");
  await shot("09-moments");
  await view("context");
  await (await byTest("context-query")).setValue("how do we refresh tokens?");
  await (await byTest("context-run")).click();
  await (await byTest("token-meter")).waitForDisplayed({ timeout: 20_000 });
  await shot("10-context");
  await view("health");
  await browser.waitUntil(async () => (await browser.$$(".stat")).length > 0, { timeout: 10_000 });
  await shot("11-health");

  // 7. Settings lists the shipped code model as the one code search uses.
  await view("settings");
  await (await byTest("code-model-badge")).waitForDisplayed({ timeout: 10_000 });
  // Privacy: a download before consent is refused without a single request.
  const download = await browser.$('[data-testid="download-model"]');
  await download.waitForDisplayed({ timeout: 10_000 });
  await download.click();
  const toast = await byTest("toast");
  await toast.waitForDisplayed({ timeout: 10_000 });
  assert.match(await toast.getText(), /not allowed/);
  await shot("12-settings-consent");
  assert.deepEqual(requests, [], "no request may reach the network before consent");
  // After consent, the same click does reach the (stand-in) hub.
  await (await byTest("settings-allow-network")).click();
  await sleep(500);
  await (await browser.$('[data-testid="download-model"]')).click();
  await browser.waitUntil(async () => requests.length > 0, { timeout: 15_000, timeoutMsg: "no request after consent" });
  await shot("13-settings-after-consent");

  // 7a. Indexer: the idle minutes before the search models are let go, saved in the project's
  // settings (0 keeps them loaded).
  const minutes = await byTest("release-models-minutes");
  await minutes.scrollIntoView();
  await minutes.setValue("0");
  await (await byTest("release-models-save")).click();
  await browser.waitUntil(
    async () => JSON.parse(readFileSync(settingsFile, "utf8")).search.release_models_after_minutes === 0,
    { timeout: 10_000, timeoutMsg: "the idle minutes were not saved in the project's settings" },
  );
  await shot("13a-settings-release-models");

  // 7b. Sources: Claude Code, ticked in the wizard, is followed, and the tray imported its
  // session of this project while we looked at other views.
  await (await byTest("settings-sources")).scrollIntoView();
  await browser.waitUntil(async () => (await byTest("follow-claude-code")).isSelected(), {
    timeout: 10_000,
    timeoutMsg: "Claude Code is not followed after the wizard",
  });
  await shot("13b-settings-sources");
  await browser.waitUntil(
    async () => {
      await view("conversations");
      return (await browser.$$('[data-testid="conversation-source"]')).length > 0;
    },
    { timeout: 90_000, interval: 3_000, timeoutMsg: "the followed Claude Code session never appeared" },
  );
  await shot("13c-imported-conversation");
  await view("settings");

  // 7c. Agents: one click adds zblade's MCP server to Cursor's config for this project, merged
  // into the file and naming the zblade CLI beside the app.
  await (await byTest("settings-agents")).scrollIntoView();
  await (await byTest("mcp-install-cursor")).click();
  await (await byTest("mcp-configured-cursor")).waitForDisplayed({ timeout: 10_000 });
  await shot("13d-settings-agents");
  const cursorConfig = JSON.parse(readFileSync(join(realpathSync(project), ".cursor/mcp.json"), "utf8"));
  assert.deepEqual(cursorConfig.mcpServers.zblade.args.slice(0, 2), ["mcp", "--project"]);
  assert.match(cursorConfig.mcpServers.zblade.command, /zblade$/);
  // ... and another adds Claude Code's hooks to the project's settings, as `zblade hooks
  // install claude-code` does; the row then says hooks are wired.
  await (await byTest("hooks-install-claude-code")).click();
  await (await byTest("hooks-wired-claude-code")).waitForDisplayed({ timeout: 10_000 });
  const claudeSettings = JSON.parse(readFileSync(join(realpathSync(project), ".claude/settings.json"), "utf8"));
  assert.match(claudeSettings.hooks.UserPromptSubmit[0].hooks[0].command, /zblade hook prompt$/);
  await shot("13e-settings-agents-hooks");

  // 7d. Proxy: start it, send it a request as an OpenAI client would, see the live counts; the
  // provider got the project's memory in a system message, and the turn is recorded.
  await (await byTest("settings-proxy")).scrollIntoView();
  await (await byTest("proxy-start")).click();
  const proxyAddress = await byTest("proxy-address");
  await proxyAddress.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await proxyAddress.getText(), `http://127.0.0.1:${proxyPort}`);
  const proxied = await fetch(`http://127.0.0.1:${proxyPort}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-e2e" },
    body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "How does the token refresh work?" }] }),
  });
  assert.equal(proxied.status, 200);
  assert.equal((await proxied.json()).choices[0].message.content, "Answered through the proxy.");
  await browser.waitUntil(async () => (await (await byTest("proxy-counts")).getText()).startsWith("1 request(s) · 1 with memory · 1 turn(s) recorded"), {
    timeout: 15_000,
    timeoutMsg: "the proxy's live counts did not show the request",
  });
  assert.equal(providerRequests[0].messages[0].role, "system");
  assert.match(providerRequests[0].messages[0].content, /zblade-memory/);
  await shot("13e-settings-proxy");
  await (await byTest("proxy-stop")).click();
  await (await byTest("proxy-start")).waitForDisplayed({ timeout: 10_000 });

  // 7e. Archive: set up a folder archive, push with the passphrase, see the status; then the
  // CLI restores that folder's archive elsewhere, byte for byte, from the vault and passphrase.
  const archiveDir = join(work, "archive");
  const passphrase = "e2e archive passphrase";
  await (await byTest("settings-archive")).scrollIntoView();
  await (await byTest("archive-dir")).setValue(archiveDir);
  await (await byTest("archive-passphrase")).setValue(passphrase);
  await (await byTest("archive-passphrase-again")).setValue(passphrase);
  await (await byTest("archive-setup")).click();
  await (await byTest("archive-status")).waitForDisplayed({ timeout: 30_000 });
  await (await byTest("archive-passphrase")).setValue(passphrase);
  await (await byTest("archive-push")).click();
  const pushedText = await byTest("archive-result");
  await browser.waitUntil(async () => /^Pushed [1-9]\d* file\(s\)/.test(await pushedText.getText()), {
    timeout: 60_000,
    timeoutMsg: "the archive push did not report",
  });
  await browser.waitUntil(async () => /0 file\(s\) waiting .* [1-9]\d* confirmed/.test(await (await byTest("archive-status")).getText()), {
    timeout: 15_000,
    timeoutMsg: "the archive status did not show the push",
  });
  await shot("13f-settings-archive");

  // Background push: the passphrase puts the key in the keyring; a conversation the CLI adds
  // is pushed by the app on its own; then it is forgotten for good from the card, with no
  // passphrase typed (the keyring's key).
  await (await byTest("archive-background")).click();
  await browser.waitUntil(async () => (await (await byTest("archive-background")).isSelected()), {
    timeout: 15_000,
    timeoutMsg: "background push did not turn on",
  });
  const added = join(work, "archived-later.json");
  writeFileSync(added, JSON.stringify({
    conversation_id: "conv_e2e_archived_later",
    title: "Pushed in the background",
    messages: [{ role: "user", content: "Where do the archive's batches go?" }, { role: "assistant", content: "Into the folder archive." }],
  }));
  execFileSync(cli, ["add", "conversation", added], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
  await browser.waitUntil(async () => {
    const line = await byTest("archive-background-status");
    return (await line.isExisting()) && /pushed [1-9]\d* file\(s\)/.test(await line.getText());
  }, { timeout: 60_000, timeoutMsg: "the background push did not push the new conversation" });
  await (await byTest("archive-passphrase")).clearValue();
  await (await byTest("archive-forget-section")).click();
  await (await byTest("archive-forget-ids")).setValue("conv_e2e_archived_later");
  await (await byTest("archive-forget-sure")).click();
  await shot("13g-settings-archive-background");
  await (await byTest("archive-forget")).click();
  await browser.waitUntil(async () => /^Forgotten for good: [1-9]\d* batch/.test(await (await byTest("archive-result")).getText()), {
    timeout: 60_000,
    timeoutMsg: "the forget did not report",
  });
  assert.ok(!existsSync(join(project, ".zblade/artifacts/conversations/conv_e2e_archived_later.json")));

  // The CLI restores the folder's archive elsewhere from the vault and passphrase: every
  // conversation byte for byte, and the forgotten one nowhere.
  const restoredInto = join(work, "restored");
  execFileSync(cli, ["archive", "restore", "--into", restoredInto, "--from", archiveDir, "--no-index"], {
    env: { ...env, ZBLADE_ARCHIVE_PASSPHRASE: passphrase },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const conversationsDir = ".zblade/artifacts/conversations";
  assert.deepEqual(readdirSync(join(restoredInto, conversationsDir)).sort(), readdirSync(join(project, conversationsDir)).sort());
  for (const name of readdirSync(join(project, conversationsDir))) {
    assert.deepEqual(readFileSync(join(restoredInto, conversationsDir, name)), readFileSync(join(project, conversationsDir, name)), name);
  }

  // 8. The migration wizard, against a real zblade-server: test the server, see the plan,
  // migrate, see the verification.
  const db = join(work, "server.db");
  const token = JSON.parse(execFileSync(server, ["user", "add", "e2e", "--db", db, "--json"], { encoding: "utf8" })).token;
  const serverPort = await freePort();
  const sync = spawn(server, ["serve", "--db", db, "--listen", `127.0.0.1:${serverPort}`], { stdio: "ignore" });
  children.push(sync);
  await waitForPort(serverPort, 15_000);
  const url = await byTest("migration-url");
  await url.scrollIntoView();
  await url.setValue(`http://127.0.0.1:${serverPort}`);
  await (await byTest("migration-token")).setValue(token);
  await (await byTest("migration-test")).click();
  await browser.waitUntil(async () => (await (await byTest("migration-wizard")).getText()).includes("Connected as e2e"), {
    timeout: 15_000,
    timeoutMsg: "the server test did not say who is connected",
  });
  await (await byTest("migration-plan")).click();
  const planText = await byTest("migration-plan-text");
  await planText.waitForDisplayed({ timeout: 15_000 });
  assert.match(await planText.getText(), /[1-9]\d* conversation\(s\)/);
  await shot("14-migration-plan");
  await (await byTest("migration-start")).click();
  const migrated = await byTest("migration-result");
  await migrated.waitForDisplayed({ timeout: 60_000 });
  assert.match(await migrated.getText(), /verified at the destination; storage is now server/);
  await shot("15-migration-done");

  // 8b. Settings → Team, now that the project is on the server: invite a second user of the
  // server as a reader; the members list shows the creator and the pending invitation.
  execFileSync(server, ["user", "add", "mate", "--db", db, "--json"], { encoding: "utf8" });
  const team = await byTest("team-members");
  await team.waitForDisplayed({ timeout: 30_000 });
  await browser.waitUntil(async () => (await team.getText()).includes("e2e"), {
    timeout: 30_000,
    timeoutMsg: "the Team card did not list the project's creator",
  });
  await (await byTest("team-invitee")).setValue("mate");
  await (await byTest("team-invite")).click();
  await browser.waitUntil(async () => /mate[\s\S]*invited, not joined yet/.test(await team.getText()), {
    timeout: 30_000,
    timeoutMsg: "the invited member did not appear",
  });
  await (await byTest("settings-team")).scrollIntoView();
  await shot("15b-settings-team");

  // 9. One app per user: a second launch hands over to the running one and exits.
  const second = spawn(app, [], { env, stdio: ["ignore", "ignore", "pipe"] });
  let said = "";
  second.stderr.on("data", (d) => (said += d));
  const code = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("a second launch kept running")), 15_000);
    second.once("exit", (c) => (clearTimeout(timer), resolve(c)));
  });
  assert.equal(code, 0);
  assert.match(said, /already running/);
  } catch (e) {
    // What the window showed when the journey failed.
    await shot("failure").catch(() => {});
    throw e;
  }
});
