#!/usr/bin/env node
import { createApp } from './app.js';
import { loadConfig } from './config.js';

/** CLI entry: `lattice serve` (default) starts the server. The one place that reads argv. */
async function main(argv: string[]): Promise<void> {
  const [command = 'serve'] = argv;
  switch (command) {
    case 'serve':
      return serve();
    default:
      console.error(`Unknown command '${command}'. Usage: lattice serve`);
      process.exitCode = 2;
  }
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const app = await createApp(config);
  const address = await app.listen();
  app.services.log.info({ address, driver: app.services.db.driver }, 'Lattice listening');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.services.log.info({ signal }, 'shutting down: finishing in-flight requests');
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.services.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main(process.argv.slice(2)).catch((err) => {
  console.error(err);
  process.exit(1);
});
