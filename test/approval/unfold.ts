// An approval listing's rows as the lines they were folded from (runner/approval/render.ts folds
// every line at LISTING_WIDTH columns, and so does `scifi memory list`): each `  |+ ` row (a detail
// line's continuation), `    + ` row (a proposal body's) and `  + ` row (any other line's) joined to
// the row before it, its mark dropped. Tabs stay expanded.
export function unfold(rows: readonly string[]): string[] {
  const lines: string[] = [];
  for (const row of rows) {
    const mark = ["  |+ ", "    + ", "  + "].find((m) => row.startsWith(m));
    if (mark && lines.length > 0) lines[lines.length - 1] += row.slice(mark.length);
    else lines.push(row);
  }
  return lines;
}

/** The same for printed text: its lines unfolded, joined again. */
export function unfoldText(text: string): string {
  return unfold(text.split("\n")).join("\n");
}
