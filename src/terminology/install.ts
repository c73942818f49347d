import type { Feature } from '../services.js';

/** Wires the terminology feature into the application (hooks, routes, jobs). */
export const installTerminology: Feature = async () => {};
