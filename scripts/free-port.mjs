import { createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (for servers the scripts start). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
