import type { OperationDefinition } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { ResourceRepository } from '../core/repository.js';
import { sameResourceContent } from '../storage/stable-stringify.js';

/**
 * Makes registered OperationDefinitions readable through the normal REST API
 * (`GET [base]/OperationDefinition/<id>`, search, history) by storing them as shared content
 * (no project) with the system's repository.
 *
 * Why stored and not served from memory: the REST router, search and history already work on
 * stored resources, and every API node then serves the same definitions. Writing is idempotent
 * (an update with identical content creates no new version), so N nodes starting together, or
 * one node restarting, leave one version per real change of a definition.
 *
 * Definitions registered during the start are queued and stored by {@link settled} (app
 * start-up awaits it once every feature is installed; so does shutdown, so the database is not
 * closed under a write): the stored versions of the whole queue are read in one search, and only
 * a definition that differs from its stored version (or has none) is written — on a restart, one
 * statement instead of one read per definition (docs/errors.md#start-up). One registered after
 * that is stored right away, in the background, in registration order.
 */
export class DefinitionPublisher {
  private tail: Promise<void> = Promise.resolve();
  private readonly queued: OperationDefinition[] = [];
  /** `settled()` was called once (the start is over): a definition registered later is stored right away. */
  private started = false;
  private failure: unknown;

  constructor(
    private readonly system: ResourceRepository,
    private readonly log: Pick<Logger, 'error'>,
  ) {}

  /** Queues the write of one definition. */
  publish(definition: OperationDefinition): void {
    this.queued.push(definition);
    if (this.started) this.tail = this.tail.then(() => this.flush());
  }

  /** Stores every definition queued so far; rejects with the first failure, if any. */
  async settled(): Promise<void> {
    this.started = true;
    this.tail = this.tail.then(() => this.flush());
    await this.tail;
    if (this.failure !== undefined) throw this.failure instanceof Error ? this.failure : new Error('Could not store an OperationDefinition', { cause: this.failure });
  }

  private async flush(): Promise<void> {
    const batch = this.queued.splice(0);
    if (batch.length === 0) return;
    let stored = new Map<string, OperationDefinition>();
    try {
      const ids = batch.map((d) => d.id as string);
      const found = await this.system.search({ resourceType: 'OperationDefinition', params: [['_id', ids.join(',')], ['_count', String(ids.length)], ['_total', 'none']] });
      stored = new Map((found.resources as OperationDefinition[]).map((d) => [d.id as string, d]));
    } catch (err) {
      // Not read: each definition is written (an update that finds it identical writes nothing).
      this.log.error({ err }, 'Could not read the stored OperationDefinitions');
    }
    for (const definition of batch) {
      const current = stored.get(definition.id as string);
      if (current && sameResourceContent(current, definition)) continue;
      await this.write(definition);
    }
  }

  private async write(definition: OperationDefinition): Promise<void> {
    try {
      await this.system.update(definition);
    } catch (err) {
      // Never an unhandled rejection: the operation still works, only its definition is not
      // readable; the error is logged now and reported by settled().
      this.failure ??= err;
      this.log.error({ err, id: definition.id }, 'Could not store OperationDefinition');
    }
  }
}
