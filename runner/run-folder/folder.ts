// The run folder `runs/<runId>/`: SAM copy and hash, parsed SAM, granted spec, state, history,
// audit and task memory (file names: runFiles in runner/paths.ts). Records live outside the task
// folder, out of the agent's reach. A leaf with state.ts: the run creates the folder, the report
// and the CLI open it, and none of them needs the loop for that.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { runDir, runFiles } from "../paths.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import type { SamDocument } from "../sam/types.ts";

export interface RunFolder {
  dir: string;
  files: ReturnType<typeof runFiles>;
}

export function openRunFolder(home: string, runId: string): RunFolder {
  const dir = runDir(home, runId);
  return { dir, files: runFiles(dir) };
}

/** Creates the folder and writes the byte copies, the parsed SAM and the spec. */
export function createRunFolder(home: string, runId: string, sam: SamDocument, spec: SandboxSpec): RunFolder {
  const folder = openRunFolder(home, runId);
  mkdirSync(folder.dir, { recursive: true, mode: 0o700 });
  copyFileSync(sam.file, folder.files.sam);
  writeFileSync(join(folder.dir, "sam.sha256"), `${sam.sha256}  ${basename(sam.file)}\n`);
  const subFiles = sam.files.filter((f) => f.file !== sam.file);
  if (subFiles.length > 0) {
    mkdirSync(join(folder.dir, "sam"), { recursive: true });
    for (const [index, f] of subFiles.entries())
      copyFileSync(f.file, join(folder.dir, "sam", `${index + 1}-${basename(f.file)}`));
  }
  writeFileSync(folder.files.samJson, `${JSON.stringify(sam, null, 2)}\n`);
  writeFileSync(folder.files.spec, `${JSON.stringify(spec, null, 2)}\n`);
  return folder;
}

export function readSamJson(folder: RunFolder): SamDocument {
  return JSON.parse(readFileSync(folder.files.samJson, "utf8")) as SamDocument;
}

export function readSpecJson(folder: RunFolder): SandboxSpec {
  return JSON.parse(readFileSync(folder.files.spec, "utf8")) as SandboxSpec;
}
