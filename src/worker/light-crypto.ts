/**
 * What the worker needs of cryptography on a wake's path, without Node's `crypto` module: the
 * WebSocket handshake's key and accept check (random bytes, SHA-1), frame masks (random bytes),
 * and the done-log's key of a call id (SHA-256). Loading `node:crypto` (and the ~25 modules of
 * its own it loads) took 13–28 ms of the worker's start on the machine of decision 0021's seventh
 * pass, before its first line of work; a wake's first call never needed more than these.
 *
 * Invariants:
 *   LC1 sha1 and sha256 give the digests `node:crypto` gives, for any input (UTF-8 for strings);
 *       tested against it on seeded inputs of every length around the padding's edges.
 *   LC2 randomBytes and randomFill come from the kernel's generator (/dev/urandom, read 4 KiB at
 *       a time into a pool that hands out each byte once); where it cannot be read they come from
 *       `node:crypto`'s, never from Math.random.
 *   LC3 nodeCrypto() loads `node:crypto` at its first call, for what is not on a wake's path
 *       (content hashes of files and skills, where its native speed matters).
 */
import { closeSync, openSync, readSync } from "node:fs";

/** `node:crypto`, loaded at first use (LC3). */
export function nodeCrypto(): typeof import("node:crypto") {
  return process.getBuiltinModule("node:crypto");
}

const poolBytes = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function refillPool(): void {
  const fresh = Buffer.allocUnsafe(poolBytes);
  try {
    const fd = openSync("/dev/urandom", "r");
    try {
      let filled = 0;
      while (filled < poolBytes) {
        const read = readSync(fd, fresh, filled, poolBytes - filled, null);
        if (read <= 0) throw new Error("/dev/urandom ended");
        filled += read;
      }
    } finally {
      closeSync(fd);
    }
  } catch {
    nodeCrypto().randomFillSync(fresh); // LC2
  }
  pool = fresh;
  poolOffset = 0;
}

/** Fills `target` with random bytes from the kernel (LC2). */
export function randomFill<T extends Uint8Array>(target: T): T {
  let written = 0;
  while (written < target.length) {
    if (poolOffset >= pool.length) refillPool();
    const take = Math.min(target.length - written, pool.length - poolOffset);
    target.set(pool.subarray(poolOffset, poolOffset + take), written);
    // Each byte is handed out once.
    pool.fill(0, poolOffset, poolOffset + take);
    poolOffset += take;
    written += take;
  }
  return target;
}

export function randomBytes(size: number): Buffer {
  return randomFill(Buffer.allocUnsafe(size));
}

const toBytes = (data: string | Uint8Array): Uint8Array =>
  typeof data === "string" ? Buffer.from(data, "utf8") : data;

/** The message with SHA-1/SHA-2 padding: 0x80, zeros, and the bit length (big-endian, 64 bits). */
function padded(message: Uint8Array): DataView {
  const length = Math.ceil((message.length + 9) / 64) * 64;
  const bytes = new Uint8Array(length);
  bytes.set(message);
  bytes[message.length] = 0x80;
  const view = new DataView(bytes.buffer);
  const bits = message.length * 8;
  view.setUint32(length - 8, Math.floor(bits / 2 ** 32));
  view.setUint32(length - 4, bits >>> 0);
  return view;
}

function digest(words: ArrayLike<number>): Buffer {
  const out = Buffer.allocUnsafe(words.length * 4);
  for (let index = 0; index < words.length; index++)
    out.writeUInt32BE(words[index]! >>> 0, index * 4);
  return out;
}

/** The block's working variables added to the hash state (an Int32Array wraps at 2^32). */
function addInto(state: Int32Array, working: readonly number[]): void {
  working.forEach((value, index) => {
    state[index] = state[index]! + value;
  });
}

const rotl = (value: number, bits: number) => (value << bits) | (value >>> (32 - bits));
const rotr = (value: number, bits: number) => (value >>> bits) | (value << (32 - bits));

/** SHA-1 (FIPS 180-4), as the WebSocket handshake's accept check needs it (LC1). */
export function sha1(data: string | Uint8Array): Buffer {
  const view = padded(toBytes(data));
  const state = new Int32Array([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0]);
  const w = new Int32Array(80);
  for (let block = 0; block < view.byteLength; block += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getInt32(block + t * 4);
    for (let t = 16; t < 80; t++) w[t] = rotl(w[t - 3]! ^ w[t - 8]! ^ w[t - 14]! ^ w[t - 16]!, 1);
    let a = state[0]!;
    let b = state[1]!;
    let c = state[2]!;
    let d = state[3]!;
    let e = state[4]!;
    for (let t = 0; t < 80; t++) {
      let f: number;
      let k: number;
      if (t < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (t < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (t < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6;
      }
      const next = (rotl(a, 5) + f + e + k + w[t]!) | 0;
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = next;
    }
    addInto(state, [a, b, c, d, e]);
  }
  return digest(state);
}

const sha256K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 (FIPS 180-4), for short inputs such as call ids (LC1; files use nodeCrypto()). */
export function sha256(data: string | Uint8Array): Buffer {
  const view = padded(toBytes(data));
  const state = new Int32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Int32Array(64);
  for (let block = 0; block < view.byteLength; block += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getInt32(block + t * 4);
    for (let t = 16; t < 64; t++) {
      const w15 = w[t - 15]!;
      const w2 = w[t - 2]!;
      const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
      const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
      w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
    }
    let a = state[0]!;
    let b = state[1]!;
    let c = state[2]!;
    let d = state[3]!;
    let e = state[4]!;
    let f = state[5]!;
    let g = state[6]!;
    let h = state[7]!;
    for (let t = 0; t < 64; t++) {
      const s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const choice = (e & f) ^ (~e & g);
      const temp1 = (h + s1 + choice + sha256K[t]! + w[t]!) | 0;
      const s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const majority = (a & b) ^ (a & c) ^ (b & c);
      const temp2 = (s0 + majority) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + temp1) | 0;
      d = c;
      c = b;
      b = a;
      a = (temp1 + temp2) | 0;
    }
    addInto(state, [a, b, c, d, e, f, g, h]);
  }
  return digest(state);
}
