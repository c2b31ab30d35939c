import { EdgeqError } from "../../src/contracts/errors";

/** What a call came to: `{ ok }` with its answer, or the refused call's `{ code, message }` (an EdgeqError;
 * anything else is rethrown). */
export async function settled<T>(call: Promise<T>): Promise<{ ok: T } | { code: string; message: string }> {
  try {
    return { ok: await call };
  } catch (error) {
    if (!(error instanceof EdgeqError)) throw error;
    return { code: error.code, message: error.message };
  }
}
