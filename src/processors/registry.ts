import { calibrateProcessor } from "./calibrate";
import { customProcessors } from "./custom";
import { tagProcessor } from "./tag";
import { httpProcessor } from "./http";
import { ttsProcessor } from "./tts";
import type { Processor } from "./types";

/**
 * Processors by type. Built-ins are listed here; your own go in src/processors/custom.ts.
 *
 * @example
 * const processor = defaultRegistry.get("tag");
 */
export class ProcessorRegistry {
  private readonly byType = new Map<string, Processor>();

  constructor(processors: Processor[]) {
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
}

export const BUILTIN_PROCESSORS: Processor[] = [httpProcessor, ttsProcessor, tagProcessor, calibrateProcessor];

export const defaultRegistry = new ProcessorRegistry([...BUILTIN_PROCESSORS, ...customProcessors]);
