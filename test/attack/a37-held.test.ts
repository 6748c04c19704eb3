// Attacker on issue 37 (output formats): attacks on the output guard that HOLD. Each output is made
// by the real library (h5py, numpy, pickle, tarfile, zipfile in scifi-sci:local, one container)
// and names /task/checks/reference.h5 a way a grader's reader would follow; the guard must refuse
// it even without the hidden-name search (no hiddenNames given). What broke is in test/open/a37-*.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/checks/output-formats.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, IMAGE } from "../run/harness.ts";

const MAKE = `
import h5py, io, numpy as np, pickle, tarfile, zipfile, gzip
R = "/task/checks/reference.h5"
def h5(name, **kw):
    return h5py.File(f"/o/{name}", "w", **kw)
with h5("ext-earliest.h5") as h: h["sum"] = h5py.ExternalLink(R, "/sum")
with h5("ext-order.h5", track_order=True) as h: h["sum"] = h5py.ExternalLink(R, "/sum")
with h5("ext-longname.h5", libver="latest") as h: h["s" * 300] = h5py.ExternalLink(R, "/sum")
with h5("ext-utf8.h5", libver="latest") as h: h["sümé"] = h5py.ExternalLink(R, "/sum")
with h5("ext-dense.h5", libver="latest") as h:
    g = h.create_group("g", track_order=True)
    for i in range(40): g[f"d{i}"] = i
    g["sum"] = h5py.ExternalLink(R, "/sum")
with h5("ext-attrs.h5", libver="latest") as h:
    g = h.create_group("g")
    g["sum"] = h5py.ExternalLink(R, "/sum")
    for i in range(40): g.attrs[f"a{i}"] = i
with h5("vds-latest.h5", libver="latest") as h:
    layout = h5py.VirtualLayout(shape=(4,), dtype="i8")
    layout[:] = h5py.VirtualSource(R, "sum", shape=(4,))
    h.create_virtual_dataset("sum", layout)
open("/o/pickle-p2.pkl", "wb").write(pickle.dumps(eval, protocol=2))
open("/o/pickle-p5.pkl", "wb").write(pickle.dumps(eval, protocol=5))
np.save("/o/objects.npy", np.array([1, "x"], dtype=object))
with tarfile.open("/o/link.tar", "w") as t:
    i = tarfile.TarInfo("result.json"); i.type = tarfile.SYMTYPE; i.linkname = "/task/checks/reference.h5"; t.addfile(i)
open("/o/link.tar.gz", "wb").write(gzip.compress(open("/o/link.tar", "rb").read()))
with zipfile.ZipFile("/o/link.zip", "w") as z:
    i = zipfile.ZipInfo("result.json"); i.external_attr = (0o120777 << 16); z.writestr(i, R)
with zipfile.ZipFile("/o/dotdot.zip", "w") as z: z.writestr("../checks/reference.h5", b"x")
b = io.BytesIO(); np.savez(b, a=np.array([1, "x"], dtype=object)); open("/o/objects.npz", "wb").write(b.getvalue())
xml = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY x SYSTEM "/task/checks/reference.h5">]><r>&x;</r>'
open("/o/entity-utf16.xml", "wb").write(xml.encode("utf-16"))
open("/o/entity-utf16be-nobom.xml", "wb").write(xml.encode("utf-16-be"))
open("/o/entity-ebcdic.xml", "wb").write(xml.replace("UTF-16", "IBM037").encode("cp037"))
open("/o/xinclude-2001-default.xml", "w").write('<r><include xmlns="http://www.w3.org/2001/XInclude" href="x.txt" parse="text"/></r>')
open("/o/xinclude-charref.xml", "w").write('<r xmlns:q="http://www.w3.org/2001/X&#73;nclude"><q:include href="/task/checks/reference.h5" parse="text"/></r>')
`;

const CASES: [string, string][] = [
  ["ext-earliest.h5", "an HDF5 external link"],
  ["ext-order.h5", "an HDF5 external link"],
  ["ext-longname.h5", "an HDF5 external link"],
  ["ext-utf8.h5", "an HDF5 external link"],
  ["ext-dense.h5", "an HDF5 external link"],
  ["ext-attrs.h5", "an HDF5 external link"],
  ["vds-latest.h5", "an HDF5 virtual dataset"],
  ["pickle-p2.pkl", "a Python pickle"],
  ["pickle-p5.pkl", "a Python pickle"],
  ["objects.npy", "object arrays"],
  ["link.tar", "tar"],
  ["link.tar.gz", "gzip"],
  ["link.zip", "zip"],
  ["dotdot.zip", "zip"],
  ["objects.npz", "object arrays"],
  ["entity-utf16.xml", "a DOCTYPE that declares entities"],
  ["entity-utf16be-nobom.xml", "a DOCTYPE that declares entities"],
  ["entity-ebcdic.xml", "EBCDIC"],
  ["xinclude-2001-default.xml", "an XInclude"],
  ["xinclude-charref.xml", "an XInclude"],
];

describe.skipIf(!hasEngine("docker"))(
  "A37 held: outputs that name the reference the ways readers follow",
  () => {
    const dir = mkdtempSync(join(tmpdir(), "a37-held-"));
    beforeAll(() => {
      ensureImage();
      chmodSync(dir, 0o777);
      writeFileSync(join(dir, "make.py"), MAKE);
      const uid = `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`;
      execFileSync("docker", [
        "run",
        "--rm",
        "--network=none",
        "-u",
        uid,
        "-v",
        `${dir}:/o`,
        IMAGE,
        "python3",
        "/o/make.py",
      ]);
    }, 1_800_000);
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each(CASES)("%s is refused (%s)", (name, what) => {
      const problem = outputFormatProblem(`out/${name}`, readFileSync(join(dir, name)));
      expect(problem).toContain(`declared output out/${name} is refused`);
      expect(problem).toContain(what);
    });

    it("a gzip of two members whose second holds the entity declaration is refused (every member is read)", () => {
      const data = Buffer.concat([
        gzipSync('<?xml version="1.0"?>\n<!DOCTYPE r ['),
        gzipSync('<!ENTITY x SYSTEM "/task/checks/expected.txt">]><r>&x;</r>\n'),
      ]);
      expect(outputFormatProblem("out/result.xml", data)).toContain("a DOCTYPE that declares entities");
    });
  },
);
