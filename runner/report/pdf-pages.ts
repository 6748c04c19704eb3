// The first page of each PDF a run created or changed, for the report's Changes section. A PDF in
// the task folder is the agent's, so it is never parsed on the host: the end snapshot hands over the
// bytes of the changed PDFs (at most MAX_PDFS, each at most MAX_PDF_BYTES), and one fresh sandbox of
// the run's own backend and image, with no network and no task folder (an empty folder, read-only,
// in its place), renders each with poppler's pdftoppm under a timeout. The PNG read back (capped) is
// stored with the PDF's entry in the end snapshot; an image without pdftoppm gets a note instead.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runFiles } from "../paths.ts";
import { type SandboxSpec, TASK_MOUNT } from "../policy/spec.ts";
import type { Sandbox, SandboxBackend } from "../sandbox/types.ts";
import { changesDir, MAX_IMAGE_BYTES, type Snapshot, snapshotTaskFolder } from "./changes.ts";

/** PDFs rendered per run, and the largest one rendered. */
export const MAX_PDFS = 5;
export const MAX_PDF_BYTES = 20 * 1024 * 1024;
/** The largest first page (PNG) kept. */
export const MAX_PAGE_BYTES = MAX_IMAGE_BYTES;
/** How long pdftoppm may take for one PDF. */
export const PDF_TIMEOUT_MS = 60_000;
/** All the PDFs of a run together: past it the rest are listed, not rendered (the run is over). */
export const PDF_BUDGET_MS = 90_000;
export const NO_CONVERTER = "no converter in the image (pdftoppm, poppler-utils)";

const PNG_MAGIC = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);

/**
 * The end snapshot of `taskDir` (with small images), the first pages of the PDFs the run created or
 * changed added to their entries. Never throws for what the PDFs or the sandbox do: a page that
 * cannot be rendered is a note. `backend`: the run's own, or its name (default: the one state.json
 * names).
 */
export async function endSnapshotWithPdfPages(
  taskDir: string,
  runDir: string,
  backend?: SandboxBackend | string,
): Promise<Snapshot> {
  const found = new Map<string, Buffer>();
  const since = readJson<Snapshot>(join(changesDir(runDir), "start.json"));
  const end = await snapshotTaskFolder(taskDir, "end", {
    images: true,
    pdfs: { since, max: MAX_PDFS, maxBytes: MAX_PDF_BYTES, found },
  });
  if (found.size === 0) return end;
  const pages = await renderFirstPages(runDir, found, backend).catch(
    (error: Error) =>
      new Map([...found.keys()].map((rel) => [rel, { note: `not rendered: ${oneLine(error.message)}` }])),
  );
  for (const [rel, page] of pages) {
    const entry = end.files[rel];
    if (!entry) continue;
    if ("png" in page) entry.pdfPage = { mime: "image/png", base64: page.png.toString("base64") };
    else entry.pdfNote = page.note;
  }
  return end;
}

export type PageResult = { png: Buffer } | { note: string };

/** Renders the first page of each PDF in one sandbox like the run's (its image, no network). */
export async function renderFirstPages(
  runDir: string,
  pdfs: Map<string, Buffer>,
  backend?: SandboxBackend | string,
): Promise<Map<string, PageResult>> {
  const results = new Map<string, PageResult>();
  const all = (note: string): Map<string, PageResult> => {
    for (const rel of pdfs.keys()) results.set(rel, { note });
    return results;
  };
  const files = runFiles(runDir);
  const granted = readJson<SandboxSpec>(files.spec);
  const backendName = readJson<{ backend?: string }>(files.state)?.backend;
  if (!granted) return all("not rendered: the run's spec.json is missing");
  const empty = mkdtempSync(join(tmpdir(), "scifi-pdf-pages-"));
  let sandbox: Sandbox | undefined;
  try {
    chmodSync(empty, 0o755);
    const engine =
      typeof backend === "object" ? backend : await backendByName(backend ?? backendName ?? "docker");
    sandbox = await engine.start(pagesSpec(granted, empty));
    const probe = await sandbox.exec(["sh", "-c", "command -v pdftoppm"], { cwd: "/tmp", timeoutMs: 30_000 });
    if (probe.exitCode !== 0) return all(NO_CONVERTER);
    // A hostile PDF takes pdftoppm its whole timeout: the report waits for all of them at most this.
    const deadline = Date.now() + PDF_BUDGET_MS;
    for (const [rel, bytes] of pdfs) {
      const left = deadline - Date.now();
      results.set(
        rel,
        left < 1_000
          ? { note: `not rendered: the first pages of a run's PDFs get ${PDF_BUDGET_MS / 1000} s in all` }
          : await renderOne(sandbox, bytes, Math.min(PDF_TIMEOUT_MS, left)),
      );
    }
    return results;
  } catch (error) {
    return all(`not rendered: ${oneLine((error as Error).message)}`);
  } finally {
    await sandbox?.stop().catch(() => undefined);
    rmSync(empty, { recursive: true, force: true });
  }
}

