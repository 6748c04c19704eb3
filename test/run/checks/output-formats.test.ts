// Outputs whose format can name another file (runner/run/checks/output-formats.ts): each detector refuses
// what names a file and passes the honest file of the same format. The HDF5 and archive fixtures
// are real files made by h5py and Python's tarfile/zipfile (fixtures/output-formats/make.py).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, zstdCompressSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../../runner/run/checks/output-formats.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "output-formats");
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const REF = "/task/checks/reference.h5";

describe("HDF5 outputs", () => {
  it.each([
    ["ext-link.h5", "an HDF5 external link (to object /values)", REF],
    ["ext-link-latest.h5", "an HDF5 external link (to object /values)", REF],
    ["userblock.h5", "an HDF5 external link (to object /values)", REF],
    ["vds.h5", "an HDF5 virtual dataset", REF],
    ["efl.h5", "HDF5 external raw storage (an external file list)", REF],
  ])("refuses %s, naming the structure and the reference", (name, what, reference) => {
    const problem = outputFormatProblem(`out/${name}`, fixture(name));
    expect(problem).toContain(
      `declared output out/${name} is refused: it is HDF5 (or NetCDF-4) holding ${what}, naming ${reference}`,
    );
  });

  it.each(["plain.h5", "plain-latest.h5"])(
    "passes an honest %s (datasets, groups, attributes, a soft link, dense links)",
    (name) => {
      expect(outputFormatProblem(name, fixture(name))).toBeUndefined();
    },
  );

  it("refuses an external link whose value has bytes after the object path (the library ignores them)", () => {
    const data = Buffer.from(fixture("ext-link.h5"));
    const value = data.indexOf(Buffer.from([0x01, 0x08, 0x40, 0x06]));
    const lengthAt = value + 4 + "values".length;
    expect(data.readUInt16LE(lengthAt)).toBe(35);
    data.writeUInt16LE(36, lengthAt); // the message's padding byte now belongs to the value
    expect(outputFormatProblem("x.h5", data)).toContain(
      `an HDF5 external link (to object /values), naming ${REF}`,
    );
  });

  it("refuses a group whose links are stored compressed (it cannot look inside)", () => {
    const data = Buffer.from(fixture("plain-latest.h5"));
    const heap = data.indexOf("FRHP");
    expect(heap).toBeGreaterThan(0);
    data.writeUInt16LE(12, heap + 7); // an I/O filter pipeline on the link heap
    expect(outputFormatProblem("g.h5", data)).toContain("links are stored compressed");
  });

  it("refuses an HDF5 superblock of a version it cannot read", () => {
    const data = Buffer.from(fixture("plain.h5"));
    data[8] = 7;
    expect(outputFormatProblem("s.h5", data)).toContain("superblock the runner cannot read (version 7)");
  });
});

