// A run stage's asset folders come from the runner's pristine copies by content, never from a
// task-folder path (issue 37, class 2): what check-views.ts builds and what the check sandbox binds.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { boundAssetFolders, buildCheckAssets } from "../../../runner/run/checks/check-views.ts";
import { phaseSpec } from "../../../runner/run/session/sandboxes.ts";
import type { PristineSet } from "../../../runner/run-folder/state.ts";
import { taskFolderSpec } from "../../helpers/spec.ts";

const root = mkdtempSync(join(tmpdir(), "scifi-check-views-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const file = (rel: string, hidden = false, mode = 0o644) => ({
  rel,
  kind: "asset" as const,
  hidden,
  sha256: "",
  mode,
});
const pristine: PristineSet = {
  files: [
    file("tools/verify/verify.py", false, 0o755),
    file("tools/verify/data/ref.txt"),
    file("tools/verify/secret.txt", true),
    file("loose.txt"),
    { ...file("task.md"), kind: "sam" },
  ],
  folders: ["tools/verify", "tools/verify/data"],
};

function pristineDir(): string {
  const dir = join(root, "pristine");
  for (const f of pristine.files) {
    mkdirSync(join(dir, f.rel, ".."), { recursive: true });
    writeFileSync(join(dir, f.rel), `runner's ${f.rel}\n`);
  }
  return dir;
}

describe("check asset folders from the runner's copies", () => {
  it("holds the non-hidden assets of each asset-only folder, by content, readable by the sandbox", () => {
    const dest = join(root, "assets");
    mkdirSync(join(dest, "stale"), { recursive: true }); // an earlier check's: gone
    buildCheckAssets(dest, pristineDir(), pristine);
    expect(readdirSync(dest)).toEqual(["tools"]);
    expect(readdirSync(join(dest, "tools", "verify")).sort()).toEqual(["data", "verify.py"]);
    expect(readFileSync(join(dest, "tools/verify/data/ref.txt"), "utf8")).toBe(
      "runner's tools/verify/data/ref.txt\n",
    );
    expect((statSync(join(dest, "tools/verify/verify.py")).mode & 0o777).toString(8)).toBe("755");
    expect((statSync(join(dest, "tools/verify/data/ref.txt")).mode & 0o777).toString(8)).toBe("644");
    expect((statSync(join(dest, "tools/verify")).mode & 0o777).toString(8)).toBe("755");
  });

  it("the check sandbox binds the outermost asset folder read-only from there, not from the task folder", () => {
    const spec = taskFolderSpec({ runId: "r", image: "scifi-sci:local", taskDir: "/work/task" });
    expect(boundAssetFolders(pristine)).toEqual(["tools/verify"]);
    const shaped = phaseSpec(spec, "checks", pristine, "/runs/r/check-assets");
    const binds = shaped.mounts.filter((m) => m.target.startsWith("/task/"));
    expect(binds).toEqual([
      expect.objectContaining({
        source: "/runs/r/check-assets/tools/verify",
        target: "/task/tools/verify",
        readOnly: true,
      }),
    ]);
    expect(() => phaseSpec(spec, "checks", pristine)).toThrow(/needs the runner's asset folder/);
  });

  it("a declared rw mount is the work's to write, read-only in a run stage (its writes would reach the next check)", () => {
    const base = taskFolderSpec({ runId: "r", image: "scifi-sci:local", taskDir: "/work/task" });
    const shared = {
      source: "/data/shared",
      target: "/shared",
      readOnly: false,
      reason: "declared mount (line 5)",
    };
    const spec = { ...base, mounts: [...base.mounts, shared] };
    expect(phaseSpec(spec, "work", pristine).mounts).toContainEqual(shared);
    const checks = phaseSpec(spec, "checks", pristine, "/runs/r/check-assets").mounts;
    expect(checks).toContainEqual({ ...shared, readOnly: true });
    // The task folder itself stays writable: the check's own view of it (moved onto the copy).
    expect(checks.find((m) => m.target === "/task")?.readOnly).toBe(false);
    expect(phaseSpec(spec, "review", pristine).mounts).toContainEqual({ ...shared, readOnly: true });
  });
});
