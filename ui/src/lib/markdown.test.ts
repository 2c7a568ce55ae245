import { describe, expect, it } from "vitest";
import { languageOf, renderMarkdown } from "./markdown";

describe("renderMarkdown", () => {
  it("renders Markdown with highlighted code", () => {
    const html = renderMarkdown("Use **HS256**.\n\n```ts\nconst x: number = 1;\n```");
    expect(html).toContain("<strong>HS256</strong>");
    expect(html).toContain('class="language-ts"');
    expect(html).toContain("hljs-keyword");
  });
  it("removes scripts, handlers and javascript: links from untrusted messages", () => {
    const html = renderMarkdown('<script>alert(1)</script><img src=x onerror="alert(2)">\n\n[x](javascript:alert(3))');
    expect(html).not.toContain("<script");
    expect(html).not.toContain("onerror");
    expect(html).not.toContain('href="javascript');
    expect(html).toContain("<a>x</a>");
  });
  it("removes style attributes, forms and buttons that could fake the app's own controls", () => {
    const html = renderMarkdown(
      '<div style="position:fixed;inset:0;background:white">Session expired</div><button>Sign in</button><form><input name="t"></form>',
    );
    expect(html).not.toContain("style=");
    expect(html).not.toContain("position:fixed");
    expect(html).not.toContain("<button");
    expect(html).not.toContain("<form");
    expect(html).not.toContain("<input");
    expect(html).toContain("Session expired");
  });
  it("knows languages by extension", () => {
    expect(languageOf("src/auth.ts")).toBe("typescript");
    expect(languageOf("Makefile")).toBeNull();
  });
});
