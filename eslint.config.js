import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Who may touch the task tables (docs/architecture.md): only src/engine, which turns every state change
// into one guarded statement or one batch. Elsewhere in the Worker, neither the Drizzle table objects nor
// SQL text naming the tables: a schema change then means reading src/engine alone. The SQL is matched in
// string literals and in each literal part of a template (a `sql` tag's text between its parameters).
const TASK_TABLE_SQL = String(/\b(FROM|INTO|UPDATE(\s+OR\s+\w+)?|JOIN|TABLE)\s+"?(tasks|task_transit|queues)\b/i);
const TASK_TABLES_MESSAGE =
  "Only src/engine touches the task tables (tasks, task_transit, queues): use or add an operation of the task store port, src/engine/store.ts (docs/architecture.md).";

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
    // Every TypeScript file, each type-checked against its own tsconfig (the blocks below). An unawaited
    // promise is lost work: in the Worker, work nobody waits for (await it or hand it to waitUntil); in a
    // worker, a lost ack or a crash nobody sees; in a page, an error nobody sees (await it or hand it to
    // PageLife.run); in the CLI and the bench, a step that ends after the process.
    files: ["src/**/*.ts", "test/**/*.ts", "cli/**/*.ts", "bench/**/*.ts"],
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    files: ["src/**/*.ts", "test/**/*.ts"],
    ignores: ["src/dashboard/client/**", "src/node/**"],
    languageOptions: { parserOptions: { project: "./tsconfig.json", tsconfigRootDir: import.meta.dirname } },
    rules: {
      // The Worker serves the dashboard's bundled text (client-bundle.generated.ts), never its browser code.
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "(^\\./|dashboard/)client/",
              message: "browser code (src/dashboard/client/): import the built text",
            },
          ],
        },
      ],
    },
  },
  {
    // The Node worker runtime (edgeq/node), type-checked with Node's types (tsconfig.build-node.json).
    files: ["src/node/**/*.ts"],
    languageOptions: {
      parserOptions: { project: "./tsconfig.build-node.json", tsconfigRootDir: import.meta.dirname },
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
      // What it takes from the rest of src/ reaches the browser: types only, besides two modules of plain
      // constants that import nothing.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^\\.\\./(?!\\.\\./contracts/states$|\\.\\./contracts/events-protocol$)",
              allowTypeImports: true,
              message: "Worker code must not reach the browser bundle: import types only",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/**/*.ts"],
    ignores: ["src/engine/**", "src/db/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["**/db/schema"], importNames: ["tasks", "taskTransit", "queues"], message: TASK_TABLES_MESSAGE },
          ],
        },
      ],
      "no-restricted-syntax": [
        "error",
        { selector: `Literal[value=${TASK_TABLE_SQL}]`, message: TASK_TABLES_MESSAGE },
        { selector: `TemplateElement[value.raw=${TASK_TABLE_SQL}]`, message: TASK_TABLES_MESSAGE },
        // Drizzle's relational queries (db.query.tasks…) reach the tables without importing them.
        {
          selector: "MemberExpression[object.property.name='query'][property.name=/^(tasks|taskTransit|queues)$/]",
          message: TASK_TABLES_MESSAGE,
        },
      ],
    },
  },
  {
    // The `edgeq` CLI and its tests: Node code, type-checked against tsconfig.cli.json.
    files: ["cli/**/*.ts", "test/cli/**/*.ts"],
    languageOptions: { parserOptions: { project: "./tsconfig.cli.json", tsconfigRootDir: import.meta.dirname } },
  },
  {
    // The benchmark (npm run bench): Node code plus the bench worker that runs inside workerd.
    files: ["bench/**/*.ts"],
    languageOptions: { parserOptions: { project: "./tsconfig.bench.json", tsconfigRootDir: import.meta.dirname } },
  },
  {
    files: [
      "scripts/**/*.mjs",
      "bin/**/*.mjs",
      "examples/**/*.mjs",
      "create-edgeq/*.mjs",
      "create-edgeq/template/*.mjs",
      "*.config.ts",
      "*.config.js",
    ],
    languageOptions: {
      globals: { process: "readonly", console: "readonly", URL: "readonly", setTimeout: "readonly", fetch: "readonly" },
    },
  },
  {
    // dependency-cruiser's configuration: a CommonJS module.
    files: [".dependency-cruiser.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { module: "writable" } },
  },
);
