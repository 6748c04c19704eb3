// The attack tests' smallest task: one iteration, one check that out.txt exists.
export function outTxtTask(name: string): string {
  return `---
name: ${name}
iterations: 1
budget_usd: 1
---
# Write out.txt

## To-do
Write a file called out.txt.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;
}
