// The report's PDF first pages on Apptainer, INSIDE the harness as the non-root user: pdftoppm runs
// in a fresh instance of the run's image (no network, an empty read-only folder at /task) and the
// page comes back as a PNG; a broken PDF gets a note. The Docker side is test/report/pdf-pages.test.ts.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runFiles } from "../../../runner/paths.ts";
import { renderFirstPages } from "../../../runner/report/pdf-pages.ts";
import { createApptainerBackend } from "../../../runner/sandbox/apptainer.ts";
import { minimalPdf } from "../../report/pdf.ts";
import { decodePng } from "../../report/png.ts";
import { taskSpec } from "./fixtures.ts";

describe("PDF first pages (apptainer, inside the harness)", { timeout: 300_000 }, () => {
  it("renders the first page in an instance of the run's image, and notes a broken PDF", async () => {
    const spec = await taskSpec({ image: "scifi-sci:local" });
    const runDir = mkdtempSync(join(tmpdir(), "scifi-pdf-run-"));
    writeFileSync(runFiles(runDir).spec, JSON.stringify(spec));
    writeFileSync(runFiles(runDir).state, JSON.stringify({ backend: "apptainer" }));
    const pages = await renderFirstPages(
      runDir,
      new Map([
        ["fit.pdf", minimalPdf()],
        ["broken.pdf", Buffer.from("%PDF-1.4\nnot really\n")],
      ]),
      createApptainerBackend(),
    );
    const page = pages.get("fit.pdf");
    if (!page || !("png" in page)) throw new Error(`no page: ${JSON.stringify(page)}`);
    const png = decodePng(page.png);
    expect(Math.max(png.width, png.height)).toBe(800);
    expect(pages.get("broken.pdf")).toMatchObject({ note: expect.stringMatching(/pdftoppm failed/) });
  });
});
