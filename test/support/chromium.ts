import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';

/** How to launch a headless Chromium with playwright-core's `chromium.launch`. */
export interface ChromiumLaunch {
  executablePath: string;
  args: string[];
  env?: Record<string, string>;
}

const SYSTEM_CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * The system Chromium (Debian's `chromium`) when installed, else the one shipped inside the npm
 * package @sparticuz/chromium (a brotli-compressed build that `executablePath()` extracts to the
 * temp folder; nothing is downloaded). That build needs only NSS/NSPR and expat from the system;
 * when they are missing, the copies it ships (built for Amazon Linux) are extracted beside it and
 * put on LD_LIBRARY_PATH (LATTICE_TEST_CHROMIUM_LIBS=bundled forces that, to check it). A
 * machine without either browser makes the browser test fail, never skip.
 */
export async function chromiumLaunch(): Promise<ChromiumLaunch> {
  if (existsSync(SYSTEM_CHROMIUM)) return { executablePath: SYSTEM_CHROMIUM, args: ARGS };
  const { default: sparticuz } = await import('@sparticuz/chromium');
  const executablePath = await sparticuz.executablePath();
  const launch: ChromiumLaunch = { executablePath, args: ARGS };
  const ldd = spawnSync('ldd', [executablePath], { encoding: 'utf8' });
  if ((ldd.status === 0 && ldd.stdout.includes('not found')) || process.env.LATTICE_TEST_CHROMIUM_LIBS === 'bundled') {
    const libDir = join(tmpdir(), 'lattice-chromium-libs');
    if (!existsSync(join(libDir, 'lib'))) {
      mkdirSync(libDir, { recursive: true });
      const bin = join(dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '..', '..', 'bin');
      const tar = spawnSync('tar', ['-x', '-C', libDir], { input: brotliDecompressSync(readFileSync(join(bin, 'al2023.tar.br'))) });
      if (tar.status !== 0) throw new Error(`extracting the libraries of @sparticuz/chromium failed: ${tar.stderr.toString()}`);
    }
    const libPath = [join(libDir, 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
    launch.env = { ...(process.env as Record<string, string>), LD_LIBRARY_PATH: libPath };
  }
  return launch;
}
