import { defineConfig } from "drizzle-kit";

// drizzle-kit writes plain `NNNN_name.sql` files into migrations/, the flat layout
// `wrangler d1 migrations apply` and the tests' `readD1Migrations` read.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
