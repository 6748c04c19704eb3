// The batch scripts scifi hands to sbatch. Pure functions: the same inputs give the same text.
// The broker never submits the agent's file itself: it submits a script it wrote, whose only
// directives are the granted ones (so `#SBATCH` lines in the agent's file cannot widen a grant),
// and which runs a frozen copy of the agent's file (so it cannot be swapped after validation).
import { basename, dirname } from "node:path";
import { egressFilterScript } from "../network/egress.ts";
import { bindSpec } from "../sandbox/bind-spec.ts";
import { shellQuote as quoteWord, visible } from "../terminal-text.ts";
import { describeBytes, formatSlurmMemory, formatSlurmTime } from "./units.ts";

/** Resources and placement of one job, already within the grant. */
export interface SbatchResources {
  jobName: string;
  timeSec: number;
  cpus: number;
  memoryBytes: number;
  gpus: number;
  partition?: string;
  account?: string;
}

/** sbatch options for resources, in a fixed order (tested with exact outputs). */
export function resourceArgs(r: SbatchResources): string[] {
  const args = [
    `--job-name=${r.jobName}`,
    "--nodes=1",
    "--ntasks=1",
    `--time=${formatSlurmTime(r.timeSec)}`,
    `--cpus-per-task=${r.cpus}`,
    `--mem=${formatSlurmMemory(r.memoryBytes)}`,
  ];
  if (r.gpus > 0) args.push(`--gres=gpu:${r.gpus}`);
  if (r.partition) args.push(`--partition=${r.partition}`);
  if (r.account) args.push(`--account=${r.account}`);
  return args;
}

/**
 * Where an agent's job script runs on the node. `none` runs it directly as the user (only when the
 * site policy says so); otherwise in a container with the task's image, the task folder at /task,
 * no network unless the SAM has `network: true` (a host list is for the work sandbox only; Docker
 * then gives the job a bridge network of its own), all capabilities dropped. `auto` picks Docker where the node has
 * an engine, else Apptainer, and fails the job (exit 97) where neither is present.
 */
export type JobSandbox =
  | { engine: "none" }
  | {
      engine: "auto" | "docker" | "apptainer";
      /** Docker reference of the task's image. */
      image: string;
      /** The SIF file Apptainer runs (built from `image`). */
      sif: string;
      network: boolean;
      /** Whether an Apptainer job with `network` may use the node's network (site apptainerHostNetwork). */
      apptainerHostNetwork?: boolean;
      /** The site's ranges a Docker job with `network` may still reach (allowedPrivateRanges). */
      allowedPrivateRanges?: string[];
      /**
       * uid:gid a Docker job container runs as when the job itself runs as root (site policy
       * sandboxUser; default 65534:65534): never uid 0 in a container. Apptainer jobs as root are
       * refused (exit 97), as Apptainer would run the container as root.
       */
      rootUser?: { uid: number; gid: number };
    };

/** Where the frozen script copy appears inside the job's container. */
const JOB_SCRIPT_IN_CONTAINER = "/scifi-job/script.sh";

export interface AgentJobScript {
  resources: SbatchResources;
  runId: string;
  /** Host task folder: the job's working directory. */
  taskDir: string;
  /** Absolute host paths of the job's stdout and stderr files (in the task folder). */
  stdoutPath: string;
  stderrPath: string;
  /** The frozen copy of the agent's script (in the run folder, out of the agent's reach). */
  scriptCopy: string;
  /** The script as the agent named it, relative to the task folder (for the header comment). */
  scriptName: string;
  args: string[];
  sandbox: JobSandbox;
}

/** sbatch options of an agent job: the grant-checked resources plus where it runs and writes. */
export function agentJobArgs(j: AgentJobScript): string[] {
  return [
    ...resourceArgs(j.resources),
    `--chdir=${j.taskDir}`,
    `--output=${slurmFilePattern(j.stdoutPath)}`,
    `--error=${slurmFilePattern(j.stderrPath)}`,
    // Only SLURM_* variables and the user's login environment: nothing from scifi's process.
    "--export=NONE",
    `--comment=scifi-run:${j.runId}`,
  ];
}

/**
 * A log path for sbatch's `--output`/`--error`, whose `%` starts a replacement (`%j`, `%u`, `%x`):
 * every `%` of the folder doubled (`%%` is a plain `%`), so a home like `/scratch/100%` keeps its
 * logs where the runner reads them; the file name's own `%j` stays a replacement. SLURM processes no
 * replacement at all in a name with a backslash, so a folder with one is refused, named.
 */
