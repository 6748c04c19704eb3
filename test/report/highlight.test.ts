// Syntax highlighting of the report's diffs (runner/report/highlight.ts): the language by file name,
// multi-line tokens split by line with their scopes reopened, the work capped, and hostile file
// names and contents kept as text in the rendered page (every tag in the Changes section is ours).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runFiles } from "../../runner/paths.ts";
import { type Snapshot, writeSnapshot } from "../../runner/report/changes.ts";
import { changesView, MAX_HIGHLIGHT_CHARS, MAX_SHOWN_DIFF_LINES } from "../../runner/report/changes-view.ts";
import { highlightLines, languageOf, type Segment } from "../../runner/report/highlight.ts";
import { renderReport } from "../../runner/report/html.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import { synthRun } from "./synth.ts";

const HOSTILE_TEXT = [
  "x = \"</script><script>document.title='pwned'</script>\"",
  "# <img src=x onerror=alert(1)>",
  "def f():",
  '    """"><svg onload=alert(2)>',
  '    </pre></td></tr></table><iframe src="https://evil.example/"></iframe>',
  '    """',
  "    return 1 & 2 < 3 > 0",
  "",
].join("\n");

function snapshot(label: string, files: Record<string, string>): Snapshot {
  const entries: Snapshot["files"] = {};
  for (const [path, text] of Object.entries(files))
    entries[path] = { kind: "file", size: Buffer.byteLength(text), mtimeMs: 0, sha256: path + text, text };
  return { label, takenAt: "2026-12-01T00:00:00.000Z", files: entries };
}

function plain(segments: Segment[]): string {
  return segments.map((s) => (typeof s === "string" ? s : plain(s.children))).join("");
}

function scopes(segments: Segment[]): string[] {
  return segments.flatMap((s) => (typeof s === "string" ? [] : [s.scope, ...scopes(s.children)]));
}