describe("archives and compressed outputs", () => {
  it.each([
    ["link.tar", "a tar member values.txt that is a symbolic link", REF],
    [
      "escape.tar",
      "a tar member whose name leaves the folder it is unpacked into",
      "../checks/expected.json",
    ],
    ["link.zip", "a zip member values.txt that is a symbolic link", "values.txt"],
  ])("refuses %s", (name, what, reference) => {
    expect(outputFormatProblem(name, fixture(name))).toContain(`holding ${what}, naming ${reference}`);
  });

  it("reads an old v7 tar (no ustar magic, a right checksum) too", () => {
    const data = Buffer.from(fixture("link.tar"));
    const second = 1024; // a.txt's header and its one block of data come first
    for (const at of [0, second]) {
      data.fill(0, at + 257, at + 265);
      data.fill(0x20, at + 148, at + 156);
      let sum = 0;
      for (let i = at; i < at + 512; i++) sum += data[i] ?? 0;
      data.write(`${sum.toString(8).padStart(6, "0")}\0 `, at + 148, "latin1");
    }
    expect(outputFormatProblem("v7.tar", data)).toContain(
      `a tar member values.txt that is a symbolic link, naming ${REF}`,
    );
  });

  it("looks through a gzip'd tar holding a zip holding an HDF5 with an external link", () => {
    const problem = outputFormatProblem("nested.tar.gz", fixture("nested.tar.gz"));
    expect(problem).toContain(
      "it is HDF5 (or NetCDF-4) (in gzip member (its content), tar member out.zip, zip member data/ext.h5) holding an HDF5 external link",
    );
  });

  it("checks the whole file too when it is also an archive, and refuses a zip whose offsets do not hold", () => {
    const xml = Buffer.from(`<!DOCTYPE r [<!ENTITY x SYSTEM "/task/checks/ref">]><r>&x;</r>\n`);
    const after = Buffer.concat([fixture("plain.zip"), xml]);
    expect(outputFormatProblem("p.zip", after)).toContain(
      "it is XML holding a DOCTYPE that declares entities",
    );
    const before = Buffer.concat([xml, fixture("plain.zip")]);
    expect(outputFormatProblem("p.xml", before)).toContain(
      "a zip archive whose central directory the runner cannot read",
    );
  });

  it.each(["plain.tar.gz", "plain.zip"])("passes an honest %s", (name) => {
    expect(outputFormatProblem(name, fixture(name))).toBeUndefined();
  });

  it.each([
    ["xz", Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 1, 2])],
    ["bzip2", Buffer.from("BZh91AY&SY")],
  ])("refuses %s, which it cannot look inside, and says so", (format, data) => {
    expect(outputFormatProblem("x", data)).toContain(
      `a ${format}-compressed file: the runner cannot look inside it`,
    );
  });

  it("looks inside zstd", () => {
    const xml = Buffer.from(`<!DOCTYPE r [<!ENTITY x SYSTEM "/task/checks/ref">]><r>&x;</r>`);
    expect(outputFormatProblem("x.zst", zstdCompressSync(xml))).toContain(
      "it is XML (in zstd member (its content)) holding a DOCTYPE that declares entities",
    );
    expect(outputFormatProblem("x.zst", zstdCompressSync(Buffer.from("1,2\n")))).toBeUndefined();
  });

  it("refuses a gzip file that unpacks past its budget or not at all", () => {
    expect(outputFormatProblem("x.gz", gzipSync(Buffer.alloc(4096)), { inflateBytes: 1024 })).toContain(
      "does not unpack within the runner's limit",
    );
    expect(outputFormatProblem("x.gz", Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3]))).toContain(
      "does not unpack",
    );
  });
});