export function slurmFilePattern(path: string): string {
  const dir = dirname(path);
  if (dir.includes("\\")) {
    throw new Error(
      `the SLURM log folder ${JSON.stringify(dir)} holds a backslash, which turns off SLURM's %j in log names: use a scifi home (SCIFI_HOME) without one`,
    );
  }
  return `${dir.replaceAll("%", "%%")}/${basename(path)}`;
}

/** The batch script text of an agent job: directives come from the command line, never this text. */
export function renderAgentJobScript(j: AgentJobScript): string {
  return [
    "#!/bin/bash",
    // The script's name is the agent's (a file name may hold a newline): one visible line, so no part
    // of it leaves the comment and runs as a command of this script.
    `# Written by scifi's job broker for run ${visible(j.runId)}: runs the task's ${visible(j.scriptName)}`,
    "# (a copy frozen at submission). Resources are sbatch options; #SBATCH lines in it were ignored.",
    `# Granted: ${formatSlurmTime(j.resources.timeSec)}, ${j.resources.cpus} CPU(s), ${describeBytes(j.resources.memoryBytes)}, ${j.resources.gpus} GPU(s).`,
    `cd ${shellQuote(j.taskDir)} || exit 97`,
    ...(j.sandbox.engine === "none" ? directRun(j) : containerRun(j, j.sandbox)),
    "",
  ].join("\n");
}

function directRun(j: AgentJobScript): string[] {
  return [
    "# The site policy runs agent jobs without a container (jobs: sandbox: none).",
    `exec /bin/bash ${[j.scriptCopy, ...j.args].map(shellQuote).join(" ")}`,
  ];
}

/**
 * The job container's binds, as Docker's `-v` and Apptainer's `--bind` read them alike: a path that
 * either would split into more binds (a task folder `fit,data`) is refused (bind-spec.ts).
 */
export function jobBinds(taskDir: string, scriptCopy: string): { task: string; script: string } {
  return {
    task: bindSpec(taskDir, "/task", undefined, "the task folder, which an agent job gets at /task"),
    script: bindSpec(
      scriptCopy,
      JOB_SCRIPT_IN_CONTAINER,
      "ro",
      "the job script's frozen copy in the run's records",
    ),
  };
}

function containerRun(j: AgentJobScript, box: Exclude<JobSandbox, { engine: "none" }>): string[] {
  const argv = ["/bin/bash", JOB_SCRIPT_IN_CONTAINER, ...j.args].map(shellQuote).join(" ");
  const binds = jobBinds(j.taskDir, j.scriptCopy);
  const pick =
    box.engine === "auto"
      ? [
          "if docker info >/dev/null 2>&1; then engine=docker",
          "elif command -v apptainer >/dev/null 2>&1; then engine=apptainer",
          'else echo "scifi: no container engine (docker or apptainer) on $(hostname) for this job" >&2; exit 97; fi',
        ]
      : [`engine=${box.engine}`];
  const docker = [
    'docker run --rm --name "$name" --init',
    // With network: a bridge network of the job's own (never Docker's shared default bridge).
    box.network ? '--network "container:$name-net"' : "--network none",
    "--cap-drop ALL --security-opt no-new-privileges",
    '--user "$user"',
    `--cpus ${j.resources.cpus} --memory ${formatSlurmMemory(j.resources.memoryBytes)} --pids-limit 1024`,
    // Only the GPUs SLURM allocated to this job, not every GPU of the node.
    j.resources.gpus > 0 ? '--gpus "\\"device=${CUDA_VISIBLE_DEVICES:?no GPU allocated}\\""' : "",
    `-v ${shellQuote(binds.task)} -v ${shellQuote(binds.script)} -w /task`,
    `${shellQuote(box.image)} ${argv}`,
  ]
    .filter(Boolean)
    .join(" ");
  const apptainer = [
    "apptainer exec --containall --cleanenv --no-home --writable-tmpfs",
    // Unprivileged Apptainer has no network of the job's own: the node's only where the site says so.
    box.network && box.apptainerHostNetwork ? "" : "--net --network none",
    j.resources.gpus > 0 ? '--nv --env "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:?no GPU allocated}"' : "",
    `--bind ${shellQuote(binds.task)} --bind ${shellQuote(binds.script)} --pwd /task`,
    `${shellQuote(box.sif)} ${argv}`,
  ]
    .filter(Boolean)
    .join(" ");
  const rootUser = box.rootUser ?? { uid: 65534, gid: 65534 };
  return [
    ...pick,
    // Never uid 0 in a job's container: root's jobs run as the site's sandbox user (Docker) or not at all.
    'user="$(id -u):$(id -g)"',
    `if [ "$(id -u)" = 0 ]; then user=${rootUser.uid}:${rootUser.gid}; fi`,
    'if [ "$engine" = apptainer ] && [ "$(id -u)" = 0 ]; then echo "scifi: this job runs as root, and Apptainer would run its container as root: refused (submit as a normal user, or use Docker)" >&2; exit 97; fi',
    'name="scifi-job-${SLURM_JOB_ID:-$$}"',
    ...(box.network ? jobNetwork(j.runId, box) : []),
    // On scancel SLURM signals this shell: stop the container too, so nothing outlives the job.
    'trap \'[ "$engine" = docker ] && docker kill "$name" >/dev/null 2>&1; kill "$pid" 2>/dev/null\' TERM INT',
    `if [ "$engine" = docker ]; then ${docker} & else ${apptainer} & fi`,
    "pid=$!",
    'wait "$pid"; status=$?',
    'wait "$pid" 2>/dev/null',
    // The job's network goes with it (at its end, also after scancel: the trap above lets this run).
    ...(box.network
      ? [
          'if [ -n "$net" ]; then docker rm -f "$name" "$name-net" >/dev/null 2>&1; docker network rm "$net" >/dev/null 2>&1; fi',
        ]
      : []),
    'exit "$status"',
  ];
}

