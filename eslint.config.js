// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** Folders and what they may import. protocol/ depends on nothing of ours; worker/ only on protocol/. */
const layerRules = [
  {
    files: ["src/protocol/**/*.ts"],
    patterns: ["../*", "!../protocol/*"],
    message: "protocol/ depends on nothing else of ours",
  },
  {
    files: ["src/worker/**/*.ts"],
    patterns: ["../*", "!../protocol/*", "!../protocol"],
    message: "worker/ may import only protocol/ (it runs inside the computer)",
  },
];

export default tseslint.config(
  {
    ignores: [
      "node_modules/**",
      "web/**",
      ".roost/**",
      "artifacts/**",
      "bin/**",
      "scripts/**",
      "eslint.config.js",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/only-throw-error": "off",
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/cli/*", "**/cli", "**/api/*", "**/api"],
              message: "nothing imports cli/ or api/ (they are the edges)",
            },
            {
              regex: "^\\.\\./[a-z-]+/(?!index\\.ts$)[^/]+",
              message: "import another folder through its index.ts",
            },
          ],
        },
      ],
    },
  },
  ...layerRules.map(({ files, patterns, message }) => ({
    files,
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ group: patterns, message }] }],
    },
  })),
  {
    files: ["src/cli/**/*.ts", "src/platform/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^\\.\\./[a-z-]+/(?!index\\.ts$)[^/]+",
              message: "import another folder through its index.ts",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["**/*.test.ts", "test/**/*.ts", "bench/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
      "no-restricted-imports": "off",
    },
  },
);
