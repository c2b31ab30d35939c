/** The README's first-hour commands (scripts/try-create-edgeq.mjs). */
export function readmeFirstHour(readme: string): {
  standIn: string;
  setup: string[];
  dev: string;
  calls: string;
  caller: string;
  elsewhere: string[];
};
/** Creates, installs, tests and serves a project as the README says; whether every step passed. */
export function tryCreateEdgeq(where: { root: string; scratch: string; edgeq: string }): Promise<boolean>;
