import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type Factory = (...args: unknown[]) => unknown;
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

// Resolved from Fastify's own folder: these are Fastify's dependencies, not Lattice's.
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'));

/** `require(name)()`: the compiler factory a Fastify "selector" module builds, made on first use. */
function lazyFactory(name: string): Factory {
  let factory: Factory | undefined;
  return (...args) => {
    factory ??= (fastifyRequire(name) as () => Factory)();
    return factory(...args);
  };
}

/**
 * Fastify's schema compilers (Ajv for validation, fast-json-stringify for serialization),
 * loaded when a route first declares a schema instead of when the server is created. Lattice's
 * routes declare none (bodies are parsed and checked by its own code), and loading Ajv was a
 * tenth of the time from start to the first answer (docs/errors.md#start-up).
 */
export const lazySchemaCompilers: CompilersFactory = {
  buildValidator: lazyFactory('@fastify/ajv-compiler') as CompilersFactory['buildValidator'],
  buildSerializer: lazyFactory('@fastify/fast-json-stringify-compiler') as CompilersFactory['buildSerializer'],
};
