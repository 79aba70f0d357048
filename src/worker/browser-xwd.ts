/**
 * A screenshot of a whole X display without an extra package: Xvfb's `-fbdir` keeps the screen's
 * framebuffer in a file in XWD format (X Window Dump), which this turns into a PNG with zlib.
 * Only what Xvfb writes is supported: ZPixmap, 24 or 32 bits per pixel, TrueColor masks.
 */

export interface XwdImage {
  width: number;
  height: number;
  /** RGB, 3 bytes per pixel, rows top to bottom. */
  rgb: Buffer;
}

/** Parses an XWD dump (big- or little-endian header, as the file says). */
export function parseXwd(file: Buffer): XwdImage {
  if (file.length < 100) throw new Error("the framebuffer file is too short to be an XWD image");
  // The header is 25 CARD32 fields in the writer's byte order; version 7 tells which order.
  const bigEndian = file.readUInt32BE(4) === 7;
  const field = (index: number) =>
    bigEndian ? file.readUInt32BE(index * 4) : file.readUInt32LE(index * 4);
  if (field(1) !== 7) throw new Error("not an XWD version 7 image");
  const headerSize = field(0);
  const format = field(2);
  const width = field(4);
  const height = field(5);
  const byteOrder = field(7); // 0 LSBFirst, 1 MSBFirst
  const bitsPerPixel = field(11);
  const bytesPerLine = field(12);
  const redMask = field(14);
  const greenMask = field(15);
  const blueMask = field(16);
  const colormapEntries = field(19); // ncolors: XWDColor entries of 12 bytes follow the header
  if (format !== 2) throw new Error(`XWD format ${format} is not ZPixmap`);
  if (bitsPerPixel !== 32 && bitsPerPixel !== 24)
    throw new Error(`XWD images of ${bitsPerPixel} bits per pixel are not supported`);
  const dataStart = headerSize + colormapEntries * 12;
  if (file.length < dataStart + bytesPerLine * height)
    throw new Error("the framebuffer file is shorter than its header says");
  const shift = (mask: number) => (mask === 0 ? 0 : 31 - Math.clz32(mask & -mask));
  const [redShift, greenShift, blueShift] = [shift(redMask), shift(greenMask), shift(blueMask)];
  const bytes = bitsPerPixel / 8;
  const rgb = Buffer.alloc(width * height * 3);
  for (let row = 0; row < height; row++) {
    const line = dataStart + row * bytesPerLine;
    for (let column = 0; column < width; column++) {
      const at = line + column * bytes;
      let pixel: number;
      if (bytes === 4) pixel = byteOrder === 0 ? file.readUInt32LE(at) : file.readUInt32BE(at);
      else
        pixel =
          byteOrder === 0
            ? file[at]! | (file[at + 1]! << 8) | (file[at + 2]! << 16)
            : (file[at]! << 16) | (file[at + 1]! << 8) | file[at + 2]!;
      const out = (row * width + column) * 3;
      rgb[out] = ((pixel & redMask) >>> redShift) & 0xff;
      rgb[out + 1] = ((pixel & greenMask) >>> greenShift) & 0xff;
      rgb[out + 2] = ((pixel & blueMask) >>> blueShift) & 0xff;
    }
  }
  return { width, height, rgb };
}

const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** Encodes RGB pixels as a PNG (8-bit truecolor, no filter). */
export function encodePng(image: XwdImage): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(image.width, 0);
  header.writeUInt32BE(image.height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolor
  const stride = image.width * 3;
  const raw = Buffer.alloc((stride + 1) * image.height);
  for (let row = 0; row < image.height; row++)
    image.rgb.copy(raw, row * (stride + 1) + 1, row * stride, (row + 1) * stride);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    // zlib loads with the first screenshot, not with every worker.
    chunk("IDAT", process.getBuiltinModule("node:zlib").deflateSync(raw, { level: 6 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
