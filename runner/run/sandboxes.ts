// The per-phase sandboxes. Each phase that runs commands gets a fresh sandbox of its own, from a
// grant resolved again from the parsed SAM and the site policy (never replayed from the recorded
// spec), shaped for its role (the checks' and the review's see less), and stopped when the phase
// ends, whatever happens: the checks and the review never run where the work agent ran.
import { join } from "node:path";
import { type MountSpec, type SandboxSpec, TASK_MOUNT } from "../policy/spec.ts";
import type { PristineSet } from "../run-folder/state.ts";
import type { Sandbox } from "../sandbox/types.ts";
import type { RunContext } from "./context.ts";
import { GrantChanged, grantDifferences } from "./grant.ts";
import { revivable } from "./revive.ts";

export type SandboxRole = "work" | "checks" | "review";

/** How a phase's sandbox differs: its name, a copy of the task folder, whether it sees hidden assets. */
export interface PhaseOptions {
  name?: string;
  taskCopy?: string;
  seesHidden?: boolean;
}

export class PhaseSandboxes {
  readonly #session: RunContext;
  /** The network a sandbox starts with, after the gates (gates.ts `network`). */
  readonly #network: (spec: SandboxSpec, role: SandboxRole) => Promise<SandboxSpec>;
  constructor(session: RunContext, network: (spec: SandboxSpec, role: SandboxRole) => Promise<SandboxSpec>) {
    this.#session = session;
    this.#network = network;
  }

  /** A sandbox for one phase, stopped when `use` ends; it survives one death (revive.ts). */
  async use<T>(role: SandboxRole, phase: PhaseOptions, use: (sandbox: Sandbox) => Promise<T>): Promise<T> {
    const { history, state } = this.#session;
    const sandbox = revivable(await this.open(role, phase), {
      open: () => this.open(role, phase),
      onDeath: (deaths, detail) => {
        history.append({ type: "sandbox_died", iteration: state.iteration, phase: role, deaths, detail });
      },
    });
    try {
      return await use(sandbox);
    } finally {
      await sandbox.stop().catch(() => undefined);
    }
  }

  /** Starts a sandbox for `role`; the caller stops it. */
  async open(role: SandboxRole, phase: PhaseOptions = {}): Promise<Sandbox> {
    const { state, deps, sam } = this.#session;
    const resumed = state.resumes > 0 ? `-r${state.resumes}` : "";
    const name = `${state.runId}${resumed}-${phase.name ?? role}${state.iteration}`;
    // Resolved for the run (its labels and environment name the run), started under the phase's name.
    const granted = await deps.resolveSpec(sam, state.runId, {
      ...(state.taskFolderBaseBytes !== undefined ? { taskFolderBaseBytes: state.taskFolderBaseBytes } : {}),
    });
    const changes = grantDifferences(this.#session.spec, granted);
    if (changes.length > 0) throw new GrantChanged(name, changes);
    const shaped = phaseSpec(granted, role, state.pristine, phase.seesHidden === true);
    const spec = await this.#network(shaped, role);
    return deps.backend.start({ ...(phase.taskCopy ? onCopy(spec, phase.taskCopy) : spec), runId: name });
  }
}

/** The check sandbox's environment on top of the grant's: no writable home, no Python user site or cwd import. */
const CHECK_ENV = {
  HOME: "/nonexistent",
  PYTHONNOUSERSITE: "1",
  PYTHONDONTWRITEBYTECODE: "1",
  // Neither the working folder (/task, the agent's) nor the script's folder goes first on
  // sys.path, so no module the agent wrote shadows the standard library in a Python check.
  PYTHONSAFEPATH: "1",
};

/**
 * The work sandbox gets the grant as resolved. The check sandbox also gets the hidden assets and
 * whole asset folders bound read-only (a check that runs the agent's code cannot plant a module
 * beside an asset for the next check), no network, and a HOME that does not exist, so no hook in
 * a home folder (`usercustomize.py`, `.Rprofile`, `.profile`) that agent code wrote during one
 * check runs in the next. The review sees the task folder read-only.
 */
export function phaseSpec(
  spec: SandboxSpec,
  role: SandboxRole,
  pristine: PristineSet,
  seesHidden = false,
): SandboxSpec {
  if (role === "work") return spec;
  if (role === "checks") {
    const readOnly = (rel: string, reason: string): MountSpec => ({
      source: join(spec.taskDir, rel),
      target: `${TASK_MOUNT}/${rel}`,
      readOnly: true,
      reason,
    });
    const folders = pristine.folders
      .filter((f) => !pristine.folders.some((outer) => f.startsWith(`${outer}/`)))
      .map((f) => readOnly(f, "check asset folder"));
    const hidden = seesHidden
      ? pristine.files.filter((f) => f.hidden).map((f) => readOnly(f.rel, "hidden check asset"))
      : [];
    // Checks that see hidden assets get the task folder (the checks' copy) read-only: nothing they
    // write there (a diff against the reference) can reach a later check that runs the agent's code.
    const mounts = seesHidden
      ? spec.mounts.map((m) => (m.target === TASK_MOUNT ? { ...m, readOnly: true } : m))
      : spec.mounts;
    return {
      ...spec,
      network: false,
      networkRules: undefined,
      mounts: [...mounts, ...folders, ...hidden],
      env: { ...spec.env, ...CHECK_ENV },
    };
  }
  return {
    ...spec,
    network: false,
    networkRules: undefined,
    mounts: spec.mounts.map((m) => ({ ...m, readOnly: true })),
  };
}

/** The same spec with the task folder (and every mount source inside it) moved to `copy`. */
function onCopy(spec: SandboxSpec, copy: string): SandboxSpec {
  const moved = (path: string) =>
    path === spec.taskDir || path.startsWith(`${spec.taskDir}/`)
      ? copy + path.slice(spec.taskDir.length)
      : path;
  return { ...spec, taskDir: copy, mounts: spec.mounts.map((m) => ({ ...m, source: moved(m.source) })) };
}
