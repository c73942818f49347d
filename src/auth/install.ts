import type { Feature } from '../services.js';

/** Wires the auth feature into the application (hooks, routes, jobs). */
export const installAuth: Feature = async () => {};
