// Apptainer exec overhead, measured INSIDE the harness (bench/apptainer.bench.ts drives it): the
// backend's exec against a raw `apptainer exec instance://NAME true` on the same instance, in the
// same run, interleaved so that machine noise hits both alike. Also times each layer the backend adds,
// so the breakdown says what costs what:
//   raw      apptainer exec instance://NAME true, through execa (the baseline of the ratio)
//   bare     the same through a plain spawn (as the backend spawns): the layers below build on it
//   wrapper  + --cleanenv --pwd, `sh -c` (rlimits, environment) and `timeout -k` inside
//   pinning  + `taskset -c LIST` on the host (only when the sandbox may use fewer CPUs than the host)
//   backend  sandbox.exec(["true"]): + capped output, timers, result, the guard (node side)
// Prints one JSON line for the host.
import { spawn } from "node:child_process";
import { execa } from "execa";
import { createApptainerBackend, execCommandLine, instanceName } from "../../../runner/sandbox/apptainer.ts";
import { taskSpec } from "./fixtures.ts";

// Rounds: the first argument (bench/apptainer.bench.ts passes it: the harness does not carry the
// host's environment), else SCIFI_BENCH_ROUNDS, else 60.
const ROUNDS = Number(process.argv[2] ?? process.env.SCIFI_BENCH_ROUNDS ?? 60);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

const backend = createApptainerBackend();
const sandbox = await backend.start(await taskSpec());
const target = `instance://${instanceName(sandbox.spec.runId)}`;
try {
  const line = execCommandLine(sandbox.spec.runId, ["true"]);
  if (!line) throw new Error("the sandbox's command line is unknown");
  const pinned = line[0] !== "apptainer";
  const apptainerAt = line.indexOf("apptainer");
  const unpinned = line.slice(apptainerAt);
  // A plain spawn, its output read and dropped: what runCapped does, without capping or timers.
  const run = (argv: string[]) =>
    new Promise<void>((done, fail) => {
      const child = spawn(argv[0] as string, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.resume();
      child.stderr.resume();
      child.once("error", fail);
      child.once("close", () => done());
    });
  const sides: Record<string, () => Promise<unknown>> = {
    raw: () => execa("apptainer", ["exec", target, "true"], { stdin: "ignore" }),
    bare: () => run(["apptainer", "exec", target, "true"]),
    wrapper: () => run(unpinned),
    ...(pinned ? { pinning: () => run(line) } : {}),
    backend: () => sandbox.exec(["true"]),
  };
  const names = Object.keys(sides);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const name of names) await sides[name]?.(); // warm every path once
  // Rotating which side goes first, so a slow spell of the machine hits every side alike.
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length] as string;
      times[name]?.push(await timed(() => sides[name]?.() ?? Promise.resolve()));
    }
  }
  const m = Object.fromEntries(names.map((n) => [n, median(times[n] ?? [])])) as Record<string, number>;
  const result = {
    rounds: ROUNDS,
    backendMs: m.backend,
    rawMs: m.raw,
    layers: {
      "execa instead of a plain spawn (baseline only)": (m.raw ?? 0) - (m.bare ?? 0),
      "wrapper (sh, rlimits, env, timeout inside)": (m.wrapper ?? 0) - (m.bare ?? 0),
      ...(pinned ? { "taskset on the host": (m.pinning ?? 0) - (m.wrapper ?? 0) } : {}),
      "node side (spawn, capping, timers)": (m.backend ?? 0) - (m.pinning ?? m.wrapper ?? 0),
    },
  };
  console.log(`SCIFI_BENCH_JSON ${JSON.stringify(result)}`);
} finally {
  await sandbox.stop();
}
