import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMember, createProject, drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

const WINDOW_SECONDS = 15 * 60;

/** Repeated login failures are throttled per account and per client address (docs/auth.md). */
for (const driver of drivers) {
  describe(`auth: login throttling (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    const login = (email: string, password: string) =>
      server.request('POST', '/auth/login', { body: { email, password }, contentType: 'application/json', token: null });

    function assertThrottled(res: ApiResponse): void {
      assert.equal(res.status, 429, res.text);
      assert.equal(res.body.issue[0].code, 'throttled');
      assert.ok(ooText(res.body));
      const retryAfter = Number(res.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= WINDOW_SECONDS, `Retry-After ${retryAfter}`);
    }

    test('10 failures for one account → 429 with Retry-After, even with the right password', async () => {
      const p = await createProject(server, 'Throttle');
      const member = await createMember(server, p.projectId);
      for (let i = 0; i < 10; i++) assert.equal((await login(member.email, `wrong-password-${i}`)).status, 400);
      assertThrottled(await login(member.email, 'wrong-password-x'));
      assertThrottled(await login(member.email, member.password));
      // Another account from the same address is not affected.
      assert.equal((await login('admin@example.com', 'admin-password-123')).status, 200);
    });

    test('a successful login resets the account counter', async () => {
      const p = await createProject(server, 'Throttle reset');
      const member = await createMember(server, p.projectId);
      for (let i = 0; i < 9; i++) assert.equal((await login(member.email, 'wrong-password')).status, 400);
      assert.equal((await login(member.email, member.password)).status, 200);
      for (let i = 0; i < 9; i++) assert.equal((await login(member.email, 'wrong-password')).status, 400);
      assert.equal((await login(member.email, member.password)).status, 200);
    });

    test('unknown accounts are throttled the same way (no account discovery)', async () => {
      for (let i = 0; i < 10; i++) assert.equal((await login('ghost@example.com', 'wrong-password')).status, 400);
      assertThrottled(await login('ghost@example.com', 'wrong-password'));
    });

    test('100 failures from one address (over many accounts) → 429 for every account from it', async () => {
      // Counters of earlier tests on this server count too; fill up to the address limit.
      const failures = (
        await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM auth_login_failure WHERE key LIKE 'ip:%'")
      ).rows[0].n;
      for (let i = failures; i < 100; i++) assert.equal((await login(`spray-${i}@example.com`, 'Winter2024!')).status, 400);
      assertThrottled(await login('admin@example.com', 'admin-password-123'));
    });
  });
}
