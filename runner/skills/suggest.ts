// "Did you mean" hints for misspelt skill and grant names; the matching lives in runner/sam/suggest.ts.

import { closest } from "../sam/suggest.ts";

/** ` (did you mean 'x'?)` or an empty string. Names are matched literally (case aside). */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const match = closest(word, candidates, { keyStyle: false });
  return match ? ` (did you mean '${match}'?)` : "";
}
