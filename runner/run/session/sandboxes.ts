// The per-phase sandboxes. Each phase that runs commands gets a fresh sandbox of its own, from a
// grant resolved again from the parsed SAM and the site policy (never replayed from the recorded
// spec), shaped for its role (the checks' and the review's see less), and stopped when the phase
// ends, whatever happens: the checks and the review never run where the work agent ran.
import { join } from "node:path";
import {
  type MountSpec,
  type SandboxIdentity,
  type SandboxSpec,
  sandboxName,
  TASK_MOUNT,
} from "../../policy/spec.ts";
import { interruptionOf, RunEnding } from "../../run-ending.ts";
import type { PristineSet } from "../../run-folder/state.ts";
import type { Sandbox } from "../../sandbox/types.ts";
import { boundAssetFolders } from "../checks/check-views.ts";
import { GrantChanged, grantDifferences } from "../gates/grant.ts";
import type { RunContext } from "./context.ts";
import { messageOf } from "./outcomes.ts";
import { revivable } from "./revive.ts";

/** Where a compare stage finds the run stages' outputs, inside its working folder. */
export const COMPARE_OUTPUTS = "outputs";

export type SandboxRole = "work" | "checks" | "compare" | "review" | "critique";

/** Roles whose sandbox must be gone before the next one starts: each check shares nothing. */
const ISOLATED_ROLES: ReadonlySet<SandboxRole> = new Set(["checks", "compare"]);

/** How a phase's sandbox differs: its check stage, and a folder mounted at /task instead of the task folder. */
export interface PhaseOptions {
  /** A check stage's index among the sandboxes of its role (0: the first); part of its identity. */
  stage?: number;
  taskCopy?: string;
  /**
   * A run stage's check asset folders, built by the runner from its pristine copies
   * (check-views.ts): bound read-only at their task-folder paths. Required for the `checks` role.
   */
  assets?: string;
}

export class PhaseSandboxes {
  readonly #session: RunContext;
  /** The network a sandbox starts with, after the gates (gates.ts `network`). */
  readonly #network: (spec: SandboxSpec, role: SandboxRole) => Promise<SandboxSpec>;
  constructor(session: RunContext, network: (spec: SandboxSpec, role: SandboxRole) => Promise<SandboxSpec>) {
    this.#session = session;
    this.#network = network;
  }

