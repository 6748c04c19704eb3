// The host's view of an instance's processes (from /proc): its PID-namespace init, the tree of an
// exec, and the kill of a timed-out exec with everything it started (orphans and fork bombs too).
import { readdir, readFile, readlink } from "node:fs/promises";
import { type BackendContext, runApptainer } from "./engine.ts";

/** Tasks (threads included, as RLIMIT_NPROC counts them) in the user namespace `userNs`. */
export async function countNamespaceTasks(userNs: string): Promise<number> {
  let tasks = 0;
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const ns = await readlink(`/proc/${entry}/ns/user`).catch(() => "");
    if (ns !== userNs) continue;
    const status = await readFile(`/proc/${entry}/status`, "latin1").catch(() => "");
    tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  }
  return tasks;
}

/** pid -> parent pid of every process, from /proc/PID/stat (which never waits on the target's memory). */
export async function processParents(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "latin1").catch(() => "");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (Number.isFinite(ppid)) parents.set(Number(entry), ppid);
  }
  return parents;
}

export function descendantsOf(roots: Iterable<number>, parents: Map<number, number>): Set<number> {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parents) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const found = new Set<number>();
  const queue = [...roots];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    if (found.has(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/**
 * Kills a timed-out exec: the apptainer process and all it started, plus every orphan in the
 * instance (processes that left their parent, setsid daemons, fork-bomb debris are re-parented to
 * the namespace init). A fork bomb forks while we kill, so first freeze (SIGSTOP) in sweeps until no
 * new process appears, then SIGKILL the frozen set.
 */
export async function killExecTree(rootPid: number, init: NsInit | undefined): Promise<void> {
  const frozen = new Set<number>();
  for (let sweep = 0; sweep < 100; sweep++) {
    const parents = await processParents();
    const orphanRoots = init
      ? [...parents].filter(([p, pp]) => pp === init.pid && !init.own.has(p)).map(([p]) => p)
      : [];
    const targets = descendantsOf([rootPid, ...orphanRoots], parents);
    const fresh = [...targets].filter((pid) => !frozen.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signalQuietly(pid, "SIGSTOP");
      frozen.add(pid);
    }
  }
  for (const pid of frozen) signalQuietly(pid, "SIGKILL");
}

export interface NsInit {
  /** Host pid of the process that is pid 1 in the instance's PID namespace. */
  pid: number;
  /** Its children when the instance started (e.g. a start script): never killed as orphans. */
  own: Set<number>;
  /** Tasks in the instance's user namespace at start (init, FUSE helpers): the NPROC baseline. */
  baseTasks: number;
  /** The init's threads (host ids) whose /proc entry is masked inside (sealInstance). */
  sealed: Set<string>;
  /** Whether sealInstance has worked once (then new threads are masked before each exec). */
  sealedOnce?: boolean;
}

/** Finds the instance's PID-namespace init: the host pid whose NSpid ends in 1 in its tree. */
export async function findNsInit(ctx: BackendContext, name: string): Promise<NsInit | undefined> {
  const r = await runApptainer(ctx, ["instance", "list", "--json", name], 30_000).catch(() => undefined);
  const listed = (JSON.parse(r?.stdout || "{}") as { instances?: { pid: number }[] }).instances?.[0]?.pid;
  if (listed === undefined) return undefined;
  const parents = await processParents();
  for (const pid of descendantsOf([listed], parents)) {
    const status = await readFile(`/proc/${pid}/status`, "latin1").catch(() => "");
    const nspid = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    if (nspid && nspid.length > 1 && nspid.at(-1) === "1") {
      const own = new Set([...parents].filter(([, pp]) => pp === pid).map(([p]) => p));
      const userNs = await readlink(`/proc/${pid}/ns/user`).catch(() => "");
      return {
        pid,
        own,
        baseTasks: userNs ? await countNamespaceTasks(userNs) : 0,
        sealed: new Set<string>(),
      };
    }
  }
  return undefined;
}

export function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already, or not ours
  }
}
