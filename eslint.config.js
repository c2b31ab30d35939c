import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", ".wrangler/", "migrations/", "dist/", "docs/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["src/**/*.ts", "test/**/*.ts"],
    languageOptions: { parserOptions: { project: "./tsconfig.json", tsconfigRootDir: import.meta.dirname } },
    rules: {
      // An unawaited promise in a Worker is lost work: every promise is awaited or handed to waitUntil.
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  {
    // The `edgeq` CLI and its tests: Node code, type-checked against tsconfig.cli.json.
    files: ["cli/**/*.ts", "test/cli/**/*.ts"],
    languageOptions: { parserOptions: { project: "./tsconfig.cli.json", tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  {
    // The benchmark (npm run bench): Node code plus the bench worker that runs inside workerd.
    files: ["bench/**/*.ts"],
    languageOptions: { parserOptions: { project: "./tsconfig.bench.json", tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  {
    files: ["scripts/**/*.mjs", "bin/**/*.mjs", "*.config.ts", "*.config.js"],
    languageOptions: {
      globals: { process: "readonly", console: "readonly", URL: "readonly", setTimeout: "readonly", fetch: "readonly" },
    },
  },
);
