// A runner in a process of its own, for the prune tests of the conformance suite: starts a sandbox
// of the named backend from the spec in argv, says so, and idles until the test kills it (SIGKILL
// runs no cleanup, exactly as a runner killed hard leaves its sandbox behind).
// Usage: node test/sandbox/owner-child.ts BACKEND SPEC_JSON
import { getBackend } from "../../runner/sandbox/registry.ts";

const [name, specJson] = process.argv.slice(2);
if (!name || !specJson) throw new Error("usage: owner-child.ts BACKEND SPEC_JSON");
const sandbox = await (await getBackend(name)).start(JSON.parse(specJson));
process.stdout.write(`started ${sandbox.spec.runId}\n`);
setInterval(() => {}, 60_000);
