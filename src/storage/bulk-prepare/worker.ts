import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { SearchParameter } from '@medplum/fhirtypes';
import { addSearchParameters } from '../../fhir/definitions.js';
import { validateResource } from '../../fhir/validation/validate-resource.js';
import { prepareBatch, type PrepareInput } from './prepare.js';

/** The `workerData` key that marks a bulk load's preparing thread (pool.ts). */
export const PREPARE_WORKER = 'latticeBulkPrepare';

export interface PrepareWorkerData {
  [PREPARE_WORKER]: true;
  /** The SearchParameters the starting thread added beside R4's (stored ones: stored-parameters.ts): indexed alike. */
  searchParameters: SearchParameter[];
}

/** Whether this thread was started as a bulk load's preparing thread (the entry module asks before anything else). */
export function isPrepareWorker(): boolean {
  return !isMainThread && (workerData as Partial<PrepareWorkerData> | undefined)?.[PREPARE_WORKER] === true;
}

/**
 * The preparing thread's loop: one batch in (PrepareInput), its Prepared out, in order. A
 * failure of the preparation itself (a bug, not a refusal) is answered as `{ error }`.
 */
export function runPrepareWorker(): void {
  const data = workerData as PrepareWorkerData;
  addSearchParameters(data.searchParameters);
  const port = parentPort as NonNullable<typeof parentPort>;
  port.on('message', (input: PrepareInput) => {
    try {
      port.postMessage(prepareBatch(input, validateResource));
    } catch (err) {
      port.postMessage({ resources: [], error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    }
  });
}
