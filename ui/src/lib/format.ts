// Small pure helpers the views share; tested in format.test.ts.

/** "3 min ago", "yesterday", "12 Mar 2026" — relative for recent times, a date otherwise. */
export function timeAgo(iso: string, now: Date = new Date()): string {
  if (!iso) return "";
  const then = new Date(iso);
  if (Number.isNaN(then.getTime())) return iso;
  const seconds = Math.round((now.getTime() - then.getTime()) / 1000);
  if (seconds < 0) return then.toLocaleDateString(undefined, { day: "numeric", month: "short", year: "numeric" });
  if (seconds < 60) return "just now";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  if (days === 1) return "yesterday";
  if (days < 7) return `${days} days ago`;
  return then.toLocaleDateString(undefined, { day: "numeric", month: "short", year: "numeric" });
}

/** A piece of a search snippet: plain text, or a matched word (the engine wraps those in « »). */
export type SnippetPart = { text: string; match: boolean };

/** Splits a snippet on the engine's « » match markers, so matches can be highlighted safely
 *  (as text nodes, never as HTML). An unbalanced marker is kept as text. */
export function snippetParts(snippet: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  let rest = snippet;
  while (rest.length > 0) {
    const open = rest.indexOf("«");
    const close = open >= 0 ? rest.indexOf("»", open + 1) : -1;
    if (open < 0 || close < 0) {
      parts.push({ text: rest, match: false });
      break;
    }
    if (open > 0) parts.push({ text: rest.slice(0, open), match: false });
    parts.push({ text: rest.slice(open + 1, close), match: true });
    rest = rest.slice(close + 1);
  }
  return parts.filter((p) => p.text.length > 0);
}

/** What a reference status means, in a few words, for chips and tooltips. */
export function statusLabel(status: string, drift: boolean, similarity = 1): string {
  const base: Record<string, string> = {
    ok: "ok",
    shifted: "shifted",
    modified: "modified",
    moved: "moved",
    missing: "missing",
    unreadable: "unreadable",
    unchecked: "not checked yet",
  };
  const label = base[status] ?? status;
  // Code that went to another file and was edited there: "moved" alone would hide the edit.
  if (status === "moved" && Math.round(similarity * 100) < 100) return "moved, modified";
  return drift && status === "ok" ? "drift" : label;
}

/** A severity class for a status: good, warn or bad. */
export function statusTone(status: string, drift: boolean): "good" | "warn" | "bad" {
  if (status === "missing" || status === "unreadable") return "bad";
  if (status === "ok" && !drift) return "good";
  return "warn";
}

/** `src/auth.ts:10-25`, or just the path for a one-line range. */
export function location(file: string | null | undefined, lines: [number, number] | null | undefined): string {
  if (!file) return "";
  if (!lines) return file;
  return lines[0] === lines[1] ? `${file}:${lines[0]}` : `${file}:${lines[0]}-${lines[1]}`;
}

/** Thousands separators. */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A size for people: `812 B`, `4.2 KB`, `13.0 MB` (decimal units, like the CLI). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} KB`;
  if (bytes < 1e9) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e9).toFixed(1)} GB`;
}

/** The bold name of a search hit: its conversation's title, a code hit's file, or for a moment
 *  kept outside any conversation its type ("Decision"); the raw id only when nothing else says
 *  what it is. */
export function hitTitle(hit: { kind: string; id: string; title: string | null; label: string | null; path?: string | null }): string {
  if (hit.title) return hit.title;
  if (hit.path) return hit.path;
  if (hit.kind === "moment" && hit.label) return hit.label.charAt(0).toUpperCase() + hit.label.slice(1);
  return hit.id;
}

/**
 * Whether `url` is plain http to another machine (the migration wizard then warns and asks for
 * an explicit yes; the engine refuses it otherwise). Loopback hosts cross no network.
 */
export function isPlainHttpElsewhere(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return false;
  }
  if (parsed.protocol !== "http:") return false;
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const loopback = host === "localhost" || host.endsWith(".localhost") || /^127\.\d+\.\d+\.\d+$/.test(host) || host === "::1";
  return !loopback;
}
