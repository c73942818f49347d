import type { Feature } from '../services.js';

/** Wires the email feature into the application (hooks, routes, jobs). */
export const installEmail: Feature = async () => {};
