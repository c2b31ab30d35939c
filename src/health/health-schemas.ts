import * as z from "zod";
import { component } from "../contracts/component";
import { CHECKS } from "./thresholds";
import { ThresholdsPatch } from "./thresholds";
import { MAX_ALERT_URL_CHARS } from "../contracts/limits";
import { HEALTH_STATUSES } from "./health-status";

const Status = z.enum(HEALTH_STATUSES);
const Iso = z.string().nullable();

/** An alert webhook URL: absolute http(s), at most MAX_ALERT_URL_CHARS. */
const AlertUrl = z
  .string()
  .max(MAX_ALERT_URL_CHARS)
  .refine(
    (s) => {
      try {
        const url = new URL(s);
        return url.protocol === "https:" || url.protocol === "http:";
      } catch {
        return false;
      }
    },
    { message: "must be an absolute http:// or https:// URL" },
  );

export const HealthConfigBody = z
  .object({
    thresholds: ThresholdsPatch.optional(),
    alert_url: AlertUrl.nullable()
      .optional()
      .meta({ description: "where status changes are POSTed, signed; null clears it" }),
  })
  .strict()
  .meta(component("HealthConfigBody"));

export const HealthConfigResponse = z
  .object({ thresholds: ThresholdsPatch, alert_url: z.string().nullable() })
  .meta(component("HealthConfig"));

const Levels = z.object({ warn: z.number().nullable(), critical: z.number().nullable() });

export const QueueHealthView = z
  .object({
    queue: z.string(),
    status: Status,
    since: Iso,
    reasons: z.array(
      z.object({
        check: z.enum(CHECKS),
        status: z.enum(["warn", "critical"]),
        value: z.number(),
        threshold: z.number(),
        message: z.string(),
      }),
    ),
    figures: z.object({
      due_depth: z.number(),
      oldest_due_age_s: z.number(),
      lease_expired: z.number(),
      overrun: z.number(),
      failure_rate_5m: z.number().nullable(),
      failure_rate_15m: z.number().nullable(),
      outcomes_5m: z.number(),
      outcomes_15m: z.number(),
      dead_1h: z.number(),
      schedule_errors: z.number(),
      starved_key_age_s: z.number(),
      starved_key: z.string().nullable(),
    }),
    thresholds: z.object({
      ...(Object.fromEntries(CHECKS.map((c) => [c, Levels])) as Record<(typeof CHECKS)[number], typeof Levels>),
      failure_rate_min_outcomes: z.number(),
    }),
    alert: z.object({
      url: z.string().nullable(),
      last_alert_at: Iso,
      last_alert_status: Status.nullable(),
      pending_status: Status.nullable(),
      attempts: z.number(),
      next_attempt_at: Iso,
      last_error: z.string().nullable(),
    }),
  })
  .meta(component("QueueHealth"));

export const HealthListResponse = z
  .object({ status: Status, queues: z.array(QueueHealthView) })
  .meta(component("QueueHealthList"));
