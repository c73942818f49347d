import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, loginAs, ooText, startServer, type TestProject, type TestServer } from './harness.js';
import { invitedUserWithLink } from './support/invite.js';

/** `GET /setpassword/:id/:secret` and `POST /auth/setpassword` (docs/invite.md). */
for (const driver of drivers) {
  describe(`set password (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'Password Clinic');
    });
    after(() => server.stop());

    const newLink = () => invitedUserWithLink(server, project);
    const submit = (body: unknown) => server.request('POST', '/auth/setpassword', { body, contentType: 'application/json', token: null });

    test('sets the password once; the user then logs in; a second use → 400 Already used', async () => {
      const link = await newLink();
      const res = await submit({ id: link.id, secret: link.secret, password: 'my new password' });
      assert.equal(res.status, 200, res.text);
      const token = await loginAs(server, link.email, 'my new password', project.projectId);
      assert.ok(token);
      const again = await submit({ id: link.id, secret: link.secret, password: 'my new password' });
      assert.equal(again.status, 400);
      assert.equal(again.body.issue[0].code, 'invalid');
      assert.equal(ooText(again.body), 'Already used');
    });

    test('wrong secret → 400 Invalid secret (and the link stays usable)', async () => {
      const link = await newLink();
      const res = await submit({ id: link.id, secret: `${link.secret}x`, password: 'my new password' });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Invalid secret');
      assert.equal((await submit({ id: link.id, secret: link.secret, password: 'my new password' })).status, 200);
    });

    test('expired after 7 days → 400 Expired', async () => {
      const link = await newLink();
      const stored = await server.app.db.query<{ days: number }>(
        "SELECT extract(epoch FROM expires_at - created_at) / 86400 AS days FROM password_set_request WHERE id = $1",
        [link.id],
      );
      assert.equal(Math.round(Number(stored.rows[0].days)), 7);
      await server.app.db.query("UPDATE password_set_request SET expires_at = now() - interval '1 second' WHERE id = $1", [link.id]);
      const res = await submit({ id: link.id, secret: link.secret, password: 'my new password' });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Expired');
      const page = await fetch(link.url);
      assert.equal(page.status, 410);
      assert.match(await page.text(), /expired/);
    });

    test('password shorter than 8 → 400 with expression password; the link stays usable', async () => {
      const link = await newLink();
      const res = await submit({ id: link.id, secret: link.secret, password: 'short' });
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), 'Password must be at least 8 characters');
      assert.deepEqual(res.body.issue[0].expression, ['password']);
      assert.equal((await submit({ id: link.id, secret: link.secret, password: 'long enough now' })).status, 200);
    });

    test('unknown link → 404 Not found', async () => {
      const res = await submit({ id: 'no-such-link', secret: 'x', password: 'my new password' });
      assert.equal(res.status, 404);
      assert.equal(ooText(res.body), 'Not found');
      assert.equal((await fetch(`${server.baseUrl}/setpassword/no-such-link/x`)).status, 404);
    });

    test('two simultaneous submissions: one 200, one Already used', async () => {
      const link = await newLink();
      const results = await Promise.all([
        submit({ id: link.id, secret: link.secret, password: 'first password' }),
        submit({ id: link.id, secret: link.secret, password: 'second password' }),
      ]);
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 400]);
      assert.equal(ooText(results.find((r) => r.status === 400)?.body), 'Already used');
    });

    test('only a hash of the secret is stored', async () => {
      const link = await newLink();
      const rows = await server.app.db.query<Record<string, unknown>>('SELECT * FROM password_set_request WHERE id = $1', [link.id]);
      assert.equal(rows.rows.length, 1);
      assert.ok(!JSON.stringify(rows.rows[0]).includes(link.secret));
    });

    test('the page: a form for a valid link, a message once used; private headers', async () => {
      const link = await newLink();
      const page = await fetch(link.url);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(page.headers.get('cache-control'), 'no-store');
      assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
      const html = await page.text();
      assert.match(html, /<input id="password" name="password" type="password"/);
      assert.match(html, new RegExp(`name="id" value="${link.id}"`));
      await submit({ id: link.id, secret: link.secret, password: 'my new password' });
      const used = await fetch(link.url);
      assert.equal(used.status, 410);
      assert.match(await used.text(), /already been used/);
    });

    test('the plain form post (no JavaScript) sets the password and answers with a page', async () => {
      const link = await newLink();
      const res = await fetch(`${server.baseUrl}/auth/setpassword`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ id: link.id, secret: link.secret, password: 'form password', confirm: 'form password' }),
      });
      assert.equal(res.status, 200);
      assert.match(await res.text(), /Your password has been set/);
      assert.ok(await loginAs(server, link.email, 'form password', project.projectId));
    });
  });
}
