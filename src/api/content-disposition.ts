/**
 * `Content-Disposition: attachment` for any file name (RFC 6266 with RFC 8187 `filename*`): the
 * UTF-8 name percent-encoded, plus a plain-ASCII `filename` for old clients. Nothing of the name
 * reaches the header unescaped, so CR, LF, quotes and backslashes can never break it.
 */

/** RFC 8187 attr-char: what `filename*` may carry without percent-encoding. */
const attrChar = /[A-Za-z0-9!#$&+\-.^_`|~]/;

export function attachmentDisposition(name: string): string {
  let encoded = "";
  for (const byte of Buffer.from(name, "utf8")) {
    const char = String.fromCharCode(byte);
    encoded +=
      byte < 0x80 && attrChar.test(char)
        ? char
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return `attachment; filename="${asciiFallback(name)}"; filename*=UTF-8''${encoded}`;
}

/**
 * Printable ASCII only, with `"`, `\` and `%` (which some clients decode) replaced by `_`;
 * `download` when nothing printable is left.
 */
function asciiFallback(name: string): string {
  const plain = name.normalize("NFKD").replace(/[\u0300-\u036f]/g, "");
  let fallback = "";
  let kept = 0;
  for (const char of plain) {
    const code = char.codePointAt(0) ?? 0;
    const printable = code > 0x20 && code < 0x7f && char !== '"' && char !== "\\" && char !== "%";
    if (printable) kept += 1;
    fallback += printable || char === " " ? char : "_";
  }
  return kept === 0 ? "download" : fallback;
}
