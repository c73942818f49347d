import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { PASSWORD_SET_TEXT } from '../src/admin/set-password-page.js';
import { createProject, drivers, loginAs, startServer, type TestProject, type TestServer } from './harness.js';
import { chromiumLaunch } from './support/chromium.js';
import { invitedUserWithLink } from './support/invite.js';

/**
 * The set-password page driven in a real browser (headless Chromium through playwright-core):
 * the system Chromium when installed, else the one inside the npm package @sparticuz/chromium
 * (see support/chromium.ts). Never skipped.
 */
for (const driver of drivers) {
  describe(`set-password page in Chromium (${driver})`, () => {
    let browser: Browser;
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      browser = await chromium.launch(await chromiumLaunch());
      server = await startServer(driver);
      project = await createProject(server, 'Browser Clinic');
    });
    after(async () => {
      await browser?.close();
      await server?.stop();
    });

    const invitedUserLink = () => invitedUserWithLink(server, project);

    test('fill the form, submit, see the success text, then log in with the new password', async () => {
      const { email, url } = await invitedUserLink();
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
      await page.goto(url);
      assert.equal(await page.title(), 'Set your password · Lattice');
      await page.fill('#password', 'chosen in a browser');
      await page.fill('#confirm', 'chosen in a browser');
      await page.click('button[type=submit]');
      await page.waitForSelector(`text=${PASSWORD_SET_TEXT}`, { timeout: 15_000 });
      assert.deepEqual(errors, [], 'no script errors, no CSP violations');
      await page.close();
      const token = await loginAs(server, email, 'chosen in a browser', project.projectId);
      assert.equal((await server.fhir('GET', '/Practitioner', { token })).status, 200);
    });

    test('errors are shown on the page: mismatch, then the server\'s text', async () => {
      const { url } = await invitedUserLink();
      const page = await browser.newPage();
      await page.goto(url);
      await page.fill('#password', 'first password');
      await page.fill('#confirm', 'second password');
      await page.click('button[type=submit]');
      await page.waitForSelector('#status:has-text("Passwords do not match")');
      // Used meanwhile (e.g. in another tab): the server's contract text appears.
      const [id, secret] = url.split('/').slice(-2);
      const used = await server.request('POST', '/auth/setpassword', { body: { id, secret, password: 'other tab password' }, token: null });
      assert.equal(used.status, 200);
      await page.fill('#confirm', 'first password');
      await page.click('button[type=submit]');
      await page.waitForSelector('#status:has-text("Already used")');
      await page.close();
    });
  });
}
