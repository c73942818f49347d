import type { Config } from '../config.js';
import type { AppRoute } from '../core/app-route.js';
import type { BinaryStore } from '../core/binary.js';
import type { Database } from '../core/database.js';
import type { FeatureEnv } from '../core/feature.js';
import type { ResourceHook } from '../core/repository.js';
import { ContentStore } from './content-store.js';
import { binaryHooks } from './hooks.js';
import { signedContentRoutes } from './signed-route.js';
import { UrlSigner } from './signed-urls.js';

/** The binary feature before the repository exists: its store and the write hooks that need it. */
export interface BinaryFeature {
  store: BinaryStore;
  hooks: ResourceHook[];
  /** Opens the URL key, sweeps abandoned uploads (now and periodically); returns the signed-URL routes. */
  install(env: FeatureEnv): Promise<AppRoute[]>;
}

/**
 * Builds the binary feature (docs/rest.md#binary). Its hooks join every repository, so it is
 * made before the repository; `install` runs once the repository and database are up.
 */
export function createBinaryFeature(config: Config, db: Database): BinaryFeature {
  const store = new ContentStore(db, config.binary.limit);
  const signer = new UrlSigner(() => config.publicUrl, config.binary.urlLifetime);
  return {
    store,
    hooks: binaryHooks(store, signer),
    async install(env) {
      await signer.open(env.db);
      const log = env.log.child({ component: 'binary' });
      // The embedded database has one process (the data-folder lock): every staged upload at
      // start is one a previous process left behind. On PostgreSQL another node may be
      // uploading: only uploads idle past LATTICE_BINARY_STAGE_IDLE are removed.
      const idle = config.binary.stageIdle;
      const sweep = async (all: boolean) => {
        const removed = all ? await store.sweepAll() : await store.sweep(idle);
        if (removed > 0) log.info({ removed }, 'binary: removed abandoned uploads');
      };
      await sweep(env.db.driver === 'pglite');
      let running: Promise<void> | undefined;
      const timer = setInterval(() => {
        running ??= sweep(false)
          .catch((err: unknown) => log.warn({ err }, 'binary: sweeping abandoned uploads failed'))
          .finally(() => (running = undefined));
      }, Math.min(idle, 60) * 1000);
      timer.unref();
      env.onClose(async () => {
        clearInterval(timer);
        await running;
      });
      return signedContentRoutes(env.system, store, signer);
    },
  };
}
