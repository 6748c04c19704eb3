// (In eval since the integrity comparisons of `scifi eval` use it too; evolve re-exports it.)
// Fisher's exact test on a 2x2 table of pass counts: the test every rank proposal of `scifi evolve`
// carries. Exact (hypergeometric), so it is right for the small counts a site has (a dozen runs of
// a model), where a chi-squared approximation is not. Two-sided: the p-value sums the probabilities
// of every table with the same margins that is no more likely than the one observed.

/** ln(n!) for n = 0.. by summing logs; cached, since evolve tests many tables of similar size. */
const LOG_FACTORIAL: number[] = [0];

function logFactorial(n: number): number {
  for (let i = LOG_FACTORIAL.length; i <= n; i++)
    LOG_FACTORIAL.push((LOG_FACTORIAL[i - 1] as number) + Math.log(i));
  return LOG_FACTORIAL[n] as number;
}

export interface FisherResult {
  /** Two-sided p-value. */
  p: number;
  /** The table tested: [[a passes, a fails], [b passes, b fails]]. */
  table: [[number, number], [number, number]];
}

/**
 * Fisher's exact test, two-sided, of "a passes as often as b" on a's and b's pass and fail counts.
 * Tables whose probability is within a relative 1e-7 of the observed one count as "as extreme"
 * (the convention of R's fisher.test), so rounding never drops the observed table itself.
 */
export function fisherExact(aPass: number, aFail: number, bPass: number, bFail: number): FisherResult {
  for (const n of [aPass, aFail, bPass, bFail])
    if (!Number.isInteger(n) || n < 0)
      throw new Error(`fisherExact: counts must be whole numbers >= 0, got ${n}`);
  const table: FisherResult["table"] = [
    [aPass, aFail],
    [bPass, bFail],
  ];
  const rowA = aPass + aFail;
  const rowB = bPass + bFail;
  const passes = aPass + bPass;
  const n = rowA + rowB;
  if (rowA === 0 || rowB === 0 || passes === 0 || passes === n) return { p: 1, table };
  const fixed =
    logFactorial(rowA) +
    logFactorial(rowB) +
    logFactorial(passes) +
    logFactorial(n - passes) -
    logFactorial(n);
  // Probability of the table with x of a's row passing, margins fixed.
  const logP = (x: number): number =>
    fixed -
    logFactorial(x) -
    logFactorial(rowA - x) -
    logFactorial(passes - x) -
    logFactorial(rowB - passes + x);
  const observed = logP(aPass);
  const low = Math.max(0, passes - rowB);
  const high = Math.min(rowA, passes);
  let p = 0;
  for (let x = low; x <= high; x++) {
    const lp = logP(x);
    if (lp <= observed + 1e-7) p += Math.exp(lp);
  }
  return { p: Math.min(1, p), table };
}
