// @ts-check
/**
 * `roost/boundaries`: the dependency rules of CONVENTIONS.md, resolved on real paths so that
 * nested folders (`../../loop/x.ts` from `src/computers/local/`) are caught like shallow ones.
 *
 *   B1 production code enters another top-level folder of src/ only through its `index.ts`
 *      (tests may reach into the parts they test).
 *   B2 production code never imports test support: a `testing/` folder, `*.test.ts`, or a contract.
 *   B3 layers: protocol/ imports nothing of ours; worker/ only protocol/; api/ is imported only by
 *      platform/; platform/ only by cli/; cli/ by nothing.
 *   B4 web/ imports from src/ only the wire types in src/protocol/.
 */
import path from "node:path";

const root = path.resolve(import.meta.dirname, "../..");
const src = path.join(root, "src");

/** Folders each folder may import (besides errors/, which everyone may use); absent = any. */
const allowedBy = {
  protocol: [],
  worker: ["protocol"],
};
/** Folders only the listed importers may import. */
const importableOnlyBy = {
  api: ["platform"],
  platform: ["cli"],
  cli: [],
};

function isTestFile(file) {
  const relative = path.relative(root, file);
  return (
    /\.test\.tsx?$/.test(file) ||
    relative.startsWith(`test${path.sep}`) ||
    relative.startsWith(`bench${path.sep}`) ||
    file.split(path.sep).includes("testing") ||
    /\.contract\.ts$/.test(file)
  );
}

function isTestSupport(target) {
  return target.split(path.sep).includes("testing") || /\.(test|contract)\.ts$/.test(target);
}

/** `src/<folder>/…` → folder; undefined outside src/. */
function topFolder(file) {
  const relative = path.relative(src, file);
  if (relative.startsWith("..") || path.isAbsolute(relative)) return undefined;
  const [first, second] = relative.split(path.sep);
  return second === undefined ? undefined : first;
}

/** @type {import("eslint").Rule.RuleModule} */
const boundaries = {
  meta: { type: "problem", schema: [] },
  create(context) {
    const file = context.filename;
    const fromFolder = topFolder(file);
    const inWeb = path.relative(root, file).startsWith(`web${path.sep}`);
    const testFile = isTestFile(file);
    function check(node, specifier) {
      if (typeof specifier !== "string" || !specifier.startsWith(".")) return;
      const target = path.resolve(path.dirname(file), specifier);
      const toFolder = topFolder(target);
      const report = (message) => context.report({ node, message });
      if (!testFile && isTestSupport(target)) {
        report(`B2 production code must not import test support (${specifier})`);
        return;
      }
      if (inWeb) {
        if (toFolder !== undefined && toFolder !== "protocol")
          report(`B4 web/ may import only src/protocol/ from the server (${specifier})`);
        return;
      }
      if (toFolder === undefined || toFolder === fromFolder) return;
      // Tests may reach into a folder (they test its parts); production code uses its index.ts.
      if (testFile || fromFolder === undefined) return;
      if (path.relative(path.join(src, toFolder), target) !== "index.ts") {
        report(`B1 import ${toFolder}/ through its index.ts, not ${specifier}`);
        return;
      }
      const allowed = allowedBy[fromFolder];
      if (allowed !== undefined && !allowed.includes(toFolder)) {
        report(`B3 ${fromFolder}/ may not import ${toFolder}/`);
        return;
      }
      const only = importableOnlyBy[toFolder];
      if (only !== undefined && !only.includes(fromFolder))
        report(`B3 ${toFolder}/ may be imported only by ${only.join(", ") || "nothing"}`);
    }
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) =>
        node.source.type === "Literal" && check(node.source, node.source.value),
    };
  },
};

export default { rules: { boundaries } };
