import type { AppRoute } from '../core/app-route.js';
import type { AuthInfo } from '../core/auth.js';
import type { FeatureEnv } from '../core/feature.js';
import type { Operation, OperationRegistry } from '../core/operation.js';
import type { ResourceRepository } from '../core/repository.js';
import { forbidden } from '../fhir/outcome.js';
import { announceCommit, subscribeChanges } from '../storage/change-feed.js';
import { GROUP_EXPORT, PATIENT_EXPORT, SYSTEM_EXPORT } from './definitions.js';
import { insertJob } from './job-store.js';
import { accepted, readKickOff } from './kick-off.js';
import { ExportRunner } from './runner.js';
import { exportRoutes, STATUS_PATH } from './status-routes.js';

/** Channel a kick-off announces on, so an idle runner on any node starts at once. */
const EXPORT_CHANNEL = 'lattice_export';

/**
 * Wires Bulk Data export (docs/export.md): `$export` at system, Patient and Group level (the
 * operations framework parses and checks the input; the kick-off answers 202 itself), the
 * status and file routes, and this node's job runner — woken by kick-offs, polling otherwise,
 * stopped on shutdown (its job's lease then runs out and any node resumes it).
 */
export async function installExport(
  env: FeatureEnv,
  registry: OperationRegistry,
  repository: (auth: AuthInfo) => ResourceRepository,
): Promise<AppRoute[]> {
  const settings = env.config.bulkExport;
  const log = env.log.child({ component: 'export' });
  const runner = new ExportRunner(env.db, repository, settings, log);
  const kickOff: Operation['respond'] = async (req, input, target) => {
    if (!req.ctx.auth.projectId) throw forbidden('$export exports the data of a project: act in one');
    const request = await readKickOff(req, input, target);
    const { id } = await insertJob(env.db, req.ctx.auth, request, { maxJobs: settings.maxJobsPerCaller, retryAfterSeconds: Math.ceil(settings.pollMs / 1000) });
    await announceCommit(env.db, EXPORT_CHANNEL, id);
    runner.wake();
    return accepted(`${req.ctx.publicUrl}${STATUS_PATH}/${id}`);
  };
  for (const definition of [SYSTEM_EXPORT, PATIENT_EXPORT, GROUP_EXPORT]) {
    registry.register({
      definition,
      handler: () => Promise.reject(new Error('$export is answered by respond')),
      respond: kickOff,
      emptyPost: true,
    });
  }
  try {
    env.onClose(await subscribeChanges(env.db, EXPORT_CHANNEL, () => runner.wake()));
  } catch (err) {
    log.warn({ err }, 'export: LISTEN failed; relying on polling');
  }
  // Jobs are claimed once the server listens: until then the database serves the start.
  env.onListening(() => runner.start());
  env.onClose(() => runner.stop());
  return exportRoutes(env.db, () => env.config.publicUrl);
}