/**
 * The page sandbox: the run's image, user and limits (smaller), its home (for prune), none of its
 * mounts, no network, no GPU, an empty read-only folder where the task folder would be.
 */
function pagesSpec(granted: SandboxSpec, empty: string): SandboxSpec {
  return {
    runId: `${granted.runId}-pdfpages`,
    image: granted.image,
    user: granted.user,
    taskDir: empty,
    workdir: TASK_MOUNT,
    mounts: [{ source: empty, target: TASK_MOUNT, readOnly: true, reason: "empty folder (PDF first pages)" }],
    network: false,
    gpus: 0,
    cpus: Math.max(1, Math.min(granted.cpus, 2)),
    memoryBytes: Math.min(granted.memoryBytes, 2 * 1024 ** 3),
    pidsLimit: Math.min(granted.pidsLimit, 256),
    walltimeSec: 600,
    env: {},
    labels: granted.labels,
    ...(granted.home !== undefined ? { home: granted.home } : {}),
  };
}

async function renderOne(sandbox: Sandbox, pdf: Buffer, timeoutMs: number): Promise<PageResult> {
  try {
    await sandbox.exec(["rm", "-f", "/tmp/in.pdf", "/tmp/page.png"], { cwd: "/tmp", timeoutMs: 30_000 });
    await sandbox.writeFile("/tmp/in.pdf", pdf);
    const argv = ["pdftoppm", "-f", "1", "-l", "1", "-png", "-scale-to", "800", "-singlefile"];
    const r = await sandbox.exec([...argv, "/tmp/in.pdf", "/tmp/page"], {
      cwd: "/tmp",
      timeoutMs,
      maxOutputBytes: 16 * 1024,
    });
    if (r.timedOut) return { note: `pdftoppm took longer than ${Math.round(timeoutMs / 1000)} s` };
    if (r.exitCode !== 0)
      return { note: `pdftoppm failed (exit ${r.exitCode}): ${oneLine(r.stderr) || "no message"}` };
    const size = await sandbox.exec(["stat", "-c", "%s", "/tmp/page.png"], {
      cwd: "/tmp",
      timeoutMs: 30_000,
    });
    const bytes = Number(size.stdout.trim());
    if (size.exitCode !== 0 || !Number.isFinite(bytes)) return { note: "pdftoppm wrote no page" };
    if (bytes > MAX_PAGE_BYTES) return { note: `the first page is larger than ${MAX_PAGE_BYTES} bytes` };
    const png = await sandbox.readFile("/tmp/page.png");
    if (png.length > MAX_PAGE_BYTES) return { note: `the first page is larger than ${MAX_PAGE_BYTES} bytes` };
    if (!png.subarray(0, 8).equals(PNG_MAGIC)) return { note: "pdftoppm wrote no PNG" };
    return { png };
  } catch (error) {
    return { note: `not rendered: ${oneLine((error as Error).message)}` };
  }
}

async function backendByName(name: string): Promise<SandboxBackend> {
  const { getBackend } = await import("../sandbox/registry.ts");
  return getBackend(name);
}

function readJson<T>(file: string): T | undefined {
  try {
    return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as T) : undefined;
  } catch {
    return undefined;
  }
}

function oneLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
