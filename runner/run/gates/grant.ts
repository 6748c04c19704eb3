// Every sandbox start derives its grant again from the parsed SAM and the site policy; the spec
// recorded at run start is evidence, never input. When the two differ (a mount source turned into a
// link, the site policy changed, the image changed), the sandbox is not started and the run says what
// changed, instead of binding a path that now means something else.
import type { SandboxSpec } from "../../policy/spec.ts";
import { RunEnding } from "../../run-ending.ts";

export class GrantChanged extends RunEnding {
  override name = "GrantChanged";
  readonly changes: readonly string[];
  constructor(sandbox: string, changes: readonly string[]) {
    super(
      `the grant resolved for sandbox ${sandbox} differs from the one recorded at run start: ${changes.join("; ")}. ` +
        "Nothing was started. If the change is intended, start the task again (a new run records the new grant).",
      { status: "failed", limit: "grant", prefix: "grant" },
    );
    this.changes = changes;
  }
}

/** The parts of a spec that grant something; names, labels and the run id differ by design. */
const GRANT_KEYS = [
  "image",
  "user",
  "taskDir",
  "workdir",
  "network",
  "networkRules",
  "openNetwork",
  "gpus",
  "cpus",
  "memoryBytes",
  "pidsLimit",
  "scratch",
  "walltimeSec",
] as const;

/** What differs between the recorded grant and a freshly resolved one, in words. */
export function grantDifferences(recorded: SandboxSpec, fresh: SandboxSpec): string[] {
  const changes: string[] = [];
  for (const key of GRANT_KEYS) {
    const was = JSON.stringify(recorded[key] ?? null);
    const now = JSON.stringify(fresh[key] ?? null);
    if (was !== now) changes.push(`${key} was ${was}, now ${now}`);
  }
  const describe = (m: SandboxSpec["mounts"][number]) =>
    `${m.source} -> ${m.target} (${m.readOnly ? "ro" : "rw"})`;
  const was = new Set(recorded.mounts.map(describe));
  const now = new Set(fresh.mounts.map(describe));
  for (const mount of now) if (!was.has(mount)) changes.push(`new mount ${mount}`);
  for (const mount of was) if (!now.has(mount)) changes.push(`mount ${mount} is gone`);
  return changes;
}
