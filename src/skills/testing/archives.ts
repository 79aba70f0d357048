/**
 * Test support for skills/: archives built byte by byte, so a test can write what no honest
 * archiver would (a `../` path, a link, a device, a size that lies). Never imported by production
 * code.
 */
import { crc32, deflateRawSync, gzipSync } from "node:zlib";

export interface TarEntry {
  path: string;
  /** ustar type flag: "0" file, "1" hard link, "2" symlink, "3" char device, "4" block device, "5" folder, "6" FIFO, "x" pax header. @default "0" */
  type?: string;
  data?: Uint8Array | string;
  /** The size written in the header. @default the data's length */
  declaredSize?: number;
  linkpath?: string;
  /** @default 0o644 (0o755 for folders) */
  mode?: number;
}

const bytesOf = (data: Uint8Array | string | undefined) =>
  typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data ?? new Uint8Array());

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

/** One 512-byte ustar header. */
function tarHeader(entry: TarEntry, size: number): Buffer {
  const header = Buffer.alloc(512);
  const type = entry.type ?? "0";
  header.write(entry.path.slice(0, 100), 0, "utf8");
  header.write(octal(entry.mode ?? (type === "5" ? 0o755 : 0o644), 8), 100, "ascii");
  header.write(octal(0, 8), 108, "ascii");
  header.write(octal(0, 8), 116, "ascii");
  header.write(octal(size, 12), 124, "ascii");
  header.write(octal(1_700_000_000, 12), 136, "ascii");
  header.write("        ", 148, "ascii");
  header.write(type, 156, "ascii");
  if (entry.linkpath !== undefined) header.write(entry.linkpath.slice(0, 100), 157, "utf8");
  header.write("ustar\0", 257, "ascii");
  header.write("00", 263, "ascii");
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return header;
}

/** A tar archive of `entries`, each a header and its data padded to 512 bytes, then two zero blocks. */
export function tarArchive(entries: readonly TarEntry[], options: { end?: boolean } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const data = bytesOf(entry.data);
    parts.push(tarHeader(entry, entry.declaredSize ?? data.byteLength), data);
    const padding = (512 - (data.byteLength % 512)) % 512;
    parts.push(Buffer.alloc(padding));
  }
  if (options.end !== false) parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** A pax extended header that gives the next entry's path (overriding the one in its header). */
export function paxPath(path: string): TarEntry {
  const record = (text: string) => {
    // "<length> path=<value>\n" where length counts itself.
    let length = text.length + 3;
    while (`${length} ${text}\n`.length !== length) length++;
    return `${length} ${text}\n`;
  };
  return { path: "PaxHeader", type: "x", data: record(`path=${path}`) };
}

export function tarGz(entries: readonly TarEntry[]): Buffer {
  return gzipSync(tarArchive(entries));
}

export interface ZipEntry {
  path: string;
  data?: Uint8Array | string;
  /** Unix mode with its file-type bits, e.g. 0o100644, 0o120777 (a symlink), 0o020644 (a device). @default 0o100644 */
  unixMode?: number;
  /** @default true (deflate) */
  deflate?: boolean;
  /** The uncompressed size written in the headers. @default the data's length */
  declaredSize?: number;
  /** Sets the "encrypted" flag. */
  encrypted?: boolean;
}

/** A zip archive (made by Unix), one local header and central record per entry. */
export function zipArchive(entries: readonly ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.path, "utf8");
    const data = bytesOf(entry.data);
    const deflate = entry.deflate !== false;
    const stored = deflate ? deflateRawSync(data) : data;
    const flags = 0x0800 | (entry.encrypted === true ? 0x0001 : 0);
    const size = entry.declaredSize ?? data.byteLength;
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(deflate ? 8 : 0, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(stored.byteLength, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.byteLength, 26);
    locals.push(local, name, stored);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(deflate ? 8 : 0, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(stored.byteLength, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.byteLength, 28);
    central.writeUInt32LE(((entry.unixMode ?? 0o100644) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.byteLength + name.byteLength + stored.byteLength;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.byteLength, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A SKILL.md text. */
export function skillMarkdown(name: string, description: string, body = `# ${name}\nDo it.`) {
  return `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`;
}