  /** A sandbox for one phase, stopped when `use` ends; it survives a death from outside, and any it caused itself (revive.ts). */
  async use<T>(
    role: SandboxRole,
    phase: PhaseOptions,
    use: (sandbox: Sandbox) => Promise<T>,
    /** The phase's sandbox, already starting (`open` called ahead, e.g. while the check before ran). */
    opening?: Promise<Sandbox>,
  ): Promise<T> {
    const { history, state } = this.#session;
    const sandbox = revivable(await (opening ?? this.open(role, phase)), {
      open: () => this.open(role, phase),
      // A signal's stop (live.ts stops every sandbox at once): the run's own doing, not a death.
      stopping: () => interruptionOf(this.#session.stop.signal),
      onDeath: (deaths, detail, inside) => {
        history.append({
          type: "sandbox_died",
          iteration: state.iteration,
          phase: role,
          deaths,
          detail,
          ...(inside ? { inside: true } : {}),
        });
      },
    });
    let result: T;
    try {
      result = await use(sandbox);
    } catch (error) {
      await this.#stop(sandbox, role);
      throw error;
    }
    if (!(await this.#stop(sandbox, role)) && ISOLATED_ROLES.has(role)) {
      // Its processes may still be alive: the next check would not start where nothing of this one runs.
      throw new RunEnding(`a ${role} sandbox did not stop: no further check runs beside what it left`, {
        status: "failed",
        limit: "sandbox_stop",
        prefix: "checks",
      });
    }
    return result;
  }

  /**
   * A sandbox opened ahead and never used (the check before it ended the phase): stopped, a failed
   * stop on the record like any other; one that failed to start has nothing to stop.
   */
  async discard(opening: Promise<Sandbox>, role: SandboxRole): Promise<void> {
    const sandbox = await opening.catch(() => undefined);
    if (sandbox) await this.#stop(sandbox, role);
  }

  /** Stops a phase's sandbox; false (and on the record) when it did not stop cleanly. */
  async #stop(sandbox: Sandbox, role: SandboxRole): Promise<boolean> {
    const { history, state } = this.#session;
    // A stop that failed (the folder not given back, a setuid sweep undone) is on the record: the
    // phase's result stands, but a person reading the run must see it.
    return sandbox.stop().then(
      () => true,
      (error: unknown) => {
        history.append({
          type: "limit",
          iteration: state.iteration,
          limit: "sandbox_stop",
          detail: `the ${role} sandbox did not stop cleanly: ${messageOf(error)}`,
        });
        return false;
      },
    );
  }

  /** Starts a sandbox for `role`; the caller stops it. */
  async open(role: SandboxRole, phase: PhaseOptions = {}): Promise<Sandbox> {
    const { state, deps, sam } = this.#session;
    const identity: SandboxIdentity = {
      runId: state.runId,
      role,
      iteration: state.iteration,
      resumes: state.resumes,
      ...(phase.stage ? { stage: phase.stage } : {}),
    };
    const name = sandboxName({ runId: state.runId, sandbox: identity });
    // Resolved for the run (its labels and environment name the run), started under the phase's name.
    const granted = await deps.resolveSpec(sam, state.runId, {
      ...(state.taskFolderBaseBytes !== undefined ? { taskFolderBaseBytes: state.taskFolderBaseBytes } : {}),
    });
    const changes = grantDifferences(this.#session.spec, granted);
    if (changes.length > 0) throw new GrantChanged(name, changes);
    const shaped = phaseSpec(granted, role, state.pristine, phase.assets);
    const spec = await this.#network(shaped, role);
    return deps.backend.start({
      ...(phase.taskCopy ? onCopy(spec, phase.taskCopy) : spec),
      runId: state.runId,
      sandbox: identity,
    });
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
 * The work sandbox gets the grant as resolved. A check sandbox (a run stage) sees every declared
 * mount read-only (a `rw` one included: the check's writes must not outlive it), and gets whole asset
 * folders bound read-only from `assets`, the runner's folder built from its pristine copies (never
 * from a task-folder path the agent could have moved), no network, and a HOME that does not exist,
 * so no hook in a home folder (`usercustomize.py`, `.Rprofile`, `.profile`) runs; it never sees
 * hidden assets. A compare sandbox gets no task folder at all: its /task is the
 * runner-built folder (stages.ts) with the outputs bound read-only, no scratch, and no mount inside
 * the task folder.
 * The review and the critique's tracer see the task folder (and every other mount) read-only.
 */
export function phaseSpec(
  spec: SandboxSpec,
  role: SandboxRole,
  pristine: PristineSet,
  assets?: string,
): SandboxSpec {
  if (role === "work") return spec;
  const closed = { ...spec, network: false, networkRules: undefined };
  if (role === "checks") {
    const folders: MountSpec[] = boundAssetFolders(pristine).map((f) => {
      if (assets === undefined) {
        throw new Error(`a check sandbox needs the runner's asset folder to bind ${f} from`);
      }
      return {
        source: join(assets, f),
        target: `${TASK_MOUNT}/${f}`,
        readOnly: true,
        reason: "check asset folder (the runner's copy)",
      };
    });
    // Every mount outside the task folder read-only, a declared `rw` one too: what a run stage wrote
    // there would outlive its sandbox and reach the next check, the compare stage and the review.
    // Inside the task folder, mounts move onto this check's own view (onCopy).
    const inTask = (path: string) => path === spec.taskDir || path.startsWith(`${spec.taskDir}/`);
    const mounts = spec.mounts.map((m) => (inTask(m.source) ? m : { ...m, readOnly: true }));
    return { ...closed, mounts: [...mounts, ...folders], env: { ...spec.env, ...CHECK_ENV } };
  }
  if (role === "compare") {
    const inTask = (path: string) => path === spec.taskDir || path.startsWith(`${spec.taskDir}/`);
    const { scratch: _scratch, taskFolderQuota: _quota, ...rest } = closed;
    // The runner's folder is the working folder (a compiler may write its module files there); the
    // outputs in it are bound read-only (their files have no exec bit), other mounts read-only.
    const outputs: MountSpec = {
      source: join(spec.taskDir, COMPARE_OUTPUTS),
      target: `${TASK_MOUNT}/${COMPARE_OUTPUTS}`,
      readOnly: true,
      reason: "the run stages' declared outputs",
    };
    return {
      ...rest,
      mounts: [
        ...spec.mounts
          .filter((m) => m.target === TASK_MOUNT || !inTask(m.source))
          .map((m) => (m.target === TASK_MOUNT ? m : { ...m, readOnly: true })),
        outputs,
      ],
      env: { ...spec.env, ...CHECK_ENV },
    };
  }
  return { ...closed, mounts: spec.mounts.map((m) => ({ ...m, readOnly: true })) };
}

/** The same spec with the task folder (and every mount source inside it) moved to `copy`. */
function onCopy(spec: SandboxSpec, copy: string): SandboxSpec {
  const moved = (path: string) =>
    path === spec.taskDir || path.startsWith(`${spec.taskDir}/`)
      ? copy + path.slice(spec.taskDir.length)
      : path;
  return { ...spec, taskDir: copy, mounts: spec.mounts.map((m) => ({ ...m, source: moved(m.source) })) };
}
