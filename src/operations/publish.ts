import type { OperationDefinition } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { ResourceRepository } from '../core/repository.js';

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
 * Writes run one after another in the background in registration order; {@link settled}
 * resolves when all writes queued so far are done (app start-up awaits it; so does shutdown,
 * so the database is not closed under a write).
 */
export class DefinitionPublisher {
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown;

  constructor(
    private readonly system: ResourceRepository,
    private readonly log: Pick<Logger, 'error'>,
  ) {}

  /** Queues the write of one definition. */
  publish(definition: OperationDefinition): void {
    this.tail = this.tail.then(() => this.write(definition));
  }

  /** Resolves when every queued write is done; rejects with the first failure, if any. */
  async settled(): Promise<void> {
    await this.tail;
    if (this.failure !== undefined) throw this.failure instanceof Error ? this.failure : new Error('Could not store an OperationDefinition', { cause: this.failure });
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
