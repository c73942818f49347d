import type { Feature } from '../services.js';

/** Wires the operations feature into the application (hooks, routes, jobs). */
export const installOperations: Feature = async () => {};
