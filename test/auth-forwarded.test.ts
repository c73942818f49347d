import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * Login throttling keys on the client address; `X-Forwarded-For` names it only when the peer
 * is a configured proxy (docs/auth.md#throttling). Before, the header was never believed, so
 * behind a proxy every client shared one address limit.
 */
const ADMIN = { email: 'admin@example.com', password: 'admin-password-123' };

function login(server: TestServer, body: { email: string; password: string }, forwardedFor?: string) {
  return server.request('POST', '/auth/login', {
    body,
    contentType: 'application/json',
    token: null,
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
  });
}

/** 100 failed logins (the address limit) over as many unknown accounts, 10 at a time. */
async function fail100(server: TestServer, forwardedFor: (i: number) => string): Promise<void> {
  for (let batch = 0; batch < 10; batch++) {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, j) => login(server, { email: `spray-${batch * 10 + j}@example.com`, password: 'Winter2024!' }, forwardedFor(batch * 10 + j))),
    );
    for (const res of answers) assert.equal(res.status, 400, res.text);
  }
}

for (const driver of drivers) {
  describe(`login throttling behind proxies (${driver})`, () => {
    test('through a trusted proxy each forwarded client has its own address limit', async () => {
      const server = await startServer(driver, { env: { LATTICE_TRUSTED_PROXIES: '127.0.0.1' } });
      try {
        await fail100(server, () => '203.0.113.7');
        const blocked = await login(server, ADMIN, '203.0.113.7');
        assert.equal(blocked.status, 429, blocked.text);
        assert.equal(ooText(blocked.body), 'Too many failed login attempts; try again later');
        // A client's own address further left in the header, appended by the trusted proxy.
        assert.equal((await login(server, ADMIN, '198.51.100.1, 203.0.113.7')).status, 429);
        assert.equal((await login(server, ADMIN, '203.0.113.8')).status, 200, 'another client behind the proxy');
        assert.equal((await login(server, ADMIN)).status, 200, 'the proxy itself');
      } finally {
        await server.stop();
      }
    });

    test('from a peer that is not a trusted proxy X-Forwarded-For is ignored (default: none trusted)', async () => {
      const envs: Array<Record<string, string>> = [{}, { LATTICE_TRUSTED_PROXIES: '10.9.8.7, 192.0.2.0/24' }];
      for (const env of envs) {
        const server = await startServer(driver, { env });
        try {
          await fail100(server, (i) => `203.0.113.${i}`);
          const res = await login(server, ADMIN, '198.51.100.77');
          assert.equal(res.status, 429, `${JSON.stringify(env)}: ${res.text}`);
        } finally {
          await server.stop();
        }
      }
    });
  });
}
