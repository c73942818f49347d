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

/** The sender's settings from the configuration (`LATTICE_EMAIL_*`, see config.ts). */
export function emailSettings(config: Config): EmailSettings {
  return {
    ...config.email,
    from: config.email.from ?? `Lattice <no-reply@${hostOf(config.publicUrl)}>`,
    leaseMs: 120_000,
    batchSize: 10,
  };
}

/** Delay before attempt `attempts + 1`: exponential, capped. */
export function retryDelay(settings: EmailSettings, attempts: number): number {
  return Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.max(0, attempts - 1));
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname || 'localhost';
  } catch {
    return 'localhost';
  }
}
