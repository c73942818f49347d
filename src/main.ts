#!/usr/bin/env node
import cluster from 'node:cluster';
import { createApp } from './app.js';
import { servePrimary } from './cluster/primary.js';
import { workerSlot } from './cluster/supervisor.js';
import { WorkersRefused } from './cluster/worker-count.js';
import { loadConfig } from './config.js';
import { DataFolderInUse } from './storage/data-folder-lock.js';
import { ListenUnsupported } from './storage/database-errors.js';
import { SharedClinicalImport, importFile, progressBar, type ImportSummary } from './terminology/store/import-file.js';
import { RemoteImportError, importSourceToServer, importToServer } from './terminology/store/import-remote.js';
import { importLoinc, loincJson } from './terminology/store/loinc-import.js';
import { LoincRelease } from './terminology/store/loinc-release.js';
import { importRf2 } from './terminology/store/rf2-import.js';
import { ReleaseFileError } from './terminology/store/release-file-error.js';
import { rf2Upload } from './terminology/store/rf2-transfer.js';
import { JsonStreamError } from './terminology/store/json-stream.js';
import { BulkLoadError, storedNote } from './core/repository.js';
import { validateResource } from './fhir/validation/validate-resource.js';
import { checkPasswordStrength } from './auth/accounts.js';
import { generatePassword, readNewPassword, setPasswordByEmail } from './auth/set-password-cli.js';
import { earlyAnswer } from './cli/help.js';
import { copyCommand } from './cli/copy-to-postgres.js';
import { dataFolderInUseHint, importForbiddenHint } from './cli/refusals.js';
import { importPackage } from './cli/import-package.js';
import { isPrepareWorker, runPrepareWorker } from './storage/bulk-prepare/worker.js';
import { PackageError } from './profiles/package/package-error.js';

/** A command-line process (import, admin) is no server node: it sends no e-mail (the server's outbox sender does). */
const CLI_APP = { emailSender: false };

const USAGE = `Usage:
  lattice serve                            start the server (default): LATTICE_WORKERS processes
                                           share the port (PostgreSQL: one per core by default)
  lattice import <file> [--project <id> | --shared]
                                           load a resource JSON, a Bundle or NDJSON (terminology and
                                           clinical) into the configured database (stop a server on
                                           the same PGlite data folder first): into the project
                                           --project names; without it terminology is shared content
                                           and clinical data is refused unless --shared (every
                                           project reads shared content)
  lattice import --format rf2 <folder or .zip> [--unpublished] [--project <id>] [--url … as below]
                                           load a SNOMED CT edition from its RF2 Snapshot files
                                           (--unpublished: version http://snomed.info/xsct/…)
  lattice import <file> --url <server> [--token <t> | --client-id <id> --client-secret <s>]
                 [--project <id> | --shared]
                                           send it to a running server instead (LATTICE_TOKEN,
                                           LATTICE_CLIENT_ID, LATTICE_CLIENT_SECRET work too); a
                                           project admin's import goes to its project
  lattice import --format loinc <folder or .zip> [--version <v>] [--url … as above]
                                           load a LOINC release from its CSV files (version:
                                           --version, else the name Loinc_<v>, else the newest
                                           VersionLastChanged of its terms)
  lattice import --format package <file.tgz or folder> [--package-dir <dir>] [--project <id>]
                                           load a FHIR implementation guide package (NPM layout:
                                           package/package.json): its StructureDefinitions,
                                           ValueSets, CodeSystems, SearchParameters and other
                                           definitions, as shared content unless --project; its
                                           dependencies first, from --package-dir or the package's
                                           folder (<name>#<version> folders, <name>-<version>.tgz);
                                           a dependency not found is a warning
  lattice admin set-password <email> [--password <pw>] [--project <id>]
                                           set a user's password: --password, else read from
                                           the terminal (asked twice) or standard input; empty
                                           generates one and prints it. --project picks a
                                           project-scoped user. Stop a server on the same PGlite
                                           data folder first.
  lattice copy-to-postgres --to <postgres url>
                                           copy everything in the PGlite data folder
                                           (LATTICE_DATA_DIR; server stopped) into a new, empty
                                           PostgreSQL database (docs/operating.md)`;

