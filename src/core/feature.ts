import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from './database.js';
import type { SystemRepository } from './repository.js';

/**
 * What a feature's install function gets from `src/app.ts`: the configuration, a logger, the
 * database (for the feature's own tables), the system repository (to act on behalf of the
 * server) and a shutdown registry. Request handlers never get this: they get a
 * `RequestContext` whose repository is scoped to the caller, plus whatever their feature
 * hands them when it builds them.
 */
export interface FeatureEnv {
  config: Config;
  log: Logger;
  db: Database;
  system: SystemRepository;
  /** Background jobs and resources to stop on shutdown, in reverse order of registration. */
  onClose(fn: () => Promise<void> | void): void;
  /** Work to start once the server listens (not before: start-up does not wait for it, nor share its CPU with it). */
  onListening(fn: () => void): void;
}
