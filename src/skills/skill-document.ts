/**
 * SKILL.md: front matter between two `---` lines, then the body in Markdown.
 *
 *   ---
 *   name: pdf-tools
 *   description: Extract text and tables from PDF files.
 *   ---
 *   # PDF tools
 *   Run `python3 ~/skills/pdf-tools/extract.py <file>` …
 *
 * The front matter is read as the small part of YAML skills use: `key: value` lines, values plain
 * or quoted ("…" with JSON escapes, '…' with '' for a quote), and folded or literal blocks
 * (`description: >` then indented lines). `name` and `description` are required; other keys
 * (license, metadata, allowed-tools…) are kept as written and otherwise ignored.
 */
import { InvalidRequestError } from "../errors/index.ts";
import { isSkillName, skillLimits } from "../protocol/index.ts";

export interface SkillDocument {
  name: string;
  /** One line. */
  description: string;
  /** Markdown after the front matter, without leading blank lines or trailing whitespace. */
  body: string;
  /** Front-matter lines other than name and description, as written (kept on re-rendering). */
  extra: string[];
}

const fix =
  "SKILL.md starts with front matter: a line `---`, then `name: <skill-name>` and `description: <one line>`, then a line `---`, then the instructions";

function invalid(message: string, field = "SKILL.md"): InvalidRequestError {
  return new InvalidRequestError(message, { issues: [{ path: field, message }] });
}

/** A quoted or plain scalar on one line, as YAML reads it. */
function scalar(raw: string, key: string): string {
  const value = raw.trim();
  if (value.startsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(value);
      if (typeof parsed === "string") return parsed;
    } catch {
      // reported below
    }
    throw invalid(`SKILL.md: the quoted ${key} is not closed properly (${value.slice(0, 60)})`);
  }
  if (value.startsWith("'")) {
    if (value.length < 2 || !value.endsWith("'"))
      throw invalid(`SKILL.md: the quoted ${key} is not closed properly (${value.slice(0, 60)})`);
    return value.slice(1, -1).replaceAll("''", "'");
  }
  // A plain scalar ends at a comment.
  return value.replace(/\s+#.*$/, "");
}

/** Reads SKILL.md's text (already decoded as UTF-8). Throws invalid_request saying how to fix it. */
export function parseSkillDocument(text: string): SkillDocument {
  const lines = text
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .split("\n");
  if (lines[0]?.trimEnd() !== "---") throw invalid(`SKILL.md has no front matter: ${fix}`);
  const end = lines.findIndex((line, index) => index > 0 && line.trimEnd() === "---");
  if (end === -1) throw invalid(`SKILL.md's front matter has no closing \`---\` line: ${fix}`);

  const fields = new Map<string, string>();
  const extra: string[] = [];
  for (let index = 1; index < end; index++) {
    const line = lines[index]!;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const match = /^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$/.exec(line);
    if (match === null) {
      if (/^\s/.test(line)) {
        extra.push(line); // the continuation of a key kept as written (metadata maps, lists)
        continue;
      }
      throw invalid(
        `SKILL.md front matter line ${index + 1} is not \`key: value\` (${line.slice(0, 60)}): ${fix}`,
      );
    }
    const key = match[1]!;
    const rest = match[2]!;
    // The indented lines that follow belong to this key (a block, or a plain value continued).
    const continued: string[] = [];
    while (index + 1 < end && /^(\s|$)/.test(lines[index + 1]!)) continued.push(lines[++index]!);
    if (key !== "name" && key !== "description") {
      extra.push(line, ...continued);
      continue;
    }
    if (fields.has(key)) throw invalid(`SKILL.md's front matter gives ${key} twice`);
    const head = rest.trim();
    const value = /^[>|][+-]?$/.test(head)
      ? continued.map((part) => part.trim()).join(" ")
      : [scalar(rest, key), ...continued.map((part) => part.trim())].join(" ");
    fields.set(key, value.replace(/\s+/g, " ").trim());
  }

  const name = fields.get("name");
  if (name === undefined || name === "")
    throw invalid(`SKILL.md's front matter has no name: ${fix}`);
  if (!isSkillName(name))
    throw invalid(
      `SKILL.md's name ${JSON.stringify(name.slice(0, 80))} is not a skill name: use 1–64 lowercase letters, digits and dashes (e.g. pdf-tools)`,
    );
  const description = fields.get("description");
  if (description === undefined || description === "")
    throw invalid(`SKILL.md's front matter has no description: ${fix}`);
  const body = lines
    .slice(end + 1)
    .join("\n")
    .replace(/^(\s*\n)+/, "")
    .trimEnd();
  return { name, description, body, extra };
}

/** A description value YAML reads back as written: plain when that is safe, else double-quoted. */
function yamlScalar(value: string): string {
  const plain =
    /^[^\s\-?:,[\]{}#&*!|>'"%@`]/.test(value) &&
    !/: |\s#|:$|\s$/.test(value) &&
    !/^(true|false|null|yes|no|on|off|~|[-+]?[0-9.]+)$/i.test(value);
  return plain ? value : JSON.stringify(value);
}

/** SKILL.md's text for a document; parseSkillDocument reads back the same name, description and body. */
export function renderSkillDocument(document: SkillDocument): string {
  return [
    "---",
    `name: ${document.name}`,
    `description: ${yamlScalar(document.description)}`,
    ...document.extra,
    "---",
    "",
    `${document.body}\n`,
  ].join("\n");
}

/** Checks a description and body given as fields (the API's JSON). Throws invalid_request. */
export function checkSkillText(input: { description?: string; body?: string }): void {
  if (input.description !== undefined) {
    if (/[\r\n]/.test(input.description))
      throw invalid(
        "description is one line (the prompt lists each skill on one line): remove the line breaks",
        "description",
      );
    if (input.description.trim() === "")
      throw invalid(
        "description must not be empty: say in one line what the skill is for",
        "description",
      );
  }
  checkDescriptionAndBody(input);
}

/** The limits every description and body meet, from fields or from an archive's SKILL.md. */
export function checkDescriptionAndBody(input: { description?: string; body?: string }): void {
  if (input.description !== undefined && input.description.length > skillLimits.maxDescriptionChars)
    throw invalid(
      `description is at most ${skillLimits.maxDescriptionChars} characters (this one has ${input.description.length}): shorten it and put the details in the body`,
      "description",
    );
  if (input.body !== undefined) {
    if (input.body.trim() === "")
      throw invalid(
        "the body must not be empty: write the skill's instructions (what to do, which files to run)",
        "body",
      );
    const bytes = Buffer.byteLength(input.body, "utf8");
    if (bytes > skillLimits.maxBodyBytes)
      throw invalid(
        `the body is at most ${skillLimits.maxBodyBytes} bytes (this one has ${bytes}): move long reference material into files of the skill`,
        "body",
      );
  }
}