/** CLI entry: `lattice serve` (default) starts the server. The one place that reads argv. */
async function main(argv: string[]): Promise<void> {
  const early = earlyAnswer(argv, USAGE);
  if (early) return void console.log(early.text);
  const [command = 'serve', ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'import':
      return importCommand(rest);
    case 'admin':
      return adminCommand(rest);
    case 'copy-to-postgres':
      return copyCommand(rest, USAGE, loadConfig().dataDir, process.env.DATABASE_URL);
    default:
      console.error(`Unknown command '${command}'.\n${USAGE}`);
      process.exitCode = 2;
  }
}

/** Options of `lattice import`: `--name value` or `--name=value`. */
const IMPORT_OPTIONS = ['--project', '--url', '--token', '--client-id', '--client-secret', '--format', '--version', '--package-dir'];
/** Flags of `lattice import` (no value). */
const IMPORT_FLAGS = ['--unpublished', '--shared'];

/**
 * `lattice import <file>`: writes through the same index as the API, with a progress bar —
 * directly into the configured database, or with `--url` through a running server.
 */
async function importCommand(args: string[]): Promise<void> {
  const options: Record<string, string | undefined> = {};
  const positional: string[] = [];
  let unusable = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (IMPORT_OPTIONS.includes(name)) {
      options[name] = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (!options[name]) unusable = true;
    } else if (IMPORT_FLAGS.includes(arg)) {
      options[arg] = 'true';
    } else if (arg.startsWith('--')) {
      unusable = true;
    } else {
      positional.push(arg);
    }
  }
  const file = positional[0];
  const format = options['--format'] ?? 'fhir';
  const rf2 = format === 'rf2';
  const loinc = format === 'loinc';
  const fhirPackage = format === 'package';
  // --version names the version of a release (LOINC); a FHIR resource and an RF2 release state their own.
  if (
    !file || positional.length > 1 || unusable || !['fhir', 'rf2', 'loinc', 'package'].includes(format) ||
    (options['--version'] && !loinc) || (options['--unpublished'] && !rf2) ||
    (options['--shared'] && (options['--project'] || rf2 || loinc || fhirPackage)) ||
    (options['--package-dir'] && !fhirPackage) || (fhirPackage && options['--url'])
  ) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const projectId = options['--project'];
  const shared = options['--shared'] === 'true';
  const report = (summary: ImportSummary, others = summary.others ?? 0) =>
    console.log(
      `imported ${summary.resources + others} resources (${summary.codeSystems} CodeSystems, ${summary.valueSets} ValueSets, ` +
        `${summary.concepts} concepts${others > 0 ? `, ${others} others` : ''}; ${summary.skipped} skipped) in ${(summary.ms / 1000).toFixed(1)} s`,
    );
  const url = options['--url'];
  if (url) {
    try {
      const remote = {
        url,
        projectId,
        shared,
        token: options['--token'] ?? process.env.LATTICE_TOKEN,
        clientId: options['--client-id'] ?? process.env.LATTICE_CLIENT_ID,
        clientSecret: options['--client-secret'] ?? process.env.LATTICE_CLIENT_SECRET,
      };
      if (loinc) {
        const release = await loincJson(await LoincRelease.open(file), { version: options['--version'] });
        report(await importSourceToServer(release.chunks, remote));
        return;
      }
      if (rf2) {
        const params = { format: 'rf2', ...(options['--unpublished'] === 'true' ? { unpublished: 'true' } : {}) };
        report(await importSourceToServer(rf2Upload(file, progressBar(process.stderr)), { ...remote, params }));
        return;
      }
      report(await importToServer(file, remote));
    } catch (err) {
      console.error(err instanceof Error ? err.message : String(err));
      if (err instanceof RemoteImportError && err.status === 403) console.error(importForbiddenHint(projectId));
      process.exitCode = 1;
    }
    return;
  }
  // A command-line import may hold the database as long as its file needs (docs/errors.md#database-limits).
  // It analyzes what it loaded at its end, so PGlite's background ANALYZE stays off meanwhile.
  // It does not write the base terminologies in the background (`lazy`): that load competed with
  // the import for the database (on PGlite it doubled a 100k-concept import) and was cut off
  // when the import ended anyway; the next server start does it (docs/terminology.md#cli-import).
  const config = loadConfig();
  const app = await createApp({ ...config, baseTerminology: 'lazy', database: { ...config.database, statementTimeoutMs: 0, autoAnalyze: false } }, CLI_APP);
  // Terminology is indexed by the terminology import; every other resource goes to the
  // clinical bulk load, in batches of one transaction each (docs/rest.md#bulk-load).
  // Its batches are prepared by worker threads running this module (docs/rest.md#bulk-load).
  const workers = config.importWorkers > 0 ? { entry: new URL(import.meta.url), threads: config.importWorkers } : undefined;
  const loader = app.system.bulkLoad({ projectId, validate: validateResource, batchSize: config.importBatch, workers });
  try {
    if (fhirPackage) {
      const packageDirs = options['--package-dir'] ? [options['--package-dir']] : [];
      await importPackage(file, app, { projectId, packageDirs, batchSize: config.importBatch, out: console.log, warn: console.error });
      return;
    }
    if (loinc || rf2) {
      report(
        loinc
          ? await importLoinc(file, app, { projectId, version: options['--version'] })
          : await importRf2(file, app, { projectId, unpublished: options['--unpublished'] === 'true' }),
      );
      return;
    }
    const summary = await importFile(file, app, {
      projectId,
      shared,
      other: (resource, where, fullUrl) => loader.add(resource, where, fullUrl),
      bundleEnd: () => loader.endBundle(),
    });
    report(summary, await loader.finish());
  } catch (err) {
    await loader.settle();
    if (err instanceof PackageError) {
      console.error(err.message);
      process.exitCode = 1;
      return;
    }
    if (err instanceof ReleaseFileError) {
      console.error(`${file}: ${err.message}`);
      process.exitCode = 1;
      return;
    }
    if (!(err instanceof BulkLoadError || err instanceof JsonStreamError || err instanceof SharedClinicalImport)) throw err;
    console.error(`${file}: ${err.message} (${storedNote(loader, 'earlier batches')})`);
    process.exitCode = 1;
  } finally {
    await app.close();
  }
}

