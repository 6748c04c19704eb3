// The first page of each PDF a run made (runner/report/pdf-pages.ts), rendered by pdftoppm in a real
// Docker sandbox of the run's image with no network and no task folder: a PDF matplotlib wrote in a
// sandbox, a hand-written one under a hostile name, a broken one (a note), an unchanged one (not
// rendered), the cap on how many; and an image without pdftoppm ("no converter in the image").
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runFiles } from "../../runner/paths.ts";
import { snapshotTaskFolder, writeSnapshot } from "../../runner/report/changes.ts";
import { changesView } from "../../runner/report/changes-view.ts";
import {
  endSnapshotWithPdfPages,
  MAX_PDF_BYTES,
  MAX_PDFS,
  NO_CONVERTER,
} from "../../runner/report/pdf-pages.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ensureImage } from "../run/harness.ts";
import { minimalPdf } from "./pdf.ts";
import { decodePng } from "./png.ts";

const IMAGE = "scifi-sci:local";
const HOSTILE = '"><svg onload=alert(1)>.pdf';

/** A run folder whose spec.json names `image` and whose state.json names the docker backend. */
function runFolder(taskDir: string, image: string): string {
  const runDir = mkdtempSync(join(tmpdir(), "scifi-pdf-run-"));
  const spec = taskFolderSpec(
    { runId: `pdfpages-${process.pid}-${Date.now()}`, image, taskDir },
    { labels: { "scifi.test": "pdf-pages" } },
  );
  writeFileSync(runFiles(runDir).spec, JSON.stringify(spec));
  writeFileSync(runFiles(runDir).state, JSON.stringify({ backend: "docker" }));
  return runDir;
}

describe("which PDFs the end snapshot hands over", () => {
  it("only created or changed ones, at most MAX_PDFS, each at most MAX_PDF_BYTES; never kept as text", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-pdfs-"));
    writeFileSync(join(dir, "same.pdf"), minimalPdf());
    writeFileSync(join(dir, "edited.pdf"), minimalPdf());
    const start = await snapshotTaskFolder(dir, "start");
    expect(start.files["same.pdf"]?.text).toBeUndefined();
    writeFileSync(join(dir, "edited.pdf"), Buffer.concat([minimalPdf(), Buffer.from("% more\n")]));
    for (let i = 0; i < MAX_PDFS + 2; i++) writeFileSync(join(dir, `new-${i}.PDF`), minimalPdf());
    writeFileSync(join(dir, "huge.pdf"), "");
    truncateSync(join(dir, "huge.pdf"), MAX_PDF_BYTES + 1);
    const found = new Map<string, Buffer>();
    await snapshotTaskFolder(dir, "end", {
      images: true,
      pdfs: { since: start, max: MAX_PDFS, maxBytes: MAX_PDF_BYTES, found },
    });
    expect(found.size).toBe(MAX_PDFS);
    expect(found.has("same.pdf")).toBe(false);
    expect(found.has("huge.pdf")).toBe(false);
    expect(found.has("edited.pdf")).toBe(true);
  });
});

