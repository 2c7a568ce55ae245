// The light tray, in the real app under Xvfb: started with `--hidden` the app runs as a tray
// icon without OpenGL (no Mesa, no LLVM mapped — what kept its idle memory over 120 MB), and
// "Open zblade" (here: a second launch) turns the same process into the window shape; closing
// the window turns it back.
//
// Run by scripts/test.sh (needs ZBLADE_APP, ZBLADE and a built ui/dist).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const app = process.env.ZBLADE_APP;
const cli = process.env.ZBLADE;
const repo = new URL("../..", import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const environ = (pid) =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
const mapped = (pid) => readFileSync(`/proc/${pid}/maps`, "utf8");

async function until(what, check, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (check()) return;
    } catch {
      // the process is between two images
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

test("the tray runs light and becomes the window on demand", { timeout: 120_000 }, async (t) => {
  assert.ok(app && cli, "ZBLADE_APP and ZBLADE must name the built binaries");
  const work = mkdtempSync(join(tmpdir(), "zblade-tray-"));
  const project = join(work, "demo");
  execFileSync("bash", [join(repo, "scripts/demo-project.sh"), project, cli], { stdio: "ignore" });
  mkdirSync(join(work, "config"));
  writeFileSync(
    join(work, "config", "app.json"),
    JSON.stringify({
      wizard_completed: true,
      storage_mode: "local",
      allow_network: false,
      recent_projects: [{ path: project, name: "demo", opened_at: new Date().toISOString() }],
      indexer_paused: false,
    }),
  );
  const children = [];
  t.after(() => children.forEach((c) => c.kill("SIGKILL")));
  const display = `:${200 + Math.floor(Math.random() * 100)}`;
  children.push(spawn("Xvfb", [display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"], { stdio: "ignore" }));
  await sleep(800);
  const env = { ...process.env, DISPLAY: display, ZBLADE_CONFIG_DIR: join(work, "config"), WEBKIT_DISABLE_COMPOSITING_MODE: "1" };
  delete env.GDK_GL;
  delete env.ZBLADE_LIGHT_TRAY;

  const tray = spawn(app, ["--hidden", project], { env, stdio: "ignore" });
  children.push(tray);
  // It restarts itself (same pid) in the light shape, then opens the project.
  await until("the light tray shape", () => environ(tray.pid).ZBLADE_LIGHT_TRAY !== undefined);
  assert.equal(environ(tray.pid).GDK_GL, "disable");
  await sleep(4000); // tray built, project opened, indexer running
  const maps = mapped(tray.pid);
  assert.doesNotMatch(maps, /dri\/|libLLVM/, "the tray shape must not load OpenGL drivers");
  assert.equal(tray.exitCode, null, "the tray is running");

  // "Open zblade": a second launch hands over; the tray process becomes the window shape.
  const second = spawn(app, [], { env, stdio: "ignore" });
  const code = await new Promise((resolve) => second.once("exit", resolve));
  assert.equal(code, 0, "the second launch hands over and exits");
  await until("the window shape", () => environ(tray.pid).ZBLADE_LIGHT_TRAY === undefined);
  assert.equal(environ(tray.pid).GDK_GL, undefined, "the window gets OpenGL back");
  await until("a zblade window", () => /"zblade"/.test(execFileSync("xwininfo", ["-root", "-tree"], { env, encoding: "utf8" })));
  assert.equal(tray.exitCode, null, "same process, still running");
  await sleep(3000); // the web view loads and the indexer starts again

  // Closing the window (what a window manager sends when the user clicks ×): the same
  // process goes back to the light tray shape, and its window is gone.
  const closer = join(work, "close-window");
  execFileSync("cc", [join(repo, "ui/e2e/close-window.c"), "-o", closer, "-lX11"]);
  execFileSync(closer, ["zblade"], { env });
  await until("the tray shape again", () => environ(tray.pid).ZBLADE_LIGHT_TRAY !== undefined);
  await sleep(3000);
  assert.doesNotMatch(execFileSync("xwininfo", ["-root", "-tree"], { env, encoding: "utf8" }), /"zblade"/);
  assert.doesNotMatch(mapped(tray.pid), /dri\/|libLLVM/);
  assert.equal(tray.exitCode, null, "still running, in the tray");
});
