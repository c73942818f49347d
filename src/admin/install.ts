import type { Feature } from '../services.js';

/** Wires the admin feature into the application (hooks, routes, jobs). */
export const installAdmin: Feature = async () => {};
