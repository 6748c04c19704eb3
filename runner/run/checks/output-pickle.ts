// A Python pickle, with or without its header (docs/loop.md, "Outputs that name another file").
// Protocols 2 to 5 start with PROTO (0x80); protocols 0 and 1 have no header at all: a protocol 0
// pickle is lines of ASCII opcodes (`cbuiltins\ngetattr\n(S'...'\ntR.`), and pickle.load reads
// the first pickle of a file and ignores what follows. So the bytes are run through the opcode
// table (no values built, only the stack's depth and marks kept): a stream that reaches STOP with
// an object to return and calls something on the way (GLOBAL, REDUCE, INST, OBJ, ...) is a pickle
// that runs code when loaded. Plain data pickles (numbers, strings, lists) name no file and call nothing.

/** How an opcode's argument is laid out. */
type Arg =
  | { kind: "none" }
  | { kind: "lines"; count: number }
  | { kind: "fixed"; bytes: number }
  | { kind: "counted"; lengthBytes: 1 | 4 | 8 };

/** How an opcode moves the stack: pops, then pushes; `mark` pops back to the last MARK first. */
interface Effect {
  arg: Arg;
  pop: number;
  push: number;
  mark?: boolean;
  /** Items the popped mark's segment must hold (OBJ: the class and its arguments are there). */
  markMin?: number;
  /** It pushes a MARK. */
  setsMark?: boolean;
  /** It calls or imports something when loaded. */
  calls?: boolean;
  stop?: boolean;
}

const NONE: Arg = { kind: "none" };
const LINE: Arg = { kind: "lines", count: 1 };
const fixed = (bytes: number): Arg => ({ kind: "fixed", bytes });
const counted = (lengthBytes: 1 | 4 | 8): Arg => ({ kind: "counted", lengthBytes });

/** Every opcode of pickle protocols 0 to 5 (Lib/pickletools.py), by its byte. */
const OPCODES = new Map<number, Effect>([
  ...[..."ILFSV"].map((c): [number, Effect] => [c.charCodeAt(0), { arg: LINE, pop: 0, push: 1 }]),
  ["N".charCodeAt(0), { arg: NONE, pop: 0, push: 1 }],
  ["K".charCodeAt(0), { arg: fixed(1), pop: 0, push: 1 }],
  ["M".charCodeAt(0), { arg: fixed(2), pop: 0, push: 1 }],
  ["J".charCodeAt(0), { arg: fixed(4), pop: 0, push: 1 }],
  ["G".charCodeAt(0), { arg: fixed(8), pop: 0, push: 1 }],
  ["U".charCodeAt(0), { arg: counted(1), pop: 0, push: 1 }],
  ["T".charCodeAt(0), { arg: counted(4), pop: 0, push: 1 }],
  ["X".charCodeAt(0), { arg: counted(4), pop: 0, push: 1 }],
  ["B".charCodeAt(0), { arg: counted(4), pop: 0, push: 1 }],
  ["C".charCodeAt(0), { arg: counted(1), pop: 0, push: 1 }],
  [0x8c, { arg: counted(1), pop: 0, push: 1 }],
  [0x8d, { arg: counted(8), pop: 0, push: 1 }],
  [0x8e, { arg: counted(8), pop: 0, push: 1 }],
  [0x96, { arg: counted(8), pop: 0, push: 1 }],
  [0x8a, { arg: counted(1), pop: 0, push: 1 }],
  [0x8b, { arg: counted(4), pop: 0, push: 1 }],
  ...[..."]})"].map((c): [number, Effect] => [c.charCodeAt(0), { arg: NONE, pop: 0, push: 1 }]),
  [0x8f, { arg: NONE, pop: 0, push: 1 }],
  [0x88, { arg: NONE, pop: 0, push: 1 }],
  [0x89, { arg: NONE, pop: 0, push: 1 }],
  ["g".charCodeAt(0), { arg: LINE, pop: 0, push: 1 }],
  ["h".charCodeAt(0), { arg: fixed(1), pop: 0, push: 1 }],
  ["j".charCodeAt(0), { arg: fixed(4), pop: 0, push: 1 }],
  ["p".charCodeAt(0), { arg: LINE, pop: 1, push: 1 }],
  ["q".charCodeAt(0), { arg: fixed(1), pop: 1, push: 1 }],
  ["r".charCodeAt(0), { arg: fixed(4), pop: 1, push: 1 }],
  [0x94, { arg: NONE, pop: 1, push: 1 }],
  [0x98, { arg: NONE, pop: 1, push: 1 }],
  [0x97, { arg: NONE, pop: 0, push: 1 }],
  [0x80, { arg: fixed(1), pop: 0, push: 0 }],
  [0x95, { arg: fixed(8), pop: 0, push: 0 }],
  ["(".charCodeAt(0), { arg: NONE, pop: 0, push: 0, setsMark: true }],
  [".".charCodeAt(0), { arg: NONE, pop: 1, push: 0, stop: true }],
  ["0".charCodeAt(0), { arg: NONE, pop: 1, push: 0 }],
  ["1".charCodeAt(0), { arg: NONE, pop: 0, push: 0, mark: true }],
  ["2".charCodeAt(0), { arg: NONE, pop: 1, push: 2 }],
  ["a".charCodeAt(0), { arg: NONE, pop: 2, push: 1 }],
  ["e".charCodeAt(0), { arg: NONE, pop: 1, push: 1, mark: true }],
  ["s".charCodeAt(0), { arg: NONE, pop: 3, push: 1 }],
  ["u".charCodeAt(0), { arg: NONE, pop: 1, push: 1, mark: true }],
  [0x90, { arg: NONE, pop: 1, push: 1, mark: true }],
  ["t".charCodeAt(0), { arg: NONE, pop: 0, push: 1, mark: true }],
  ["l".charCodeAt(0), { arg: NONE, pop: 0, push: 1, mark: true }],
  ["d".charCodeAt(0), { arg: NONE, pop: 0, push: 1, mark: true }],
  [0x91, { arg: NONE, pop: 0, push: 1, mark: true }],
  [0x85, { arg: NONE, pop: 1, push: 1 }],
  [0x86, { arg: NONE, pop: 2, push: 1 }],
  [0x87, { arg: NONE, pop: 3, push: 1 }],
  // Those that import or call: what makes loading a pickle run code.
  ["c".charCodeAt(0), { arg: { kind: "lines", count: 2 }, pop: 0, push: 1, calls: true }],
  ["i".charCodeAt(0), { arg: { kind: "lines", count: 2 }, pop: 0, push: 1, mark: true, calls: true }],
  ["o".charCodeAt(0), { arg: NONE, pop: 0, push: 1, mark: true, markMin: 1, calls: true }],
  ["R".charCodeAt(0), { arg: NONE, pop: 2, push: 1, calls: true }],
  ["b".charCodeAt(0), { arg: NONE, pop: 2, push: 1, calls: true }],
  [0x81, { arg: NONE, pop: 2, push: 1, calls: true }],
  [0x92, { arg: NONE, pop: 3, push: 1, calls: true }],
  [0x93, { arg: NONE, pop: 2, push: 1, calls: true }],
  [0x82, { arg: fixed(1), pop: 0, push: 1, calls: true }],
  [0x83, { arg: fixed(2), pop: 0, push: 1, calls: true }],
  [0x84, { arg: fixed(4), pop: 0, push: 1, calls: true }],
  ["P".charCodeAt(0), { arg: LINE, pop: 0, push: 1, calls: true }],
  ["Q".charCodeAt(0), { arg: NONE, pop: 1, push: 1, calls: true }],
]);

