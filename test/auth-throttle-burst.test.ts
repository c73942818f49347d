import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMember, createProject, drivers, startServer, type TestServer } from './harness.js';

/**
 * Throttling holds under concurrency (docs/auth.md#throttling): an attempt is claimed before
 * its password is checked, so a burst of parallel attempts gets at most the per-account limit
 * (10) of password checks; the rest are 429 — and the right password sent after the burst is
 * refused too. Before claims, 200 parallel attempts were all checked.
 */
for (const driver of drivers) {
  describe(`auth: parallel login burst (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('200 parallel wrong passwords for one account: at most 10 checked, the rest 429', async () => {
      const p = await createProject(server, 'Burst');
      const member = await createMember(server, p.projectId);
      const login = (password: string) =>
        server.request('POST', '/auth/login', { body: { email: member.email, password }, contentType: 'application/json', token: null });
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => login(`wrong-password-${i}`)));
      const statuses = answers.map((a) => a.status);
      const checked = statuses.filter((s) => s === 400).length;
      assert.ok(checked <= 10, `${checked} passwords were checked`);
      assert.ok(checked >= 1, 'no attempt was checked at all');
      assert.deepEqual([...new Set(statuses)].sort(), checked === 200 ? [400] : [400, 429]);
      assert.equal(statuses.filter((s) => s === 429).length, 200 - checked);
      // The account is now locked for the window, the right password included.
      assert.equal((await login(member.password)).status, 429);
    });
  });
}
