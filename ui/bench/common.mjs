// What the app's benchmarks share (ui/bench/app.mjs, ui/bench/installed.mjs): a deterministic
// text generator, process memory from /proc, the app's cold start and idle memory under Xvfb,
// quantiles, and the report's machine line and section writer for docs/BENCHMARKS.md.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";

const repo = new URL("../..", import.meta.url).pathname;

export function rng(seed) {
  let s = BigInt(seed);
  return () => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    return Number(s >> 11n) / 2 ** 53;
  };
}

export const WORDS = (
  "token refresh jwt cookie session cache redis postgres sqlite index migration schema query latency timeout " +
  "retry backoff queue worker thread async await future tokio mutex lock deadlock panic error result option " +
  "trait struct enum closure iterator vector hashmap serde json config deploy build release test bench fixture " +
  "coverage lint format compile linker crate module function method variable lifetime borrow reference heap " +
  "stack allocation memory leak profiler trace span metric alert endpoint route handler middleware auth oauth " +
  "password hash salt encrypt signature certificate websocket client server request response header payload " +
  "upload download stream buffer chunk parse serialize validate sanitize the of and to in is it that for on with"
).split(" ");

export function vocabulary(random) {
  const syllables = ["ka", "lo", "mi", "ter", "zan", "por", "vek", "shi", "dra", "nu", "bel", "cor", "fin", "gra"];
  const vocab = [...WORDS];
  while (vocab.length < 20_000) {
    const n = 2 + Math.floor(random() * 3);
    vocab.push(Array.from({ length: n }, () => syllables[Math.floor(random() * syllables.length)]).join(""));
  }
  // Zipf(1.07) cumulative weights.
  const weights = vocab.map((_, i) => 1 / (i + 1) ** 1.07);
  const total = weights.reduce((a, b) => a + b, 0);
  let acc = 0;
  const cdf = weights.map((w) => (acc += w / total));
  const word = () => {
    const x = random();
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return vocab[lo];
  };
  return { vocab, word };
}

export function descendants(pid) {
  const parent = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parent.set(Number(entry), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const found = [];
  let frontier = [pid];
  while (frontier.length) {
    const next = [];
    for (const [child, ppid] of parent) if (frontier.includes(ppid)) next.push(child);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** RSS and PSS (kB) of one process, and its name. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  const rss = field("VmRSS");
  const anon = field("RssAnon"); // heap, stacks: what the process allocated
  const file = field("RssFile"); // mapped code and data of the binary and its libraries
  const name = /Name:\s+(\S+)/.exec(status)?.[1] ?? "?";
  let pss = 0;
  try {
    pss = Number(/Pss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
  } catch {
    // smaps_rollup needs Linux ≥ 4.14
  }
  return { pid, name, rss, anon, file, pss };
}

export const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
export const fmt = (x) => x.toFixed(1);
export const mb = (kb) => (kb / 1024).toFixed(1);

export function machine() {
  const model = cpus()[0]?.model.replace(/\s+/g, " ").trim() ?? "unknown CPU";
  return `${model}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB RAM`;
}

export function writeSection(id, body) {
  const path = join(repo, "docs/BENCHMARKS.md");
  const doc = readFileSync(path, "utf8");
  const start = `<!-- ${id}:start -->`;
  const end = `<!-- ${id}:end -->`;
  const section = `${start}\n${body.trimEnd()}\n${end}`;
  const at = doc.indexOf(start);
  const next = at >= 0 ? doc.slice(0, at) + section + doc.slice(doc.indexOf(end) + end.length) : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(path, next);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** An Xvfb display for the app (the current one when DISPLAY is set); the server joins `children`. */
export async function startDisplay(children) {
  if (process.env.DISPLAY) return process.env.DISPLAY;
  const display = `:${120 + Math.floor(Math.random() * 100)}`;
  const xvfb = spawn("Xvfb", [display, "-screen", "0", "1360x860x24", "-nolisten", "tcp"], { stdio: "ignore" });
  children.add(xvfb);
  await sleep(800);
  return display;
}

async function stop(child, children) {
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  children.delete(child);
}

/** `runs` cold starts of `app` on `project`: spawn → the first view rendered and interactive
 * (the UI calls `ui_ready` after its first paint; ZBLADE_STARTUP_REPORT makes the app write the
 * in-process time to a file in `work`). Wall and in-process milliseconds. */
export async function coldStarts({ app, project, env, runs, work, children }) {
  const wall = [];
  const inApp = [];
  for (let run = 0; run < runs; run++) {
    const report = `${work}/startup-${run}.txt`;
    const started = performance.now();
    const child = spawn(app, [project], { env: { ...env, ZBLADE_STARTUP_REPORT: report }, stdio: "ignore" });
    children.add(child);
    while (!existsSync(report) || readFileSync(report, "utf8").trim() === "") {
      if (performance.now() - started > 60_000) throw new Error(`${app} did not report ready within 60 s`);
      await sleep(5);
    }
    wall.push(performance.now() - started);
    inApp.push(Number(readFileSync(report, "utf8")));
    await stop(child, children);
    await sleep(500);
  }
  return { wall, inApp };
}

/** The memory of `app --hidden` on `project` (what runs in the tray all day) after `settleMs`:
 * medians of five samples of the app process and of its helper processes, in kB. With
 * `releaseMs`, the same again after idling that much longer (`released`: past the app's model
 * release period), then what `afterRelease()` returns (`reload`). */
export async function idleMemory({ app, project, env, settleMs, children, releaseMs = 0, afterRelease }) {
  const child = spawn(app, ["--hidden", project], { env, stdio: "ignore" });
  children.add(child);
  await sleep(settleMs); // open, index (nothing new), watch, settle
  const settled = await memorySamples(child.pid);
  // Optionally idle on past the app's model release period, measure again, then let the
  // caller ask something of the app (the first search after the release pays the reload).
  let released = null;
  let reload = null;
  if (releaseMs > 0) {
    await sleep(releaseMs);
    released = await memorySamples(child.pid);
    if (afterRelease) reload = await afterRelease();
  }
  await stop(child, children);
  return { ...settled, released, reload };
}

// Five samples a second apart of a process's memory and its helpers': medians.
async function memorySamples(pid) {
  const samples = [];
  for (let i = 0; i < 5; i++) {
    samples.push({ own: memoryOf(pid), helpers: descendants(pid).map(memoryOf) });
    await sleep(1000);
  }
  const last = samples[samples.length - 1];
  return {
    ownRss: quantile(samples.map((s) => s.own.rss), 0.5),
    ownPss: quantile(samples.map((s) => s.own.pss), 0.5),
    ownAnon: quantile(samples.map((s) => s.own.anon), 0.5),
    ownFile: quantile(samples.map((s) => s.own.file), 0.5),
    helpersRss: quantile(samples.map((s) => s.helpers.reduce((a, h) => a + h.rss, 0)), 0.5),
    helpersPss: quantile(samples.map((s) => s.helpers.reduce((a, h) => a + h.pss, 0)), 0.5),
    helperNames: last.helpers.map((h) => h.name),
  };
}
