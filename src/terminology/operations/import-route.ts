import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@medplum/fhirtypes';
import type { AppRoute } from '../../core/app-route.js';
import type { FeatureEnv } from '../../core/feature.js';
import { BulkLoadError, storedNote } from '../../core/repository.js';
import { badRequest, FhirError, forbidden, notFound } from '../../fhir/outcome.js';
import { validateResource } from '../../fhir/validation/validate-resource.js';
import { SharedClinicalImport, importStream } from '../store/import-file.js';
import { JsonStreamError } from '../store/json-stream.js';
import { importRf2 } from '../store/rf2-import.js';
import { receiveRf2 } from '../store/rf2-transfer.js';
import { ReleaseFileError } from '../store/release-file-error.js';

/** Progress is the client's business (it counts what it sends); the server writes none. */
const NO_PROGRESS = { write: () => true, isTTY: false } as unknown as NodeJS.WritableStream;

/**
 * `POST /admin/terminology/import[?project=<id>]` (docs/terminology.md#import-into-a-running-server):
 * the body — a CodeSystem or ValueSet, a Bundle, or NDJSON, of any size — is imported while it
 * arrives, exactly as `lattice import <file>` would (import-file.ts: streamed, large code
 * systems staged and switched in atomically), and the answer is the import summary.
 * `lattice import --url` sends its file here. Clinical resources in it are bulk loaded into the
 * same project (docs/rest.md#bulk-load): batches of one transaction each, `others` in the answer.
 *
 * With `format=rf2` the body is an RF2 release as `lattice import --format rf2 --url` frames it
 * (rf2-transfer.ts): its files are written to a temporary folder, loaded as the direct mode
 * loads one (`unpublished=true` as `--unpublished`), and removed.
 *
 * Who: a project admin imports into its own project; a super admin into shared content, or into
 * the project named by `project`. Anyone else → 403. Resources are validated like REST writes,
 * and an id held by another project is not found (as for PUT, docs/auth.md).
 */
export function importRoute(env: FeatureEnv): AppRoute {
  return {
    method: 'POST',
    url: '/admin/terminology/import',
    auth: true,
    body: 'stream',
    async handler(req) {
      const { scope } = req.ctx.repo;
      const shared = req.query.shared === 'true';
      if (shared && req.query.project) throw badRequest('project and shared exclude each other: name a project, or share', 'shared');
      const projectId = scope.ownerOfImport(req.query.project || undefined);
      // Only a super admin's import can be shared content (a project admin's goes to its project).
      if (shared && projectId !== undefined) throw forbidden();
      if (projectId !== undefined && !(await env.system.tryRead('Project', projectId))) throw notFound();
      const body = req.body as AsyncIterable<Buffer> | undefined;
      if (!body) throw badRequest('No content to import');
      if (req.query.format === 'rf2') {
        const dir = await mkdtemp(join(tmpdir(), 'lattice-rf2-'));
        try {
          await receiveRf2(body, dir);
          const summary = await importRf2(dir, env, { projectId, unpublished: req.query.unpublished === 'true', out: NO_PROGRESS });
          return { status: 200, body: summary };
        } catch (err) {
          if (err instanceof ReleaseFileError) throw badRequest(releaseMessage(err));
          throw err;
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      }
      if (req.query.format !== undefined && req.query.format !== 'fhir') throw badRequest(`Unknown import format '${req.query.format}'`);
      const check = async (resource: Resource) => {
        const problems = validateResource(resource);
        if (problems.length > 0) throw new FhirError(400, { resourceType: 'OperationOutcome', issue: problems });
        const id = resource.id;
        if (!id) return;
        await scope.checkImportOver(async () => {
          const existing = await env.system.tryRead(resource.resourceType, id);
          return existing && { projectId: existing.meta?.project, resourceType: existing.resourceType, id };
        });
      };
      // Other resources (clinical data) go to the bulk load, as in `lattice import` (docs/rest.md#bulk-load).
      const loader = env.system.bulkLoad({ projectId, validate: validateResource, batchSize: env.config.importBatch });
      try {
        const summary = await importStream(body, env, {
          projectId,
          shared,
          out: NO_PROGRESS,
          check,
          other: (resource, where, fullUrl) => loader.add(resource, where, fullUrl),
          bundleEnd: () => loader.endBundle(),
        });
        return { status: 200, body: { ...summary, others: await loader.finish() } };
      } catch (err) {
        await loader.settle();
        if (err instanceof JsonStreamError) throw badRequest(`Content could not be parsed: ${err.message}`);
        if (err instanceof SharedClinicalImport) throw badRequest(err.message);
        if (err instanceof BulkLoadError) throw badRequest(`${err.message} (${storedNote(loader, 'earlier batches')})`);
        throw err;
      }
    },
  };
}

/** The uploaded files are numbered folders of the server's: the message names the file alone. */
function releaseMessage(err: ReleaseFileError): string {
  return err.message.replace(/^\d+\//, '');
}