describe("XML, SVG, HTML and other text outputs", () => {
  const refused: [string, string, string][] = [
    [
      "XML",
      "a DOCTYPE that declares entities",
      `<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x SYSTEM "file:///task/checks/ref.xml">]>\n<r>&x;</r>`,
    ],
    [
      "XML",
      "a DOCTYPE that declares entities",
      `<!DOCTYPE r [<!ENTITY % p SYSTEM "../checks/ref.dtd"> %p;]><r/>`,
    ],
    ["XML", "a DOCTYPE with an external DTD", `<!DOCTYPE r SYSTEM "/task/checks/ref.dtd"><r/>`],
    [
      "XML",
      "an XInclude",
      `<r xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="../checks/ref.xml" parse="text"/></r>`,
    ],
    [
      "XML",
      "a stylesheet processing instruction",
      `<?xml-stylesheet type="text/xsl" href="checks/ref.xsl"?><r/>`,
    ],
    [
      "XDMF",
      "a DataItem stored in another file",
      `<Xdmf><DataItem Dimensions="16" Format="HDF">/task/checks/reference.h5:/values</DataItem></Xdmf>`,
    ],
    [
      "GDAL VRT",
      "a source file",
      `<VRTDataset><SourceFilename relativeToVRT="1">../checks/ref.tif</SourceFilename></VRTDataset>`,
    ],
    [
      "XML, SVG or HTML",
      "a reference to a file outside the output's folder",
      `<svg><image href="/task/checks/ref.png"/></svg>`,
    ],
    [
      "XML, SVG or HTML",
      "a reference to a file outside the output's folder",
      `<VTKFile type="vtkMultiBlockDataSet"><DataSet file="../checks/ref.vtu"/></VTKFile>`,
    ],
    [
      "XML, SVG or HTML",
      "a reference to a file outside the output's folder",
      `<img src="&#46;&#46;/checks/ref.png">`,
    ],
    [
      "XML, SVG or HTML",
      "a reference to a file outside the output's folder",
      `<img src="%2e%2e/checks/ref.png">`,
    ],
    [
      "XML, SVG or HTML",
      "a reference to a file outside the output's folder",
      `<style>rect { fill: url('/task/checks/ref.svg#p') }</style>`,
    ],
    [
      "LaTeX",
      "a command that reads another file",
      `\\documentclass{article}\\begin{document}\\input{../checks/ref}\\end{document}`,
    ],
    ["YAML", "a tag that includes a file or builds objects", `values: !include /task/checks/ref.yaml\n`],
    [
      "YAML",
      "a tag that includes a file or builds objects",
      `x: !!python/object/apply:os.system ["cat checks/ref"]\n`,
    ],
    ["JSON-LD", "a context loaded from elsewhere", `{"@context": "file:///task/checks/ref.jsonld", "v": 1}`],
    [
      "text",
      "a file: URL",
      `{"version": 1, "refs": {"sum/0": ["file:///task/checks/reference.h5", 2048, 8]}}`,
    ],
  ];
  it.each(refused)("refuses %s holding %s", (format, what, text) => {
    expect(outputFormatProblem("out.txt", Buffer.from(text))).toContain(
      `it is ${format} holding ${what}, naming `,
    );
  });

  it("expands character references first (an XInclude namespace written with one)", () => {
    const text = `<include xmlns="http://www.w3.org/2001/X&#73;nclude" href="ref.xml" parse="text"/>`;
    expect(outputFormatProblem("x.xml", Buffer.from(text))).toContain("it is XML holding an XInclude");
  });

  it("reads XML written as UTF-16 too", () => {
    const text = `<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY x SYSTEM "/task/checks/ref">]><r>&x;</r>`;
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]);
    expect(outputFormatProblem("u.xml", le)).toContain("a DOCTYPE that declares entities");
    expect(outputFormatProblem("u.xml", Buffer.from(text, "utf16le").swap16())).toContain(
      "a DOCTYPE that declares entities",
    );
  });

  it("refuses UTF-32 and EBCDIC text, which it does not read", () => {
    const utf32 = Buffer.from([0, 0, 0xfe, 0xff, 0, 0, 0, 0x3c]);
    expect(outputFormatProblem("u.xml", utf32)).toContain(
      "UTF-32 text holding an encoding the runner does not read",
    );
  });

  it.each([
    ["plain XML", `<?xml version="1.0"?>\n<results><value n="1">3.14</value></results>\n`],
    [
      "HTML5 with relative and web links",
      `<!DOCTYPE html><html><a href="https://example.org/x">x</a><img src="plot.png"><a href="#top">t</a><img src="data:image/png;base64,AAAA"></html>`,
    ],
    [
      "SVG with a local fragment",
      `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href="#a"/></svg>`,
    ],
    ["CSV", "x,y\n1,2\n3,4\n"],
    ["JSON with an inline context", `{"@context": {"v": "http://schema.org/value"}, "v": 1}`],
    ["YAML with anchors", "a: &x 1\nb: *x\n"],
    ["SVG with CSS !important", `<svg><style>rect { fill: red !important }</style><rect width="1"/></svg>`],
    ["a config text with absolute paths outside any tag", "data = '/home/user/run1'\nfile = \"/tmp/x\"\n"],
    ["LaTeX with no file read", "\\documentclass{article}\\begin{document}$x^2$\\end{document}"],
  ])("passes %s", (_, text) => {
    expect(outputFormatProblem("out", Buffer.from(text))).toBeUndefined();
  });
});

