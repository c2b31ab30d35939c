import type { Processor } from "./types";

/**
 * The processors a Worker runs, by type. Built once at the Worker's entry (src/index.ts) from the
 * processors it chose and passed to whatever needs them (the HTTP app, the coordinators, the SQS
 * endpoint); no module of the core imports a processor.
 *
 * @example
 * const registry = new ProcessorRegistry([httpProcessor, echoProcessor]);
 * registry.get("echo"); // echoProcessor
 */
export class ProcessorRegistry {
  private readonly byType = new Map<string, Processor>();

  constructor(processors: readonly Processor[]) {
    for (const processor of processors) {
      if (this.byType.has(processor.type)) throw new Error(`two processors registered for type "${processor.type}"`);
      this.byType.set(processor.type, processor);
    }
  }

  get(type: string): Processor | undefined {
    return this.byType.get(type);
  }

  list(): Processor[] {
    return [...this.byType.values()];
  }

  /** The registered types, in registration order. */
  types(): string[] {
    return [...this.byType.keys()];
  }
}
