// A private D-Bus session with GNOME Keyring's Secret Service, unlocked with a test password:
// the real keyring the app keeps API keys (chat) and the archive's master key in. Shared by the
// e2e tests; not a test itself (node --test runs only *.test.mjs here).
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

/** Starts the bus and the keyring under `work`, sets `env` to reach them, and adds both
 *  processes to `children` (killed by the caller's cleanup). */
export async function startSecretService(env, work, children) {
  env.XDG_DATA_HOME = join(work, "data");
  env.XDG_RUNTIME_DIR = join(work, "run");
  mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
  const bus = spawn("dbus-daemon", ["--session", "--nofork", "--print-address=1"], { env, stdio: ["ignore", "pipe", "ignore"] });
  children.push(bus);
  env.DBUS_SESSION_BUS_ADDRESS = await new Promise((resolve, reject) => {
    bus.stdout.once("data", (d) => resolve(d.toString().trim().split("\n")[0]));
    bus.once("exit", () => reject(new Error("dbus-daemon exited")));
  });
  const keyring = spawn("gnome-keyring-daemon", ["--unlock", "--components=secrets", "--foreground"], { env, stdio: ["pipe", "ignore", "ignore"] });
  keyring.stdin.end("e2e-password");
  children.push(keyring);
  await new Promise((r) => setTimeout(r, 1500));
}
