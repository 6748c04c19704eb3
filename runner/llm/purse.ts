// A run's purse: the one count of the money and tokens it has spent and the caps on them. Made once
// per run (runner/run/session/limits.ts RunLimits) and read by the gateway (refuses a call once a cap is
// reached) and the run's budget check alike, so the two never disagree; a resume starts it from what
// the tape says was spent. A cap changed mid-run (`scifi ctl <run> limits`) applies to the next call.

export interface PurseCaps {
  usd?: number;
  tokens?: number;
}

export class Purse {
  /** Kept by reference: the run hands in its live limits, so a change there is a change here. */
  readonly #caps: PurseCaps;
  usd: number;
  tokens: number;
  /**
   * True once a gateway charges this purse itself: the run then never adds a response again (one
   * writer). A model that is no gateway (a unit test's fake) leaves the run to charge it.
   */
  chargedByGateway = false;

  constructor(caps: PurseCaps = {}, spent: { usd: number; tokens: number } = { usd: 0, tokens: 0 }) {
    this.#caps = caps;
    this.usd = spent.usd;
    this.tokens = spent.tokens;
  }

  get caps(): Readonly<PurseCaps> {
    return this.#caps;
  }

  /** New caps (a live limit change): the next call is checked against them. */
  setCaps(caps: PurseCaps): void {
    Object.assign(this.#caps, caps);
  }

  charge(usd: number, tokens: number): void {
    this.usd += usd;
    this.tokens += tokens;
  }

  /** Why no further call may be made (a cap is reached), or undefined. */
  over(): string | undefined {
    const { usd, tokens } = this.#caps;
    if (usd !== undefined && this.usd >= usd)
      return `the run's budget of ${usd} USD is spent (${this.usd.toFixed(4)} USD)`;
    if (tokens !== undefined && this.tokens >= tokens)
      return `the run's budget of ${tokens} tokens is spent (${this.tokens} tokens)`;
    return undefined;
  }
}
