// Message Markdown to safe HTML: marked parses, highlight.js colours code blocks, DOMPurify
// removes anything active (scripts, event handlers, javascript: links) — messages come from
// AI conversations and are never trusted.
import { Marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = { bash, css, go, javascript, json, python, rust, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["js", "jsx"], { languageName: "javascript" });
hljs.registerAliases(["sh", "shell", "zsh"], { languageName: "bash" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svelte", "vue"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

/** Highlights `code` as `language` (guessing when unknown); returns HTML. */
export function highlight(code: string, language?: string | null): string {
  if (language && hljs.getLanguage(language)) {
    return hljs.highlight(code, { language, ignoreIllegals: true }).value;
  }
  return hljs.highlightAuto(code).value;
}

/** The language of a file, by extension, for highlighting. */
export function languageOf(path: string): string | null {
  const ext = path.split(".").pop()?.toLowerCase() ?? "";
  const byExt: Record<string, string> = {
    ts: "typescript", tsx: "typescript", js: "javascript", jsx: "javascript", mjs: "javascript",
    rs: "rust", py: "python", go: "go", json: "json", sh: "bash", bash: "bash", css: "css",
    html: "xml", xml: "xml", svelte: "xml", vue: "xml", sql: "sql", yml: "yaml", yaml: "yaml",
  };
  return byExt[ext] ?? null;
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }) {
      const language = (lang ?? "").trim().split(/\s+/)[0] || null;
      const cls = language ? ` class="language-${language.replace(/[^\w-]/g, "")}"` : "";
      return `<pre><code${cls}>${highlight(text, language)}</code></pre>\n`;
    },
  },
});

/** Renders Markdown to sanitized HTML. */
export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false }) as string;
  // `style` attributes are forbidden too: a message could otherwise draw a fake dialog over the
  // app or hide text (the CSP allows inline styles for the app's own components).
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"],
    FORBID_ATTR: ["style"],
  });
}

/**
 * The link a click in rendered Markdown landed on, if any: the caller stops the web view from
 * following it and asks the app to open it in the browser after a native confirmation.
 */
export function clickedLink(event: MouseEvent): string | null {
  const target = event.target as Element | null;
  const anchor = target?.closest?.("a[href]") as HTMLAnchorElement | null;
  return anchor ? anchor.getAttribute("href") : null;
}
