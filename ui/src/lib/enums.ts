// The app's choices, typed by the union types generated from the engine's enums
// (bindings.ts). Each list is a `Record` over its union: a variant added or renamed in Rust
// fails `svelte-check` here until it gets a label, so no list can drift from the engine.
import type { Format, MomentType, SearchKind, Tier } from "./bindings";

/** Search tabs, in the order shown. */
export const SEARCH_KINDS: Record<SearchKind, string> = {
  all: "all",
  messages: "messages",
  moments: "moments",
  conversations: "conversations",
  code: "code",
  commits: "commits",
};

/** Moment types, as the Moments view's tabs show them. */
export const MOMENT_TYPES: Record<MomentType, string> = {
  decision: "decision",
  pattern: "pattern",
  solution: "solution",
  context: "context",
};

/** Reading-model tiers for the context preview. */
export const TIERS: Record<Tier, string> = { smart: "smart", balanced: "balanced", fast: "fast" };

/** Output formats for the context preview. */
export const FORMATS: Record<Format, string> = { xml: "xml", markdown: "markdown", json: "json" };

/** The keys of a label record, typed as its union. */
export function choices<K extends string>(labels: Record<K, string>): K[] {
  return Object.keys(labels) as K[];
}
