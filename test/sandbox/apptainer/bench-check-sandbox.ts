// The fresh-check-sandbox cost on Apptainer, measured INSIDE the harness (bench/loop-check-sandbox.bench.ts
// drives it): `node test/sandbox/apptainer/bench-check-sandbox.ts IMAGE ROUNDS`. Prints one JSON line.
import { tmpdir } from "node:os";
import { measureCheckSandbox } from "../../../bench/check-sandbox.ts";
import { createApptainerBackend } from "../../../runner/sandbox/apptainer.ts";

const image = process.argv[2] ?? "scifi-sci:local";
const rounds = Number(process.argv[3] ?? 10);
const result = await measureCheckSandbox({
  backend: createApptainerBackend(),
  image,
  rounds,
  root: tmpdir(),
});
console.log(`SCIFI_BENCH_JSON ${JSON.stringify(result)}`);
