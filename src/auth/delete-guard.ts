import { forbidden } from '../fhir/outcome.js';
import type { Services } from '../services.js';
import type { Repository } from '../storage/repository.js';
import { ACCOUNT_TYPES } from './resource-hooks.js';

/**
 * WORKAROUND — remove when ResourceHooks gets a `beforeDelete(previous, auth, tx)` hook.
 *
 * Writes of account resources are refused to non-super-admins by a beforeWrite hook, but a
 * delete runs no hook that knows the caller: a plain member could DELETE its project's
 * ProjectMembership of the admin, a User, a ClientApplication or the Project itself. Until
 * the repository offers that hook, every repository handed out by `services.repository` gets
 * a checked `delete` (and `withAuth` keeps the check).
 *
 * Visible account resource → 403 `Forbidden`; invisible (other project, never existed) or
 * already deleted → the repository's own answer (404 / idempotent 200), so nothing leaks.
 */
export function guardAccountDeletes(services: Services): void {
  const open = services.repository;
  services.repository = (auth) => guard(open(auth));
}

function guard(repo: Repository): Repository {
  const remove = repo.delete.bind(repo);
  const withAuth = repo.withAuth.bind(repo);
  repo.delete = async (resourceType: string, id: string): Promise<void> => {
    if (!repo.auth.superAdmin && (ACCOUNT_TYPES as readonly string[]).includes(resourceType)) {
      if (await repo.tryRead(resourceType, id)) throw forbidden();
    }
    return remove(resourceType, id);
  };
  repo.withAuth = (auth) => guard(withAuth(auth));
  return repo;
}
