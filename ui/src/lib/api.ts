// The one door from the UI to the app: the generated, typed commands and events, with each
// command's Result turned into a value or a thrown CommandError (code + message).
import { commands, events } from "./bindings";
import type { AppError } from "./bindings";

export { commands, events };
export type * from "./bindings";

/** A failed command: `code` says what kind (no_project, not_initialized, consent_required, …). */
export class CommandError extends Error {
  code: AppError["code"];
  constructor(error: AppError) {
    super(error.message);
    this.code = error.code;
  }
}

type Outcome<T> = { status: "ok"; data: T } | { status: "error"; error: AppError };

/** Awaits a command and unwraps its result. */
export async function call<T>(pending: Promise<Outcome<T>>): Promise<T> {
  let outcome: Outcome<T>;
  try {
    outcome = await pending;
  } catch (e) {
    // The IPC itself failed (the app is quitting, a panic in a command).
    throw new CommandError({ code: "internal", message: String(e) });
  }
  if (outcome.status === "ok") return outcome.data;
  throw new CommandError(outcome.error);
}

/** The message of anything thrown. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
