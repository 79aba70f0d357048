// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import roost from "./scripts/eslint/boundaries.js";

export default tseslint.config(
  {
    ignores: [
      "node_modules/**",
      "web/dist/**",
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
    plugins: { roost },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/only-throw-error": "off",
      // Folder boundaries, layers and test-support isolation (scripts/eslint/boundaries.js).
      "roost/boundaries": "error",
    },
  },
  {
    // React components destructure the session's functions (`const { api } = useSession()`).
    files: ["web/**/*.{ts,tsx}"],
    rules: { "@typescript-eslint/unbound-method": "off" },
  },
  {
    files: ["**/*.test.ts", "test/**/*.ts", "bench/**/*.ts", "**/testing/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
);
