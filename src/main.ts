#!/usr/bin/env node
import { createApp } from './app.js';
import { loadConfig } from './config.js';
import { DataFolderInUse } from './storage/data-folder-lock.js';
import { importFile } from './terminology/import-file.js';

const USAGE = `Usage:
  lattice serve                            start the server (default)
  lattice import <file> [--project <id>]   load a CodeSystem/ValueSet JSON, a Bundle or NDJSON
                                           (shared content unless --project is given)`;

/** CLI entry: `lattice serve` (default) starts the server. The one place that reads argv. */
async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'import':
      return importCommand(rest);
    default:
      console.error(`Unknown command '${command}'.\n${USAGE}`);
      process.exitCode = 2;
  }
}

/** `lattice import <file>`: writes through the same index as the API, with a progress bar. */
async function importCommand(args: string[]): Promise<void> {
  const projectAt = args.indexOf('--project');
  const projectId = projectAt >= 0 ? args[projectAt + 1] : undefined;
  const file = args.find((a, i) => !a.startsWith('--') && (projectAt < 0 || i !== projectAt + 1));
  if (!file || (projectAt >= 0 && !projectId)) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const app = await createApp(loadConfig());
  try {
    const summary = await importFile(file, app, { projectId });
    console.log(
      `imported ${summary.resources} resources (${summary.codeSystems} CodeSystems, ${summary.valueSets} ValueSets, ` +
        `${summary.concepts} concepts; ${summary.skipped} skipped) in ${(summary.ms / 1000).toFixed(1)} s`,
    );
  } finally {
    await app.close();
  }
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const app = await createApp(config);
  const address = await app.listen();
  app.log.info({ address, driver: app.db.driver }, 'Lattice listening');
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

main(process.argv.slice(2)).catch((err) => {
  console.error(err instanceof DataFolderInUse ? err.message : err);
  process.exit(1);
});
