// Search as you type: one request per keystroke, answers that arrive after a newer keystroke's
// are dropped, and the time from keystroke to rendered results is recorded (the search
// benchmark reads `window.__zbladeSearchTimings`).
import { tick } from "svelte";
import { call, commands } from "./api";
import type { SearchKind, SearchResults } from "./bindings";

declare global {
  interface Window {
    __zbladeSearchTimings?: { query: string; engineMs: number; renderedMs: number }[];
  }
}

export class LiveSearch {
  text = $state("");
  kind = $state<SearchKind>("all");
  pathPrefix = $state("");
  results = $state<SearchResults | null>(null);
  error = $state<string | null>(null);
  busy = $state(false);
  private latest = 0;

  constructor(private limit: number) {}

  /** Runs the search for the current text and filters. */
  async run() {
    const seq = ++this.latest;
    const started = performance.now();
    const text = this.text;
    if (text.trim() === "") {
      this.results = null;
      this.error = null;
      return;
    }
    this.busy = true;
    try {
      const results = await call(
        commands.search({ text, kind: this.kind, limit: this.limit, filter: { path_prefix: this.pathPrefix || null, conversation: null, since: null, until: null } }),
      );
      if (seq !== this.latest) return;
      this.results = results;
      this.error = null;
      await tick();
      requestAnimationFrame(() => {
        const timings = (window.__zbladeSearchTimings ??= []);
        timings.push({ query: text, engineMs: results.elapsed_ms, renderedMs: performance.now() - started });
      });
    } catch (e) {
      if (seq !== this.latest) return;
      this.error = e instanceof Error ? e.message : String(e);
      this.results = null;
    } finally {
      if (seq === this.latest) this.busy = false;
    }
  }
}