describe("syntax highlighting of diffs", () => {
  it("picks the language from the file name", () => {
    expect(languageOf("src/fit.py")).toBe("python");
    expect(languageOf("solver.F90")).toBe("fortran");
    expect(languageOf("rtl/counter.sv")).toBe("verilog");
    expect(languageOf("kernel.cu")).toBe("cpp");
    expect(languageOf("lib.h")).toBe("c");
    expect(languageOf("run.sh")).toBe("bash");
    expect(languageOf("Makefile")).toBe("makefile");
    expect(languageOf("sub/CMakeLists.txt")).toBe("cmake");
    expect(languageOf("pyproject.toml")).toBe("ini");
    expect(languageOf("analysis.R")).toBe("r");
    expect(languageOf("model.jl")).toBe("julia");
    expect(languageOf("conf.yml")).toBe("yaml");
    expect(languageOf("task.md")).toBe("markdown");
    expect(languageOf("data.json")).toBe("json");
    expect(languageOf("notes.txt")).toBeUndefined();
    expect(languageOf(".py")).toBeUndefined();
    expect(languageOf("constructor")).toBeUndefined();
    expect(languageOf("x.__proto__")).toBeUndefined();
  });

  it("splits multi-line tokens by line, reopening their scope, and keeps the text exact", () => {
    const lines = highlightLines(HOSTILE_TEXT, "python");
    expect(lines).toBeDefined();
    const split = HOSTILE_TEXT.split("\n").slice(0, -1);
    expect(lines?.map(plain)).toEqual(split);
    expect(scopes(lines?.[0] ?? [])).toContain("hljs-string");
    expect(scopes(lines?.[1] ?? [])).toContain("hljs-comment");
    expect(scopes(lines?.[2] ?? [])).toContain("hljs-keyword");
    // The docstring spans three lines: each is its own string span.
    for (const i of [3, 4, 5]) expect(scopes(lines?.[i] ?? [])).toContain("hljs-string");
    expect(scopes(lines?.[6] ?? [])).toContain("hljs-number");
    expect(highlightLines("", "python")).toEqual([]);
    expect(highlightLines("a = 1", "python")?.map(plain)).toEqual(["a = 1"]);
  });

  it("cuts very long lines before highlighting", () => {
    const lines = highlightLines(`x = ${"1".repeat(10_000)}\n`, "python");
    expect(plain(lines?.[0] ?? []).length).toBeLessThan(2100);
  });

  it("highlights only up to the last shown line", () => {
    const before = Array.from({ length: 3000 }, (_, i) => `x${i} = ${i}`).join("\n");
    const after = before.replace(/= (\d*0)$/gm, "= $1 + 1");
    const view = changesView({
      start: snapshot("start", { "big.py": `${before}\n` }),
      iterations: [],
      end: snapshot("end", { "big.py": `${after}\n` }),
    });
    const diff = view.overall?.files[0]?.diff;
    expect(diff?.lang).toBe("python");
    const shown = diff?.hunks.flatMap((h) => h.lines) ?? [];
    expect(shown).toHaveLength(MAX_SHOWN_DIFF_LINES);
    expect(shown.every((l) => l.hl !== undefined)).toBe(true);
    expect(diff?.cut).toBeGreaterThan(0);
  });

  it("stops highlighting when the report's budget is spent: later diffs are plain", () => {
    const text = `${Array.from({ length: 300 }, (_, i) => `x${i} = ${"7".repeat(1990)}`).join("\n")}\n`;
    const files = Object.fromEntries(["a.py", "b.py", "c.py", "d.py"].map((name) => [name, text]));
    const view = changesView({ start: snapshot("start", {}), iterations: [], end: snapshot("end", files) });
    const langs = view.overall?.files.map((f) => f.diff?.lang);
    expect(MAX_HIGHLIGHT_CHARS).toBeLessThan(4 * text.length);
    expect(langs).toEqual(["python", "python", "python", undefined]);
    expect(view.overall?.files[3]?.diff?.hunks[0]?.lines[0]?.hl).toBeUndefined();
  });

  it("renders highlighted diffs with hostile names and contents as text: every tag is the report's", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-highlight-"));
    const dir = synthRun(root, "run-hl", { calls: 5, workCallsPerIteration: 1 });
    const names = ['"><svg onload=alert(1)>.py', "</script><img src=x onerror=alert(2)>.sh", "plain.py"];
    writeSnapshot(dir, snapshot("start", { "plain.py": "a = 1\n" }), "start");
    writeSnapshot(
      dir,
      snapshot("end", {
        [names[0] as string]: HOSTILE_TEXT,
        [names[1] as string]: "echo '</script><img src=x onerror=alert(3)>' # \"><svg onload=x>\n",
        "plain.py": 'a = "<b>bold</b>"\n',
      }),
      "end",
    );
    const page = renderReport(buildReportModel(loadRun(runFiles(dir).audit)));
    const section = page.slice(page.indexOf('<section id="changes">'), page.indexOf("</section>") + 10);
    expect(section.length).toBeGreaterThan(100);
    // Highlighted: keywords, strings, comments as highlight.js spans.
    expect(section).toContain('<span class="hljs-keyword">def</span>');
    expect(section).toContain('<span class="hljs-string">');
    expect(section).toContain('<span class="hljs-comment">');
    expect(section).toContain('data-lang="python"');
    expect(section).toContain('data-lang="bash"');
    // Every tag in the section is one the report writes; no attribute but class, id, data-*, open, colspan.
    const tags = [...section.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)];
    const allowed = new Set([
      "section",
      "h2",
      "p",
      "span",
      "div",
      "table",
      "tr",
      "td",
      "th",
      "code",
      "details",
      "summary",
      "pre",
      "b",
    ]);
    for (const [, tag, attrs] of tags) {
      expect(allowed.has((tag as string).toLowerCase()), tag).toBe(true);
      const names = [
        ...(attrs as string).replace(/"[^"]*"/g, '""').matchAll(/\s([a-zA-Z-]+)(?==|\s|$)/g),
      ].map((m) => m[1]);
      for (const name of names) expect(name, attrs).toMatch(/^(class|id|open|colspan|data-[a-z]+)$/);
    }
    expect(section).not.toMatch(/<(script|img|svg|iframe)/i);
    expect(section).toContain("&lt;/script&gt;&lt;script&gt;document.title=");
    expect(section).toContain("&quot;&gt;&lt;svg onload=alert(1)&gt;.py");
    // The page's only script is its own.
    expect(page.match(/<script>/g)).toHaveLength(1);
  });
});
