// Writes to stdout and stderr never end a run or the daemon (issue 41, a41d). A closed terminal (an
// ssh session dropped, a window closed) sends SIGHUP, and from then on every write to it fails with
// EIO; a reader gone (`scifi run | head`) gives EPIPE. Either surfaced as an uncaught exception and
// ended the process at once, before its stop: sandboxes left to the 'exit' hook, the run's own exit
// (task folder restored, hidden assets back) skipped. The records are in the run folder, so a lost
// line loses nothing that matters; every stream error is therefore ignored, not only EIO and EPIPE
// (a full disk under a redirected stdout must not end a night's run either).

let guarded = false;

/** From now on an error on process.stdout or process.stderr is ignored (once per process). */
export function ignoreStdStreamErrors(): void {
  if (guarded) return;
  guarded = true;
  for (const stream of [process.stdout, process.stderr]) stream.on("error", ignore);
}

/** Writes to a standard stream; a write that throws (a destroyed stream, EIO) is dropped. */
export function writeQuietly(stream: NodeJS.WriteStream, text: string): void {
  ignoreStdStreamErrors();
  try {
    stream.write(text);
  } catch {
    // The terminal is gone: there is no one to tell.
  }
}

function ignore(): void {}
