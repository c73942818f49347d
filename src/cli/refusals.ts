/**
 * What to do instead, appended to a refusal of the command line (src/main.ts prints the error's
 * message, then this hint).
 */

/** An embedded data folder held by a running server: how to import or set a password anyway. */
export function dataFolderInUseHint(command: string | undefined): string {
  if (command === 'import') {
    return (
      'To load a file while that server runs, send it to the server instead: ' +
      'lattice import <file> --url http://localhost:8080 --client-id <id> --client-secret <secret> (or --token <t>); ' +
      'see `lattice import --help`.'
    );
  }
  if (command === 'admin') return 'Stop the server first (set-password opens the database itself), then run the command again.';
  return '';
}

/**
 * A 403 of a `--url` import: the role the caller needs (docs/terminology.md#import-into-a-running-server):
 * a project admin for its own project (or `--project`), a super admin for shared content.
 */
export function importForbiddenHint(projectId: string | undefined): string {
  const where = projectId ? `project ${projectId}` : 'shared content (no --project)';
  return (
    `Importing into ${where} needs ${projectId ? 'an admin of that project (a super admin may too)' : 'a super admin'}: ` +
    `the client's ProjectMembership must have "admin": true ` +
    `(read it, set admin, POST it back to /admin/projects/<project>/members/<membership>: docs/auth.md#changing-a-member), ` +
    `or the client must be created in the super-admin project for shared content.`
  );
}
