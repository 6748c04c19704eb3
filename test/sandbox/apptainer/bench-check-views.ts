// What checks that share nothing cost on Apptainer, measured INSIDE the harness
// (bench/loop-check-views.bench.ts drives it): `node test/sandbox/apptainer/bench-check-views.ts
// IMAGE ROUNDS`. Prints one JSON line.
import { tmpdir } from "node:os";
import { measureCheckViews } from "../../../bench/check-views.ts";
import { createApptainerBackend } from "../../../runner/sandbox/apptainer.ts";

const image = process.argv[2] ?? "scifi-sci:local";
const rounds = Number(process.argv[3] ?? 3);
const manyFiles = Number(process.argv[4] ?? 100_000);
const result = await measureCheckViews({
  backend: createApptainerBackend(),
  image,
  rounds,
  root: tmpdir(),
  manyFiles,
});
console.log(`SCIFI_BENCH_JSON ${JSON.stringify(result)}`);
