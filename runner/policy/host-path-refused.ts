import { visible } from "../terminal-text.ts";

/**
 * A host-side path that may not be used. Defined in the policy layer, not in the sandbox layer, so
 * that leaf components (reports, result collection) can use it too; sandbox backends turn it into
 * their contract's PathRefused. (Its own file: host-paths.ts and tree-walk.ts both need it.)
 */
export class HostPathRefused extends Error {
  override name = "HostPathRefused";
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string) {
    // The path is the agent's or the user's: a newline or an escape in it is shown, never acted on.
    super(`refused path '${visible(path)}': ${visible(reason)}`);
    this.path = path;
    this.reason = reason;
  }
}