describe("formats that run code or name files in a reader", () => {
  it("refuses a pickle and an .npy of objects; passes an .npy of numbers", () => {
    expect(outputFormatProblem("p.pkl", Buffer.from([0x80, 4, 0x95, 0x2e]))).toContain("a Python pickle");
    const npy = (descr: string) => {
      const header = `${`{'descr': '${descr}', 'fortran_order': False, 'shape': (2,), }`.padEnd(118)}\n`;
      return Buffer.concat([
        Buffer.from("\x93NUMPY\x01\x00", "latin1"),
        Buffer.from([header.length, 0]),
        Buffer.from(header),
        Buffer.alloc(16),
      ]);
    };
    expect(outputFormatProblem("o.npy", npy("|O"))).toContain("object arrays");
    expect(outputFormatProblem("f.npy", npy("<f8"))).toBeUndefined();
  });

  it("refuses an SQLite database whose SQL reads files; passes a plain one", () => {
    const db = (sql: string) =>
      Buffer.concat([Buffer.from("SQLite format 3\0"), Buffer.alloc(84), Buffer.from(sql)]);
    expect(outputFormatProblem("r.db", db("CREATE VIEW v AS SELECT readfile('checks/ref.txt')"))).toContain(
      "SQL calling readfile()",
    );
    expect(outputFormatProblem("r.db", db("CREATE TABLE t(x REAL)"))).toBeUndefined();
  });

  it("refuses a FITS grouping table and a ROOT chain; passes a plain FITS header", () => {
    const fits = (cards: string) => Buffer.from(`SIMPLE  =                    T${cards}`.padEnd(2880));
    expect(outputFormatProblem("g.fits", fits("MEMBER_LOCATION= '/task/checks/ref.fits'"))).toContain(
      "grouping table",
    );
    expect(outputFormatProblem("p.fits", fits("BITPIX  =                  -64"))).toBeUndefined();
    expect(outputFormatProblem("c.root", Buffer.from("root\0\0\0\0TChain"))).toContain("a TChain");
  });

  it("refuses a Parquet file whose column chunk is in another file (file_path), or whose footer it cannot read", () => {
    // Thrift compact: FileMetaData {1: version, 2: schema [], 3: num_rows, 4: row_groups [RowGroup {1:
    // columns [ColumnChunk {1: file_path?, 2: file_offset}], 2: total_byte_size, 3: num_rows}]}.
    const parquet = (filePath?: string) => {
      const path = filePath ? [0x18, filePath.length, ...Buffer.from(filePath)] : [];
      const chunk = [...path, filePath ? 0x16 : 0x26, 0x00, 0x00];
      const footer = Buffer.from([
        0x15,
        0x02,
        0x19,
        0x0c,
        0x16,
        0x00,
        0x19,
        0x1c,
        0x19,
        0x1c,
        ...chunk,
        0x26,
        0x00,
        0x16,
        0x00,
        0x00,
        0x00,
      ]);
      const length = Buffer.alloc(4);
      length.writeUInt32LE(footer.length);
      return Buffer.concat([Buffer.from("PAR1"), Buffer.alloc(8), footer, length, Buffer.from("PAR1")]);
    };
    expect(outputFormatProblem("t.parquet", parquet("/task/checks/ref.parquet"))).toContain(
      "it is a Parquet file holding a column chunk stored in another file (file_path), naming /task/checks/ref.parquet",
    );
    expect(outputFormatProblem("t.parquet", parquet())).toBeUndefined();
    // A footer that says it holds 127 row groups and ends.
    const cut = Buffer.from([...Buffer.from("PAR1"), 0x49, 0xfc, 0x7f, 3, 0, 0, 0, ...Buffer.from("PAR1")]);
    expect(outputFormatProblem("t.parquet", cut)).toContain(
      "a footer the runner cannot read (footer ends early)",
    );
    const encrypted = Buffer.concat([parquet().subarray(0, -4), Buffer.from("PARE")]);
    expect(outputFormatProblem("t.parquet", encrypted)).toContain("an encrypted footer");
  });

  it("refuses any output holding a hidden asset's name, whatever its format", () => {
    const names = ["checks/reference.h5", "reference.h5"];
    const data = Buffer.from("\x00\x01binary with reference.h5 inside\x00", "latin1");
    expect(outputFormatProblem("b.bin", data, { hiddenNames: names })).toContain(
      "the name of a hidden check asset, naming reference.h5",
    );
    expect(
      outputFormatProblem("b.bin", Buffer.from("no names here"), { hiddenNames: names }),
    ).toBeUndefined();
  });
});