/**
 * A Docker job with network gets a bridge network of its own: labelled scifi=1 with its run (so
 * `scifi sandbox prune` knows it; no owner labels, so a live job's network is never pruned),
 * inter-container traffic off, removed when the job ends. Created before the container starts; a
 * job whose network cannot be made fails (exit 97) instead of running on the default bridge.
 */
function jobNetwork(runId: string, box: Exclude<JobSandbox, { engine: "none" }>): string[] {
  const labels = `--label scifi=1 --label ${shellQuote(`scifi.run=${runId}`)} --label "scifi.job=\${SLURM_JOB_ID:-$$}"`;
  // The holder owns the job's namespace on that network with the egress filter in it (as for a
  // network: true sandbox, runner/network/egress.ts): the node's own addresses, read on the node,
  // and the private ranges refused unless the site lists them.
  const filter = egressFilterScript(
    { allow: ["*"], deny: [], allowedPrivateRanges: box.allowedPrivateRanges ?? [] },
    [],
    "NODE_ADDRS",
  );
  const holder = [
    'docker run -d --name "$name-net" --init --network "$net" --user 0:0',
    "--cap-drop ALL --cap-add NET_ADMIN --cap-add SETUID --cap-add SETGID --cap-add SETPCAP",
    "--security-opt no-new-privileges --read-only --tmpfs /tmp:rw,nosuid,nodev,size=1m",
    '--pids-limit 16 --memory 64m -e NODE_ADDRS="$(hostname -I 2>/dev/null)"',
    labels,
    `--entrypoint sh ${shellQuote(box.image)} -c ${shellQuote(`${filter}exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all sleep infinity\n`)}`,
  ].join(" ");
  return [
    'net=""',
    'if [ "$engine" = docker ]; then',
    '  net="$name-net"',
    `  docker network create --driver bridge ${labels} -o com.docker.network.bridge.enable_icc=false "$net" >/dev/null || { echo "scifi: cannot create this job's own network $net" >&2; exit 97; }`,
    `  ${holder} >/dev/null || { docker network rm "$net" >/dev/null 2>&1; echo "scifi: cannot start this job's network filter" >&2; exit 97; }`,
    '  i=0; until docker logs "$name-net" 2>&1 | grep -q "scifi-net filter on"; do',
    '    i=$((i+1)); if [ $i -gt 150 ] || [ "$(docker inspect -f "{{.State.Running}}" "$name-net" 2>/dev/null)" != true ]; then',
    '      echo "scifi: this job\'s network filter did not start (the image needs iptables and setpriv): $(docker logs "$name-net" 2>&1 | tail -3)" >&2',
    '      docker rm -f "$name-net" >/dev/null 2>&1; docker network rm "$net" >/dev/null 2>&1; exit 97',
    "    fi; sleep 0.1",
    "  done",
    "fi",
  ];
}

/** Quotes one word for a POSIX shell. */
export function shellQuote(word: string): string {
  // terminal-text's: a word with a line break or a control character is one `$'...'` word on one
  // line (bash reads it back as itself), so no argument of the agent's reads as a line of the script.
  return quoteWord(word);
}

/** The `#SBATCH` directives a script contains (they are ignored; reported back to the agent). */
export function findSbatchDirectives(scriptText: string): string[] {
  return scriptText
    .split("\n")
    .filter((line) => /^#SBATCH\s/.test(line))
    .map((line) => line.trim());
}
