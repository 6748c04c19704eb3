// Vitest config for the suites that run INSIDE the Apptainer harness (scripts/apptainer-harness.sh
// test), as the non-root user. Their files end in .inner.ts so the host's `npm test` never picks
// them up directly; test/sandbox/apptainer.test.ts drives them through the harness instead.
import { defineConfig } from "vitest/config";

export default defineConfig({
  // The repository is read-only for the harness user: keep Vite's cache in the container's /tmp.
  cacheDir: "/tmp/scifi-vitest-cache",
  test: {
    root: new URL("../../..", import.meta.url).pathname,
    include: ["test/sandbox/apptainer/**/*.inner.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: "forks",
    // One file at a time: sandboxes of one file must not compete with another file's fork bomb.
    fileParallelism: false,
  },
});
