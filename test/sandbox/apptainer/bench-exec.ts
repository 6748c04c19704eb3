// Apptainer exec overhead, measured INSIDE the harness (bench/apptainer.bench.ts drives it): the
// backend's exec against a raw `apptainer exec instance://NAME true` on the same instance, in the
// same run, interleaved so that machine noise hits both alike. Prints one JSON line for the host.
import { execa } from "execa";
import { createApptainerBackend, instanceName } from "../../../runner/sandbox/apptainer.ts";
import { taskSpec } from "./fixtures.ts";

const ROUNDS = Number(process.env.SCIFI_BENCH_ROUNDS ?? 60);

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
  const raw = () => execa("apptainer", ["exec", target, "true"]);
  const ours = () => sandbox.exec(["true"]);
  await raw();
  await ours(); // warm both paths once
  const rawMs: number[] = [];
  const oursMs: number[] = [];
  // Alternating which goes first, so a slow spell of the machine hits both sides alike.
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      rawMs.push(await timed(raw));
      oursMs.push(await timed(ours));
    } else {
      oursMs.push(await timed(ours));
      rawMs.push(await timed(raw));
    }
  }
  const result = { rounds: ROUNDS, backendMs: median(oursMs), rawMs: median(rawMs) };
  console.log(`SCIFI_BENCH_JSON ${JSON.stringify(result)}`);
} finally {
  await sandbox.stop();
}
