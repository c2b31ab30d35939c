import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      ".wrangler/",
      "migrations/",
      "dist/",
      "docs/",
      // Written by scripts/build-dashboard.mjs: minified browser code in a string.
      "src/dashboard/client-bundle.generated.ts",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["src/**/*.ts", "test/**/*.ts"],
    ignores: ["src/dashboard/client/**"],
    languageOptions: { parserOptions: { project: "./tsconfig.json", tsconfigRootDir: import.meta.dirname } },
    rules: {
      // An unawaited promise in a Worker is lost work: every promise is awaited or handed to waitUntil.
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-non-null-assertion": "off",
      // The Worker serves the dashboard's bundled text (client-bundle.generated.ts), never its browser code.
      "no-restricted-imports": [
        "error",
        {
          patterns: [{ regex: "(^|/)client/", message: "browser code (src/dashboard/client/): import the built text" }],
        },
      ],
    },
  },
  {
    // The dashboard's browser code, type-checked against the DOM (tsconfig.dashboard.json) and bundled by
    // scripts/build-dashboard.mjs.
    files: ["src/dashboard/client/**/*.ts"],
    languageOptions: {
      parserOptions: { project: "./tsconfig.dashboard.json", tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // An unawaited promise in a page is an error nobody sees: each is awaited or handed to PageLife.run.
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      // What it takes from the rest of src/ reaches the browser: types only, besides two modules of plain
      // constants that import nothing.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^\\.\\./(?!\\.\\./engine/states$|\\.\\./events/protocol$)",
              allowTypeImports: true,
              message: "Worker code must not reach the browser bundle: import types only",
            },
          ],
        },
      ],
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
