import { join } from 'node:path';
import { benchPostgres, type BenchPostgres } from './postgres.js';
import { BENCH_ADMIN_ENV, runLatticeImport, startLatticeProcess, type BenchProcess } from './server-process.js';
import { benchToken } from './token.js';

/** A server on one driver whose database holds a generated population, loaded by `lattice import`. */
export interface Population {
  server: BenchProcess;
  token: string;
  /** The import's wall time and peak RSS. */
  imported: { seconds: number; peakRss: number };
  /** Stops the server and, on PostgreSQL, the benchmark's server. */
  stop(): Promise<void>;
}

/**
 * Starts a server once (it creates the schema and the super admin), imports the NDJSON `file`
 * with the CLI into the super admin's project (a project's data, as a Bulk Data export reads
 * it), and starts the server again on that data (unless `serve` is false).
 */
export async function loadPopulation(driver: 'pglite' | 'pg', file: string, dir: string, generated: number, options: { serve?: boolean } = {}): Promise<Population> {
  const postgres: BenchPostgres | undefined = driver === 'pg' ? await benchPostgres() : undefined;
  // An empty DATABASE_URL is none: a DATABASE_URL the bench was given must not turn the PGlite half into PostgreSQL.
  const storage: Record<string, string> = postgres ? { DATABASE_URL: postgres.url } : { LATTICE_DATA_DIR: join(dir, `data-${driver}`), DATABASE_URL: '' };
  try {
    let server = await startLatticeProcess({ ...BENCH_ADMIN_ENV, ...storage });
    const token = await benchToken(server.url);
    const me = (await (await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { project?: { id?: string } };
    await server.stop();
    if (!me.project?.id) throw new Error('/auth/me named no project');
    console.error(`${driver}: importing ${generated} resources …`);
    const imported = await runLatticeImport([file, '--project', me.project.id], { ...process.env, ...BENCH_ADMIN_ENV, ...storage });
    // `serve: false` (the import-only bench): the server stays stopped.
    if (options.serve !== false) server = await startLatticeProcess({ ...BENCH_ADMIN_ENV, ...storage });
    return {
      server,
      token,
      imported,
      async stop() {
        if (options.serve !== false) await server.stop();
        await postgres?.stop();
      },
    };
  } catch (err) {
    await postgres?.stop();
    throw err;
  }
}