/** `lattice admin set-password <email>`: works on the configured database, no server needed. */
async function adminCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const options: Record<string, string | undefined> = {};
  const positional: string[] = [];
  let unusable = false; // an unknown option, or one without its value
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (name === '--password' || name === '--project') {
      options[name] = eq > 0 ? arg.slice(eq + 1) : rest[++i];
      if (options[name] === undefined) unusable = true;
    } else if (arg.startsWith('--')) {
      unusable = true;
    } else {
      positional.push(arg);
    }
  }
  if (sub !== 'set-password' || positional.length !== 1 || unusable) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const email = positional[0];
  let password: string | undefined;
  try {
    password = options['--password'] ?? (await readNewPassword());
    if (password) checkPasswordStrength(password); // before opening the database
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
    return;
  }
  const generated = !password;
  const newPassword = password || generatePassword();
  // A CLI run writes no base terminology in the background, and logs only warnings by default.
  const config = { ...loadConfig(), baseTerminology: 'lazy' as const, logLevel: process.env.LOG_LEVEL || 'warn' };
  const app = await createApp(config, CLI_APP);
  try {
    const done = await setPasswordByEmail(app, email, newPassword, options['--project']);
    console.log(generated ? `New password of ${done.email}: ${newPassword}` : `Password of ${done.email} set.`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  } finally {
    await app.close();
  }
}

/**
 * `lattice serve`: one server process, or with several workers (docs/deployment.md#workers) a
 * primary that forks them — each worker runs this same function and serves on the shared port.
 */
async function serve(): Promise<void> {
  const config = loadConfig();
  // The primary of several workers (on PostgreSQL) only forks and watches them. From the command
  // entry (dist/lattice.js) it never gets here: that entry runs it without loading the server.
  const primary = await servePrimary({ workers: config.workers, postgres: config.databaseUrl !== undefined, logLevel: config.logLevel });
  if (primary !== undefined) {
    process.exitCode = primary;
    return;
  }
  const slot = workerSlot();
  // The base terminologies are written once per database: by the first worker only (the others
  // still write one a request needs, as `lazy` does).
  const app = await createApp(slot > 1 ? { ...config, baseTerminology: 'lazy' } : config);
  const address = await app.listen();
  app.log.info({ address, driver: app.db.driver, ...(cluster.isWorker ? { worker: slot, pid: process.pid } : {}) }, 'Lattice listening');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

// A bulk load's preparing thread runs this module too (storage/bulk-prepare): it only prepares batches.
if (isPrepareWorker()) runPrepareWorker();
else main(process.argv.slice(2)).catch((err) => {
  console.error(err instanceof DataFolderInUse || err instanceof ListenUnsupported || err instanceof WorkersRefused ? err.message : err);
  if (err instanceof DataFolderInUse) console.error(dataFolderInUseHint(process.argv[2]));
  process.exit(1);
});
