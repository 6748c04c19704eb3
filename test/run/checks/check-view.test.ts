// A run stage's view of the task folder on this machine (test/run/checks/check-view-suite.ts); the same
// suite runs non-root inside the Apptainer harness (test/sandbox/apptainer/check-view.inner.ts).
import { checkViewSuite } from "./check-view-suite.ts";

checkViewSuite();
