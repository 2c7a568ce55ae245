// What every e2e journey starts with: loopback ports (a free one to listen on, waiting for a
// process to listen on one) and tauri-driver, which drives the real app window.
import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import net from "node:net";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A port nothing listens on now (the OS picks it). */
export async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on `port`; throws after `ms`. */
export async function waitForPort(port, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => { socket.end(); resolve(true); });
      socket.on("error", () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`nothing listens on ${port} after ${ms} ms`);
}

/**
 * Starts tauri-driver with `env` (its output in `log`), registers it in `children` so the
 * journey stops it, and returns its WebDriver port once it listens.
 */
export async function startTauriDriver(env, log, children) {
  const port = await freePort();
  const driverLog = createWriteStream(log);
  const driver = spawn("tauri-driver", ["--port", String(port), "--native-port", String(await freePort())], { env });
  driver.stdout.pipe(driverLog);
  driver.stderr.pipe(driverLog);
  children.push(driver);
  await waitForPort(port, 15_000);
  return port;
}
