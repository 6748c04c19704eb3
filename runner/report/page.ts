// The frame of every scifi page (a run's report, the index): our own CSS and JS embedded, and the
// Content-Security-Policy that lets only those run, through their SHA-256 hashes (no
// 'unsafe-inline' for scripts), so even markup that slipped through the escaping could not run.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { sha256 } from "../sha256.ts";
import { type Html, html } from "./escape.ts";

export interface PageAssets {
  css: string;
  js: string;
}

let cachedAssets: PageAssets | undefined;

/**
 * The page's CSS and JS, read from the asset files next to this module once per process; the CSS
 * carries highlight.js's GitHub theme for the diffs' syntax colours (embedded: nothing is fetched).
 */
export function pageAssets(): PageAssets {
  cachedAssets ??= {
    css:
      readFileSync(new URL("./assets/report.css", import.meta.url), "utf8") +
      readFileSync(createRequire(import.meta.url).resolve("highlight.js/styles/github.css"), "utf8"),
    js: readFileSync(new URL("./assets/report.js", import.meta.url), "utf8"),
  };
  return cachedAssets;
}

/** The strict policy of every scifi page: nothing may be fetched; only our own script and style run. */
export function contentSecurityPolicy(assets: { css: string; js?: string }): string {
  const hash = (text: string): string => `'sha256-${sha256(text, "base64")}'`;
  const script = assets.js === undefined ? "'none'" : hash(assets.js);
  return `default-src 'none'; style-src ${hash(assets.css)}; script-src ${script}; img-src data:; base-uri 'none'; form-action 'none'`;
}

export function pageShell(title: string, body: Html, assets: { css: string; js?: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(assets)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${html`${title}`}</title>
<style>${assets.css}</style>
</head><body>
${body}
${assets.js === undefined ? "" : `<script>${assets.js}</script>`}
</body></html>
`;
}
