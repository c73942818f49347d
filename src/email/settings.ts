import type { Config } from '../config.js';

/** Tuning of the outbox sender; defaults suit production, tests shorten the intervals. */
export interface EmailSettings {
  /** `From:` of every message. */
  from: string;
  /** How often a sender looks for due messages when nothing wakes it. */
  pollMs: number;
  /** First retry delay; doubled per failed attempt … */
  retryBaseMs: number;
  /** … up to this. */
  retryMaxMs: number;
  /** Attempts before a message is given up. */
  maxAttempts: number;
  /** How long a claimed message is reserved for one sender (longer than any SMTP timeout). */
  leaseMs: number;
  /** Messages claimed per round trip. */
  batchSize: number;
}

/**
 * ADAPTER until `Config` carries these (proposed fields with the same names, read in
 * `loadConfig`): values come from `config` when present, else from the environment —
 * `LATTICE_EMAIL_FROM`, `LATTICE_EMAIL_POLL_MS`, `LATTICE_EMAIL_RETRY_MS`,
 * `LATTICE_EMAIL_RETRY_MAX_MS`, `LATTICE_EMAIL_MAX_ATTEMPTS`.
 */
export function emailSettings(config: Config, env: Record<string, string | undefined> = process.env): EmailSettings {
  const given = config as Config & Partial<EmailSettings>;
  const host = hostOf(config.publicUrl);
  return {
    from: given.from ?? env.LATTICE_EMAIL_FROM ?? `Lattice <no-reply@${host}>`,
    pollMs: given.pollMs ?? int(env.LATTICE_EMAIL_POLL_MS, 5_000),
    retryBaseMs: given.retryBaseMs ?? int(env.LATTICE_EMAIL_RETRY_MS, 10_000),
    retryMaxMs: given.retryMaxMs ?? int(env.LATTICE_EMAIL_RETRY_MAX_MS, 15 * 60_000),
    maxAttempts: given.maxAttempts ?? int(env.LATTICE_EMAIL_MAX_ATTEMPTS, 12),
    leaseMs: given.leaseMs ?? 120_000,
    batchSize: given.batchSize ?? 10,
  };
}

/** Delay before attempt `attempts + 1`: exponential, capped. */
export function retryDelay(settings: EmailSettings, attempts: number): number {
  return Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.max(0, attempts - 1));
}

function int(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(n) && n > 0 ? n : fallback;
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname || 'localhost';
  } catch {
    return 'localhost';
  }
}
