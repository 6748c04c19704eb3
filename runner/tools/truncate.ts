// Output capping shared by every tool: keep the head and the tail (errors are usually at the end,
// the command echo at the start) and say how much was cut.

export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars * 0.4);
  const tail = maxChars - head;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[... ${cut} characters cut by scifi; showing head and tail ...]\n${text.slice(text.length - tail)}`;
}
