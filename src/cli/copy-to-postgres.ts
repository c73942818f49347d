import { CopyRefused, copyToPostgres } from '../storage/copy-database.js';

/** `lattice copy-to-postgres --to <url>`: its arguments, run, and report; exit 2 on a malformed call. */
export async function copyCommand(args: string[], usage: string, dataDir: string, databaseUrl: string | undefined): Promise<void> {
  let to: string | undefined;
  let unusable = false;
  for (let i = 0; i < args.length; i++) {
    const [name, value] = args[i].includes('=') ? [args[i].slice(0, args[i].indexOf('=')), args[i].slice(args[i].indexOf('=') + 1)] : [args[i], args[i + 1]];
    if (name === '--to' && value) {
      to = value;
      if (!args[i].includes('=')) i++;
    } else unusable = true;
  }
  if (!to || unusable) {
    console.error(usage);
    process.exitCode = 2;
    return;
  }
  if (databaseUrl) {
    console.error('copy-to-postgres reads the PGlite data folder LATTICE_DATA_DIR: unset DATABASE_URL (the target is --to)');
    process.exitCode = 2;
    return;
  }
  try {
    const started = Date.now();
    const done = await copyToPostgres(dataDir, to, (line) => console.error(line));
    console.log(
      `copied ${done.rows} rows of ${done.tables} tables from ${dataDir} in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        'start the server with DATABASE_URL set to the target (LATTICE_DATA_DIR is then not used)',
    );
  } catch (err) {
    if (!(err instanceof CopyRefused)) throw err;
    console.error(err.message);
    process.exitCode = 1;
  }
}
