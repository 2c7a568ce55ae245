import { describe, expect, it } from "vitest";
import { location, snippetParts, statusLabel, statusTone, timeAgo, formatBytes, hitTitle, isPlainHttpElsewhere } from "./format";
import { scrollToRow, visibleWindow } from "./virtual";

describe("snippetParts", () => {
  it("splits on match markers", () => {
    expect(snippetParts("rotate the «JWT» signing «key» now")).toEqual([
      { text: "rotate the ", match: false },
      { text: "JWT", match: true },
      { text: " signing ", match: false },
      { text: "key", match: true },
      { text: " now", match: false },
    ]);
  });
  it("keeps an unbalanced marker as text and never produces HTML", () => {
    expect(snippetParts("a « b <script>")).toEqual([{ text: "a « b <script>", match: false }]);
    expect(snippetParts("")).toEqual([]);
  });
});

describe("reference status", () => {
  it("says drift only for references that are still found", () => {
    expect(statusLabel("ok", true)).toBe("drift");
    expect(statusLabel("moved", true, 0.86)).toBe("moved, modified");
    expect(statusLabel("moved", false, 1)).toBe("moved");
    expect(statusLabel("missing", true)).toBe("missing");
    expect(statusTone("ok", false)).toBe("good");
    expect(statusTone("ok", true)).toBe("warn");
    expect(statusTone("shifted", false)).toBe("warn");
    expect(statusTone("missing", false)).toBe("bad");
  });
  it("formats locations", () => {
    expect(location("src/a.ts", [3, 9])).toBe("src/a.ts:3-9");
    expect(location("src/a.ts", [3, 3])).toBe("src/a.ts:3");
    expect(location(null, [1, 2])).toBe("");
  });
});

describe("timeAgo", () => {
  const now = new Date("2026-11-23T12:00:00Z");
  it("is relative for recent times", () => {
    expect(timeAgo("2026-11-23T11:59:30Z", now)).toBe("just now");
    expect(timeAgo("2026-11-23T11:15:00Z", now)).toBe("45 min ago");
    expect(timeAgo("2026-11-22T10:00:00Z", now)).toBe("yesterday");
  });
  it("passes through what it cannot read", () => {
    expect(timeAgo("not a date", now)).toBe("not a date");
    expect(timeAgo("", now)).toBe("");
  });
});

describe("virtual list window", () => {
  it("renders only what is in view plus overscan, for 10,000 rows", () => {
    const w = visibleWindow(10_000, 64, 64 * 5000, 640, 8);
    expect(w.start).toBe(4992);
    expect(w.end).toBe(5019);
    expect(w.end - w.start).toBeLessThan(40);
    expect(w.padTop + (w.end - w.start) * 64 + w.padBottom).toBe(10_000 * 64);
  });
  it("clamps at both ends and handles empty lists", () => {
    expect(visibleWindow(0, 64, 0, 600)).toEqual({ start: 0, end: 0, padTop: 0, padBottom: 0 });
    const top = visibleWindow(5, 64, -100, 600);
    expect([top.start, top.end]).toEqual([0, 5]);
    const bottom = visibleWindow(100, 10, 10_000, 200);
    expect(bottom.end).toBe(100);
  });
  it("scrolls a row into view only when needed", () => {
    expect(scrollToRow(0, 50, 100, 300)).toBe(0);
    expect(scrollToRow(3, 50, 100, 300)).toBe(100);
    expect(scrollToRow(10, 50, 100, 300)).toBe(250);
  });
});

describe("formatBytes", () => {
  it("uses the unit that keeps the number short", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(999)).toBe("999 B");
    expect(formatBytes(4200)).toBe("4.2 KB");
    expect(formatBytes(13_000_000)).toBe("13.0 MB");
    expect(formatBytes(2.5e9)).toBe("2.5 GB");
  });
});

describe("hitTitle", () => {
  const hit = { kind: "moment", id: "moment_01M84", title: null, label: "decision", path: null };
  it("names a moment outside any conversation by its type, not its id", () => {
    expect(hitTitle(hit)).toBe("Decision");
  });
  it("prefers the conversation's title, then the file", () => {
    expect(hitTitle({ ...hit, title: "Auth refactor" })).toBe("Auth refactor");
    expect(hitTitle({ ...hit, kind: "code", label: null, path: "src/auth.rs" })).toBe("src/auth.rs");
  });
  it("falls back to the id when nothing else says what it is", () => {
    expect(hitTitle({ ...hit, kind: "message", label: null })).toBe("moment_01M84");
  });
});

describe("isPlainHttpElsewhere", () => {
  it("flags plain http to other machines only", () => {
    expect(isPlainHttpElsewhere("http://10.0.0.5:7400")).toBe(true);
    expect(isPlainHttpElsewhere("http://sync.example.com")).toBe(true);
    expect(isPlainHttpElsewhere("http://127.0.0.1:7400")).toBe(false);
    expect(isPlainHttpElsewhere("http://localhost:7400")).toBe(false);
    expect(isPlainHttpElsewhere("http://[::1]:7400")).toBe(false);
    expect(isPlainHttpElsewhere("https://sync.example.com")).toBe(false);
    expect(isPlainHttpElsewhere("not a url")).toBe(false);
  });
});
