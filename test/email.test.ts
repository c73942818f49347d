import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import pino from 'pino';
import { enqueueEmail } from '../src/email/outbox.js';
import { OutboxSender } from '../src/email/sender.js';
import { emailSettings } from '../src/email/settings.js';
import { createEmailTransport } from '../src/email/transport.js';
import { createProject, drivers, loginAs, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';

/** Short sender intervals, so retries happen within a test. */
const FAST_EMAIL = { LATTICE_EMAIL_POLL_MS: '100', LATTICE_EMAIL_RETRY_MS: '100', LATTICE_EMAIL_RETRY_MAX_MS: '300' };

/** A message as received by the loopback SMTP server. */
interface Received {
  to: string[];
  subject: string;
  messageId: string;
  /** Raw message with quoted-printable soft breaks and escapes decoded. */
  body: string;
}

/** A real SMTP server on loopback (the `smtp-server` package) that keeps what it receives. */
class SmtpCapture {
  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
    readonly messages: Received[],
  ) {}

  static async start(port = 0): Promise<SmtpCapture> {
    const messages: Received[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          messages.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: /^Subject: (.*)$/m.exec(raw)?.[1].trim() ?? '',
            messageId: /^Message-ID: (.*)$/im.exec(raw)?.[1].trim() ?? '',
            body: raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    const bound = (server as unknown as { server: { address(): { port: number } } }).server.address().port;
    return new SmtpCapture(server, bound, messages);
  }

  /** The first message to `address` (waits up to `timeoutMs`). */
  async waitFor(address: string, timeoutMs = 20_000): Promise<Received> {
    const found = await waitUntil(() => this.messages.find((m) => m.to.includes(address)), timeoutMs);
    assert.ok(found, `no e-mail to ${address} within ${timeoutMs} ms`);
    return found;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function waitUntil<T>(fn: () => T | undefined | Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A port where "SMTP is down": held by a listener that drops every connection, so no other
 * test's server can take it before the real SMTP server comes up there (`release` first).
 */
function downSmtpPort(): Promise<{ port: number; release: () => Promise<void> }> {
  return new Promise((resolve) => {
    const srv = createServer((socket) => socket.destroy()).listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      resolve({ port, release: () => new Promise<void>((done) => srv.close(() => done())) });
    });
  });
}

const SET_PASSWORD_LINK = /https?:\/\/[^\s"<>]+\/setpassword\/([\w-]+)\/([\w-]+)/;
const email = (): string => `mail-${randomBytes(5).toString('hex')}@example.org`;
const inviteAs = (server: TestServer, projectId: string, body: unknown, token?: string): Promise<ApiResponse> =>
  server.request('POST', `/admin/projects/${projectId}/invite`, { body, contentType: 'application/json', token });
/** A row of email_outbox (src/storage/migrations/310_email_outbox.sql). */
interface OutboxRow {
  id: string;
  recipient: string;
  subject: string;
  text_body: string;
  html_body: string | null;
  created_at: Date;
  attempts: number;
  next_attempt_at: Date;
  locked_until: Date | null;
  sent_at: Date | null;
  failed_at: Date | null;
  last_error: string | null;
}
const outboxRow = async (server: TestServer, to: string): Promise<OutboxRow | undefined> =>
  (await server.app.db.query<OutboxRow>('SELECT * FROM email_outbox WHERE recipient = $1', [to])).rows[0];

for (const driver of drivers) {
  describe(`invite e-mail over SMTP (${driver})`, () => {
    let smtp: SmtpCapture;
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      smtp = await SmtpCapture.start();
      server = await startServer(driver, { env: { ...FAST_EMAIL, SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } });
      project = await createProject(server, 'Email Clinic');
    });
    after(async () => {
      await server.stop();
      await smtp.stop();
    });
    const invite = (body: unknown) => inviteAs(server, project.projectId, body, project.adminToken);

    test('new user: "Welcome to <project>" with a working set-password link, then login', async () => {
      const to = email();
      const res = await invite({ resourceType: 'Practitioner', firstName: 'Mae', lastName: 'Jemison', email: to, sendEmail: true });
      assert.equal(res.status, 200, res.text);
      const message = await smtp.waitFor(to);
      assert.equal(message.subject, 'Welcome to Email Clinic');
      assert.match(message.body, /Hello Mae/);
      const link = SET_PASSWORD_LINK.exec(message.body);
      assert.ok(link, message.body);
      assert.ok(link[0].startsWith(`${server.baseUrl}/setpassword/`), link[0]);

      const page = await fetch(link[0]);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
      assert.match(await page.text(), /<form[^>]+id="set-password"/);

      const set = await server.request('POST', '/auth/setpassword', {
        body: { id: link[1], secret: link[2], password: 'a brand new password' },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(set.status, 200, set.text);
      const token = await loginAs(server, to, 'a brand new password', project.projectId);
      assert.equal((await server.fhir('GET', '/Practitioner', { token })).status, 200);
      const again = await server.request('POST', '/auth/setpassword', {
        body: { id: link[1], secret: link[2], password: 'another password' },
        contentType: 'application/json',
        token: null,
      });
      assert.equal(again.status, 400);
      assert.equal(ooText(again.body), 'Already used');
      // The SMTP server has the message a moment before the sender records the server's answer.
      const row = await waitUntil(async () => ((await outboxRow(server, to))?.sent_at ? outboxRow(server, to) : undefined), 10_000);
      assert.ok(row, 'marked sent');
      assert.equal(row.text_body, '', 'the body (with its link) is dropped once sent');
    });

    test('existing user: "You were invited to <project>"', async () => {
      const to = email();
      const first = await createProject(server, 'First Home');
      const body = { resourceType: 'Practitioner', firstName: 'Kat', lastName: 'Johnson', email: to, password: 'existing password' };
      assert.equal((await inviteAs(server, first.projectId, body, first.adminToken)).status, 200);
      assert.equal((await invite({ ...body, password: undefined, sendEmail: true })).status, 200);
      const message = await smtp.waitFor(to);
      assert.equal(message.subject, 'You were invited to Email Clinic');
      assert.doesNotMatch(message.body, SET_PASSWORD_LINK, 'a user with a password gets no set-password link');
    });

    test('without sendEmail, or when the invite fails, nothing is queued', async () => {
      const quiet = email();
      assert.equal((await invite({ resourceType: 'Practitioner', firstName: 'No', lastName: 'Mail', email: quiet })).status, 200);
      const failed = email();
      const res = await invite({ resourceType: 'RelatedPerson', firstName: 'No', lastName: 'Patient', email: failed, sendEmail: true });
      assert.equal(res.status, 400);
      assert.equal(await outboxRow(server, quiet), undefined);
      assert.equal(await outboxRow(server, failed), undefined, 'the outbox row rolled back with the invite');
    });

    test('several senders (API nodes) on one database never deliver a message twice', async () => {
      const smtpUrl = `smtp://127.0.0.1:${smtp.port}`;
      const nodes = [server];
      if (driver === 'pg') {
        // A second API node on the same PostgreSQL database, with its own sender.
        nodes.push(await startServer('pg', { databaseUrl: server.config.databaseUrl, env: { ...FAST_EMAIL, SMTP_URL: smtpUrl } }));
      }
      // Two more senders on the first node's database (on PostgreSQL: separate pool connections).
      const log = pino({ level: 'silent' });
      const extra = [1, 2].map(() => new OutboxSender(server.app.db, createEmailTransport(smtpUrl, log), emailSettings(server.config), log));
      for (const sender of extra) sender.start();
      try {
        const recipients = Array.from({ length: 40 }, () => email());
        await server.app.db.transaction(async (tx) => {
          for (const to of recipients) await enqueueEmail(tx, { to, subject: 'Bulk', text: 'hello' });
        });
        for (const to of recipients) await smtp.waitFor(to);
        await new Promise((r) => setTimeout(r, 500)); // room for a duplicate to show up
        const delivered = smtp.messages.filter((m) => recipients.some((to) => m.to.includes(to)));
        assert.equal(delivered.length, recipients.length);
        assert.equal(new Set(delivered.map((m) => m.messageId)).size, recipients.length);
      } finally {
        for (const sender of extra) await sender.stop();
        for (const node of nodes.slice(1)) await node.stop();
      }
    });
  });

  describe(`invite e-mail with SMTP down at first (${driver})`, () => {
    test('the invite succeeds; the message is delivered once SMTP is back', async () => {
      const down = await downSmtpPort();
      const port = down.port;
      const server = await startServer(driver, { env: { ...FAST_EMAIL, SMTP_URL: `smtp://127.0.0.1:${port}` } });
      let smtp: SmtpCapture | undefined;
      try {
        const project = await createProject(server, 'Retry Clinic');
        const to = email();
        const res = await inviteAs(server, project.projectId, { resourceType: 'Practitioner', firstName: 'Re', lastName: 'Try', email: to, sendEmail: true }, project.adminToken);
        assert.equal(res.status, 200, 'a delivery failure never undoes the invite');
        const failedOnce = await waitUntil(async () => {
          const row = await outboxRow(server, to);
          return row && row.attempts >= 1 && row.last_error && !row.sent_at ? row : undefined;
        }, 20_000);
        assert.ok(failedOnce, 'a failed attempt is recorded');

        await down.release();
        smtp = await SmtpCapture.start(port);
        const message = await smtp.waitFor(to, 15_000);
        assert.equal(message.subject, 'Welcome to Retry Clinic');
        const row = await waitUntil(async () => ((await outboxRow(server, to))?.sent_at ? outboxRow(server, to) : undefined), 10_000);
        assert.ok(row, 'marked sent');
        assert.ok(row.attempts >= 2);
      } finally {
        await server.stop();
        await smtp?.stop();
        await down.release().catch(() => undefined);
      }
    });
  });

  describe(`invite e-mail without SMTP_URL (${driver})`, () => {
    test('the message goes to the log and is marked sent', async () => {
      const server = await startServer(driver);
      try {
        const project = await createProject(server, 'Log Clinic');
        const to = email();
        const res = await inviteAs(server, project.projectId, { resourceType: 'Practitioner', firstName: 'Lo', lastName: 'G', email: to, sendEmail: true }, project.adminToken);
        assert.equal(res.status, 200);
        assert.ok(await waitUntil(async () => (await outboxRow(server, to))?.sent_at, 10_000));
      } finally {
        await server.stop();
      }
    });
  });
}