describe.skipIf(!hasEngine("docker"))("PDF first pages, rendered in a sandbox", () => {
  let taskDir: string;
  let runDir: string;

  beforeAll(async () => {
    ensureImage();
    taskDir = mkdtempSync(join(tmpdir(), "scifi-pdf-task-"));
    mkdirSync(join(taskDir, "figs"));
    writeFileSync(join(taskDir, "unchanged.pdf"), minimalPdf());
    runDir = runFolder(taskDir, IMAGE);
    writeSnapshot(runDir, await snapshotTaskFolder(taskDir, "start"), "start");
    // The run's work: matplotlib writes a PDF in a sandbox; a hand-written PDF under a hostile name;
    // a file that only claims to be a PDF.
    const work = await createDockerBackend().start(
      taskFolderSpec({ runId: `pdfwork-${process.pid}-${Date.now()}`, image: IMAGE, taskDir }),
    );
    try {
      const r = await work.exec([
        "python3",
        "-c",
        "import matplotlib.pyplot as plt; plt.figure(figsize=(4, 3)); plt.plot([0, 1, 2], [2, 0, 1]); plt.savefig('figs/plot.pdf')",
      ]);
      expect(r.stderr).toBe("");
      expect(r.exitCode).toBe(0);
    } finally {
      await work.stop();
    }
    writeFileSync(join(taskDir, HOSTILE), minimalPdf());
    writeFileSync(join(taskDir, "broken.pdf"), "%PDF-1.4\nthis is not a PDF </script><b>x</b>\n");
  }, 1_800_000);

  it("renders the first page of each new PDF as a PNG of 800 pixels on its long side", async () => {
    const end = await endSnapshotWithPdfPages(taskDir, runDir);
    for (const rel of ["figs/plot.pdf", HOSTILE]) {
      const page = end.files[rel]?.pdfPage;
      expect(page?.mime, rel).toBe("image/png");
      const png = decodePng(Buffer.from(page?.base64 ?? "", "base64"));
      expect(Math.max(png.width, png.height), rel).toBe(800);
    }
    // The hand-written page: 200 x 100 pt, a black rectangle on white.
    const hostile = decodePng(Buffer.from(end.files[HOSTILE]?.pdfPage?.base64 ?? "", "base64"));
    expect([hostile.width, hostile.height]).toEqual([800, 400]);
    const at = (x: number, y: number) => hostile.data[(y * hostile.width + x) * 4];
    expect(at(10, 10)).toBe(255);
    expect(at(240, 200)).toBe(0);
    expect(end.files["broken.pdf"]?.pdfPage).toBeUndefined();
    expect(end.files["broken.pdf"]?.pdfNote).toMatch(/^pdftoppm failed \(exit \d+\)/);
    expect(end.files["unchanged.pdf"]?.pdfPage).toBeUndefined();
    expect(end.files["unchanged.pdf"]?.pdfNote).toBeUndefined();
    // The report's view: the page inline for the whole run, a note and "binary" for the broken one.
    writeSnapshot(runDir, end, "end");
    const start = (await import("../../runner/report/changes.ts")).readSnapshots(runDir);
    const view = changesView(start);
    const file = (path: string) => view.overall?.files.find((f) => f.path === path);
    expect(file("figs/plot.pdf")?.pdfPage?.mime).toBe("image/png");
    expect(file("figs/plot.pdf")?.note).toBeUndefined();
    expect(file("broken.pdf")?.pdfNote).toMatch(/pdftoppm failed/);
    expect(file("broken.pdf")?.note).toMatch(/binary/);
    // No sandbox is left behind.
    const left = execFileSync("docker", ["ps", "-aq", "--filter", "label=scifi.test=pdf-pages"], {
      encoding: "utf8",
    });
    expect(left.trim()).toBe("");
  }, 300_000);

  it("says 'no converter in the image' when the run's image has no pdftoppm", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-pdf-noconv-"));
    const run = runFolder(dir, "scifi-base:bookworm");
    writeSnapshot(run, await snapshotTaskFolder(dir, "start"), "start");
    writeFileSync(join(dir, "paper.pdf"), minimalPdf());
    const end = await endSnapshotWithPdfPages(dir, run);
    expect(end.files["paper.pdf"]?.pdfPage).toBeUndefined();
    expect(end.files["paper.pdf"]?.pdfNote).toBe(NO_CONVERTER);
    const view = changesView({ start: { label: "start", takenAt: "", files: {} }, iterations: [], end });
    const paper = view.overall?.files.find((f) => f.path === "paper.pdf");
    expect(paper?.note).toMatch(/binary/);
    expect(paper?.pdfNote).toContain("no converter in the image");
  }, 300_000);

  it("says why when the sandbox cannot start (an image that does not exist)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-pdf-noimage-"));
    const run = runFolder(dir, "scifi-no-such-image:none");
    writeSnapshot(run, await snapshotTaskFolder(dir, "start"), "start");
    writeFileSync(join(dir, "paper.pdf"), minimalPdf());
    const end = await endSnapshotWithPdfPages(dir, run);
    expect(end.files["paper.pdf"]?.pdfNote).toMatch(/^not rendered: /);
  }, 300_000);
});
