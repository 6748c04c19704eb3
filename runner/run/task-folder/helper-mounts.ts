// A domain pack's helper registry (runner/skills: `helpers:`) is mounted read-only into the run's
// sandboxes at /opt/scifi/helpers/<skill>. The folder is the site's skill library, not the agent's;
// it is resolved to its real path (no link left in it) each time the grant is resolved, so the
// grant comparison before every sandbox start sees the same mount or names the change.
import { realpathSync } from "node:fs";
import type { SandboxSpec } from "../../policy/spec.ts";
import { helpersMount } from "../../skills/types.ts";

export interface HelperFolder {
  name: string;
  dir: string;
}

export function withHelperMounts(spec: SandboxSpec, helpers: readonly HelperFolder[]): SandboxSpec {
  if (helpers.length === 0) return spec;
  return {
    ...spec,
    mounts: [
      ...spec.mounts,
      ...helpers.map((h) => ({
        source: realpathSync(h.dir),
        target: helpersMount(h.name),
        readOnly: true,
        reason: `helper registry of skill ${h.name}`,
      })),
    ],
  };
}
