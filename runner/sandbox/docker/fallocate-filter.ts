// The quota guard measures the task folder every poll period, so what one command adds is bounded
// by how fast it can write; fallocate(2) is not: one call reserves any number of blocks at once
// (issue 32, A32-7). Every exec into a Docker sandbox therefore starts under one more seccomp filter
// that answers an allocating fallocate with EOPNOTSUPP (glibc's posix_fallocate then writes the
// blocks, at the pace the poll sees) and lets hole punching and range collapsing through.
// Docker takes a seccomp profile only as a whole replacement of its default, so the filter is added
// by the exec itself, which no_new_privs allows any process: perl (perl-base, in every Debian and
// Ubuntu image) loads the program with prctl and execs the command. An image without perl runs
// without it (DockerSandbox probes once; docs/sandbox.md).

const LD_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JSET = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET = 0x06; // BPF_RET | BPF_K
const ALLOW = 0x7fff0000;
const EOPNOTSUPP = 95;
const ERRNO = 0x00050000 | EOPNOTSUPP;
/** FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE: the modes that free space (the kernel refuses
 * either combined with an allocating flag). */
const FREEING_MODES = 0x02 | 0x08;

/** fallocate's number per audit arch (x32 is the x86_64 arch with bit 30 set in the number). */
const ARCHES = [
  { arch: 0xc000003e, numbers: [285, 0x40000000 | 285] }, // x86_64, x32
  { arch: 0x40000003, numbers: [324] }, // i386
  { arch: 0xc00000b7, numbers: [47] }, // aarch64
  { arch: 0x40000028, numbers: [352] }, // arm (EABI)
];

type Ins = [code: number, jt: number, jf: number, k: number];

/** The classic BPF program, laid out with absolute targets and turned into relative jumps. */
export function fallocateFilter(): Ins[] {
  const out: { code: number; t: number | string; f: number | string; k: number }[] = [];
  out.push({ code: LD_ABS, t: 0, f: 0, k: 4 }); // seccomp_data.arch
  for (const [i, a] of ARCHES.entries()) out.push({ code: JEQ, t: `arch${i}`, f: out.length + 1, k: a.arch });
  out.push({ code: RET, t: 0, f: 0, k: ALLOW }); // an arch not listed: Docker's own profile judges it
  const labels = new Map<string, number>();
  for (const [i, a] of ARCHES.entries()) {
    labels.set(`arch${i}`, out.length);
    out.push({ code: LD_ABS, t: 0, f: 0, k: 0 }); // seccomp_data.nr
    for (const [j, n] of a.numbers.entries()) {
      const last = j === a.numbers.length - 1;
      out.push({ code: JEQ, t: "mode", f: last ? "allow" : out.length + 1, k: n });
    }
  }
  labels.set("mode", out.length);
  out.push({ code: LD_ABS, t: 0, f: 0, k: 24 }); // args[1] (mode), low word (little-endian arches)
  out.push({ code: JSET, t: "allow", f: out.length + 1, k: FREEING_MODES });
  out.push({ code: RET, t: 0, f: 0, k: ERRNO });
  labels.set("allow", out.length);
  out.push({ code: RET, t: 0, f: 0, k: ALLOW });
  const at = (target: number | string) => (typeof target === "number" ? target : (labels.get(target) ?? -1));
  return out.map((ins, i): Ins => {
    if (ins.code !== JEQ && ins.code !== JSET) return [ins.code, 0, 0, ins.k];
    return [ins.code, at(ins.t) - i - 1, at(ins.f) - i - 1, ins.k];
  });
}

/** prctl's number for the runner's arch (the container runs the host's arch). */
function prctlNumber(arch: string): number {
  return arch === "arm64" ? 167 : arch === "arm" || arch === "ia32" ? 172 : 157;
}

/** The argv prefix that installs the filter and execs the rest of the argv. */
export function fallocateFilterPrefix(arch: string = process.arch): string[] {
  const program = fallocateFilter();
  const bytes = Buffer.alloc(program.length * 8);
  for (const [i, [code, jt, jf, k]] of program.entries()) {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  }
  const count = bytes.length / 8;
  const script = [
    `my $p = pack("H*", "${bytes.toString("hex")}");`,
    `my $f = pack("S x![p] p", ${count}, $p);`,
    // PR_SET_SECCOMP (22), SECCOMP_MODE_FILTER (2); Docker's no-new-privileges lets a process do it.
    `syscall(${prctlNumber(arch)}, 22, 2, $f) == 0 or die "scifi: cannot install the sandbox's fallocate filter: $!\\n";`,
    `exec { $ARGV[0] } @ARGV or die "scifi: cannot run $ARGV[0]: $!\\n";`,
  ].join(" ");
  return ["perl", "-e", script, "--"];
}
