// Just enough PNG decoding to look at a browser screenshot's pixels: 8-bit RGB/RGBA, not
// interlaced (what Chromium writes). No image library is a dependency of the project.
import { inflateSync } from "node:zlib";

export interface Pixels {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel. */
  data: Uint8Array;
}

export function decodePng(png: Buffer): Pixels {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG");
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString("latin1", offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colorType, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      if (depth !== 8 || interlace !== 0 || (colorType !== 2 && colorType !== 6))
        throw new Error(`unsupported PNG (depth ${depth}, color type ${colorType}, interlace ${interlace})`);
      channels = colorType === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(body);
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const rows = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) unfilter(raw, rows, y, stride, channels);
  const data = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    data.set(rows.subarray(i * channels, i * channels + 3), i * 4);
    data[i * 4 + 3] = channels === 4 ? (rows[i * channels + 3] ?? 255) : 255;
  }
  return { width, height, data };
}

function unfilter(raw: Buffer, out: Uint8Array, y: number, stride: number, bpp: number): void {
  const filter = raw[y * (stride + 1)];
  const src = y * (stride + 1) + 1;
  const dst = y * stride;
  for (let x = 0; x < stride; x++) {
    const a = x >= bpp ? (out[dst + x - bpp] ?? 0) : 0;
    const b = y > 0 ? (out[dst - stride + x] ?? 0) : 0;
    const c = x >= bpp && y > 0 ? (out[dst - stride + x - bpp] ?? 0) : 0;
    const value = raw[src + x] ?? 0;
    const predictor =
      filter === 0 ? 0 : filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : paeth(a, b, c);
    out[dst + x] = (value + predictor) & 0xff;
  }
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Number of distinct colours (a blank area has one). */
export function distinctColors(pixels: Pixels): number {
  const seen = new Set<number>();
  for (let i = 0; i < pixels.data.length; i += 4)
    seen.add(((pixels.data[i] ?? 0) << 16) | ((pixels.data[i + 1] ?? 0) << 8) | (pixels.data[i + 2] ?? 0));
  return seen.size;
}
