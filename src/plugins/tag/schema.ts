import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The tag plugin's own table, on every shard (a task's calibration lives on its queue's shard). Its
 * migration (0001_processing.sql) stays one of migrations/, in order: drizzle.config.ts reads this schema
 * beside src/db/schema.ts, so `npm run db:generate` keeps writing one sequence for the core and plugins.
 *
 * Per-tag score thresholds for a group, computed by the `calibrate` processor and applied by `tag`.
 */
export const tagCalibrations = sqliteTable("tag_calibrations", {
  groupKey: text("group_key").primaryKey(),
  /** JSON object: tag -> minimum score kept. */
  thresholds: text("thresholds").notNull(),
  /** How many completed `tag` results they were computed from. */
  samples: integer("samples").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