/**
 * Opcodes walked at most. Text is no opcode stream for long (its first letter that is no opcode, or
 * pops an empty stack, ends the walk); a stream still valid this far is refused unread, so padding
 * cannot push a call past the walk.
 */
const MAX_OPCODES = 1_000_000;

/**
 * Whether `data` starts with a pickle that calls or imports something when loaded: its opcodes
 * parse from the first byte to a STOP with an object to return, and one of them calls (or they are
 * still valid after MAX_OPCODES). False for anything else, a plain-data pickle included.
 */
export function isCallingPickle(data: Buffer): boolean {
  // The stack as the depths between marks: [depth below the first mark, ..., depth above the last].
  const depths = [0];
  let calls = false;
  let at = 0;
  for (let n = 0; n < MAX_OPCODES && at < data.length; n++) {
    const effect = OPCODES.get(data[at] as number);
    if (!effect) return false;
    at = skipArg(data, at + 1, effect.arg);
    if (at < 0) return false;
    if (effect.mark) {
      if (depths.length < 2 || (depths.pop() as number) < (effect.markMin ?? 0)) return false;
    }
    const top = depths.length - 1;
    if ((depths[top] as number) < effect.pop) return false;
    // STOP returns the top object; anything under it (or a mark left open) is not looked at.
    if (effect.stop) return calls;
    depths[top] = (depths[top] as number) - effect.pop + effect.push;
    if (effect.setsMark) depths.push(0);
    calls ||= effect.calls === true;
  }
  return at < data.length;
}

/** Where the next opcode starts, or -1 when the argument runs past the end. */
function skipArg(data: Buffer, at: number, arg: Arg): number {
  switch (arg.kind) {
    case "none":
      return at;
    case "fixed":
      return at + arg.bytes <= data.length ? at + arg.bytes : -1;
    case "lines": {
      let end = at;
      for (let i = 0; i < arg.count; i++) {
        const newline = data.indexOf(0x0a, end);
        if (newline < 0) return -1;
        end = newline + 1;
      }
      return end;
    }
    case "counted": {
      const size = arg.lengthBytes;
      if (at + size > data.length) return -1;
      const length =
        size === 1
          ? (data[at] as number)
          : size === 4
            ? data.readUInt32LE(at)
            : Number(data.readBigUInt64LE(at));
      const end = at + size + length;
      return end <= data.length ? end : -1;
    }
  }
}

/** Names a grader loads as a pickle whatever the bytes (pandas.read_pickle, joblib.load), compressed or not. */
export const PICKLE_NAME = /\.(?:pkl|pickle|joblib)$/i;
