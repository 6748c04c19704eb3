// Attacker on issue 37's check views (a37c), what held on this machine's views: the kernel overlay
// of a root runner (the Docker backend's) and the copy. The same cases run as a user that is not
// root on fuse-overlayfs in test/sandbox/apptainer/a37c-held.inner.ts.
import { kinds } from "../run/checks/check-view-suite.ts";
import { a37cHeldSuite } from "./a37c-held-suite.ts";

a37cHeldSuite(kinds);
