import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The Apptainer suite first: one file of about 12 minutes (30 inner files, one at a time). On two
 * workers the longest file started last sets the wall time, and a fresh clone has no timing cache,
 * so vitest's own order (larger files first) started this small file some 18 minutes in.
 */
class ApptainerFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (f: TestSpecification) => f.moduleId.endsWith("/test/sandbox/apptainer.test.ts");
    return [...sorted.filter(first), ...sorted.filter((f) => !first(f))];
  }
}

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: "forks",
    // Two cores: container-heavy suites compete for the same engine.
    maxWorkers: 2,
    reporters: ["default"],
    sequence: { sequencer: ApptainerFirst },
  },
});
