import { defineConfig } from "drizzle-kit";

// drizzle-kit writes plain `NNNN_name.sql` files into migrations/, the flat layout
// `wrangler d1 migrations apply` and the tests' `readD1Migrations` read.
export default defineConfig({
  dialect: "sqlite",
  // The core's tables, then each built-in plugin's own (src/plugins/*/schema.ts): one migration sequence.
  schema: ["./src/db/schema.ts", "./src/plugins/tag/schema.ts"],
  out: "./migrations",
});
