import type { Env } from "../env";
import type { AnyProcessor, ProcessorEngine } from "./types";

/** What a processor without an `engine` function reports: it runs on nothing but the Worker. */
const BUILT_IN: ProcessorEngine = { name: "built-in", available: true };

/**
 * Which engine `processor` would use with `env`'s bindings, and whether it can run there: the one answer
 * `GET /v1/processors` lists and a push queue's config is checked against (`ProcessorRegistry.whyUnavailable`).
 *
 * @example
 * processorEngine(ttsProcessor, env); // { name: "workers-ai", available: false, note: "no AI binding: …" }
 */
export function processorEngine(processor: AnyProcessor, env: Env): ProcessorEngine {
  // The Worker's env, typed as each processor's author declared it (ProcessorContext: a claim, unchecked).
  return processor.engine?.(env as never) ?? BUILT_IN;
}

/**
 * The processors a Worker runs, by type. Built once by createEdgeq (src/app/create-edgeq.ts) from the
 * processors it chose and passed to whatever needs them (the HTTP app, the coordinators, the SQS
 * endpoint); no module of the core imports a processor.
 *
 * @example
 * const registry = new ProcessorRegistry([httpProcessor, echoProcessor]);
 * registry.get("echo"); // echoProcessor
 */
export class ProcessorRegistry {
  private readonly byType = new Map<string, AnyProcessor>();

  constructor(processors: readonly AnyProcessor[]) {
    for (const processor of processors) {
      if (this.byType.has(processor.type)) throw new Error(`two processors registered for type "${processor.type}"`);
      this.byType.set(processor.type, processor);
    }
  }

  get(type: string): AnyProcessor | undefined {
    return this.byType.get(type);
  }

  list(): AnyProcessor[] {
    return [...this.byType.values()];
  }

  /**
   * Why the registered processor `type` cannot run with `env`'s bindings (its engine's note: the binding or
   * secret that is missing), or null when it can — or when no such processor is registered.
   */
  whyUnavailable(type: string, env: Env): string | null {
    const processor = this.byType.get(type);
    if (!processor) return null;
    const engine = processorEngine(processor, env);
    if (engine.available) return null;
    return engine.note ?? `its engine "${engine.name}" is not available`;
  }

  /** The registered types, in registration order. */
  types(): string[] {
    return [...this.byType.keys()];
  }
}
