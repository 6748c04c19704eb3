// Host paths that are never mounted into a sandbox, whatever the SAM or the site policy says.
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { homePaths } from "../paths.ts";

export interface DeniedPath {
  path: string;
  /** Why, in words: `the system folder /etc`. */
  why: string;
  /** Whether a path inside it is denied too (false only for `/`, which holds everything). */
  inside: boolean;
  /** A task folder may lie inside it (evals/: each trial runs on its own copy in there). */
  holdsTaskFolders?: true;
}

const SYSTEM_FOLDERS = ["/etc", "/proc", "/sys", "/dev", "/boot", "/root"];
const ENGINE_SOCKETS = [
  "/var/run/docker.sock",
  "/run/docker.sock",
  "/run/containerd",
  "/var/run/containerd",
  "/run/podman",
  "/var/run/podman",
  "/run/crio",
  "/var/run/crio",
];
/** Key and credential folders, relative to a home directory. */
export const CREDENTIAL_FOLDERS = [".ssh", ".gnupg", ".aws", ".config/gcloud", ".kube", ".docker"];
/** A socket with one of these names is an engine socket wherever it lives (rootless engines). */
const ENGINE_SOCKET_NAMES = /(^|\/)(docker|containerd|podman|crio)\.sock$/;

/** The full denied list for a runner whose home (state, memory, skills, config) is `scifiHome`. */
export function deniedPaths(scifiHome: string, extra: readonly string[] = []): DeniedPath[] {
  const home = homePaths(scifiHome);
  const list: DeniedPath[] = [{ path: "/", why: "the host's root folder", inside: false }];
  for (const p of SYSTEM_FOLDERS) list.push({ path: p, why: `the system folder ${p}`, inside: true });
  for (const p of ENGINE_SOCKETS) list.push({ path: p, why: "a container-engine socket", inside: true });
  for (const h of homeDirectories()) {
    for (const c of CREDENTIAL_FOLDERS)
      list.push({ path: join(h, c), why: `the key/credential folder ${c} of ${h}`, inside: true });
  }
  list.push(
    { path: home.runs, why: "the runner's state folder (runs/)", inside: true },
    { path: home.memory, why: "the runner's memory folder (memory/)", inside: true },
    { path: home.skills, why: "the runner's skills folder (skills/)", inside: true },
    { path: home.sitePolicy, why: "the runner's site policy file", inside: true },
    { path: home.modelsConfig, why: "the runner's model configuration file", inside: true },
    { path: home.internal, why: "the runner's internal folder (.scifi/: locks, asset hashes)", inside: true },
    { path: home.evolve, why: "the runner's evolve proposals and decisions (evolve/)", inside: true },
    {
      path: home.daemon,
      why: "the daemon's folder (daemon/: every task's record, logs and work folder)",
      inside: true,
      holdsTaskFolders: true,
    },
    {
      path: home.checkTask,
      why: "check-task's folder (check-task/: its audits' records and task copies)",
      inside: true,
      holdsTaskFolders: true,
    },
    {
      path: home.evals,
      why: "the runner's eval folder (evals/: every trial's records and task copies)",
      inside: true,
      holdsTaskFolders: true,
    },
  );
  for (const p of extra) list.push({ path: p, why: "a path the site policy denies", inside: true });
  // Compare real paths: /var/run is a link to /run on most systems.
  return list.flatMap((d) => {
    const real = realOrSelf(d.path);
    return real === d.path ? [d] : [d, { ...d, path: real }];
  });
}

/** Whether a path's name marks it as an engine socket or a credential folder wherever it lies. */
export function sensitiveByName(path: string): string | undefined {
  if (ENGINE_SOCKET_NAMES.test(path)) return "a container-engine socket";
  for (const c of CREDENTIAL_FOLDERS) {
    if (path.endsWith(`/${c}`) || path.includes(`/${c}/`)) return `a key/credential folder (${c})`;
  }
  return undefined;
}

/** Home directories of this machine: the user's, root's, /home/*, and those in /etc/passwd. */
function homeDirectories(): string[] {
  const homes = new Set<string>([homedir(), "/root"]);
  if (process.env.HOME) homes.add(process.env.HOME);
  try {
    for (const name of readdirSync("/home")) homes.add(join("/home", name));
  } catch {
    // No /home: nothing to add.
  }
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const dir = line.split(":")[5];
      if (dir?.startsWith("/") && dir !== "/" && dir !== "/nonexistent") homes.add(dir);
    }
  } catch {
    // No readable passwd: the other sources still apply.
  }
  return [...homes];
}

/**
 * The path with its links resolved: a path not there yet through its deepest existing ancestor
 * (that ancestor's real path, plus the rest), so a fresh home spelled through a link into the task
 * folder is seen where it will be made.
 */
function realOrSelf(path: string, links = 0): string {
  const rest: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      if (existsSync(at))
        return rest.length === 0 ? realpathSync(at) : join(realpathSync(at), ...rest.reverse());
      // A dangling link is where the path will be made: its target, resolved the same way (a38d).
      if (links < 40 && lstatSync(at).isSymbolicLink())
        return realOrSelf(join(resolve(dirname(at), readlinkSync(at)), ...rest.reverse()), links + 1);
    } catch {
      // Not there at all (lstat failed): climb to its folder.
    }
    if (dirname(at) === at) return path;
    rest.push(basename(at));
  }
}
