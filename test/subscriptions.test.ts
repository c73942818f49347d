import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Observation, Subscription } from '@medplum/fhirtypes';
import WebSocket from 'ws';
import { createMember, createProject, drivers, ooText, startServer, type TestServer } from './harness.js';
import { WebhookListener } from './support/webhook-listener.js';

/**
 * Subscriptions (docs/rest.md#subscriptions), end to end over real HTTP: a real HTTP listener
 * on loopback receives rest-hook notifications, a real WebSocket client binds. No timing
 * assertion: each test waits for what it expects and checks the order and the count.
 */
const ALLOW_PRIVATE = { LATTICE_SUBSCRIPTION_ALLOW_PRIVATE: 'true', LATTICE_SUBSCRIPTION_RETRY_MS: '20', LATTICE_SUBSCRIPTION_RETRY_MAX_MS: '100', LATTICE_SUBSCRIPTION_POLL_MS: '200' };
const INTERACTION = 'https://medplum.com/fhir/StructureDefinition/subscription-supported-interaction';
const SECRET = 'https://www.medplum.com/fhir/StructureDefinition/subscription-secret';
const MAX_ATTEMPTS = 'https://medplum.com/fhir/StructureDefinition/subscription-max-attempts';

const observation = (code: string, value = 1): Observation => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code }] },
  valueQuantity: { value },
});

const restHook = (endpoint: string, criteria: string, extra: Partial<Subscription> = {}): Subscription => ({
  resourceType: 'Subscription',
  status: 'requested',
  reason: 'test',
  criteria,
  channel: { type: 'rest-hook', endpoint, payload: 'application/fhir+json' },
  ...extra,
});

for (const driver of drivers) {
  describe(`subscriptions (${driver})`, () => {
    let server: TestServer;
    let listener: WebhookListener;
    /** A path per test, so each test reads only its own notifications. */
    let n = 0;
    const endpoint = () => `${listener.url}/hook-${++n}`;
    const receivedAt = (url: string) => listener.received.filter((r) => url.endsWith(r.path));
    const until = async (url: string, count: number) => {
      while (receivedAt(url).length < count) await listener.waitFor(listener.received.length + 1);
      return receivedAt(url);
    };
    const subscribe = async (body: Subscription) => {
      const res = await server.fhir<Subscription>('POST', '/Subscription', { body });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };

    before(async () => {
      listener = await new WebhookListener().start();
      server = await startServer(driver, { env: ALLOW_PRIVATE });
    });
    after(async () => {
      await server?.stop();
      await listener?.stop();
    });

    test('a created Subscription is active, and matching creates reach the endpoint in order with headers and signature', async () => {
      const url = endpoint();
      const sub = await subscribe(
        restHook(url, 'Observation?code=http://loinc.org|1234-5', {
          channel: { type: 'rest-hook', endpoint: url, payload: 'application/fhir+json', header: ['Authorization: Bearer hook-secret'] },
          extension: [{ url: SECRET, valueString: 'shh' }],
        }),
      );
      assert.equal(sub.status, 'active');
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const other = await server.fhir('POST', '/Observation', { body: observation('9999-9') });
        assert.equal(other.status, 201);
        const created = await server.fhir<Observation>('POST', '/Observation', { body: observation('1234-5', i) });
        assert.equal(created.status, 201);
        ids.push(created.body.id as string);
      }
      const got = await until(url, 3);
      assert.deepEqual(got.map((r) => (JSON.parse(r.body) as Observation).id), ids);
      for (const r of got) {
        assert.equal(r.headers.authorization, 'Bearer hook-secret');
        assert.equal(r.headers['content-type'], 'application/fhir+json');
        assert.equal(r.headers['x-signature'], createHmac('sha256', 'shh').update(r.body).digest('hex'));
      }
    });

    test('interaction extensions: create and update by default; delete only when asked, with the deleted resource named', async () => {
      const defaults = endpoint();
      const deletes = endpoint();
      await subscribe(restHook(defaults, 'Observation?code=2222-2'));
      await subscribe(restHook(deletes, 'Observation?code=2222-2', { extension: [{ url: INTERACTION, valueCode: 'delete' }] }));
      const created = await server.fhir<Observation>('POST', '/Observation', { body: observation('2222-2', 1) });
      const id = created.body.id as string;
      assert.equal((await server.fhir('PUT', `/Observation/${id}`, { body: { ...observation('2222-2', 2), id } })).status, 200);
      assert.equal((await server.fhir('DELETE', `/Observation/${id}`)).status, 200);
      // Written after the three: when it arrives, everything before it has been delivered.
      const marker = await server.fhir<Observation>('POST', '/Observation', { body: observation('2222-2', 3) });
      const got = await until(defaults, 3);
      assert.deepEqual(got.map((r) => [(JSON.parse(r.body) as Observation).id, (JSON.parse(r.body) as Observation).meta?.versionId]), [
        [id, '1'],
        [id, '2'],
        [marker.body.id, '1'],
      ]);
      const [deleted] = await until(deletes, 1);
      assert.equal(deleted.headers['x-medplum-deleted-resource'], `Observation/${id}`);
      assert.equal((JSON.parse(deleted.body) as Observation).valueQuantity?.value, 2);
      assert.equal(receivedAt(deletes).length, 1);
    });

    test('an endpoint down for a while receives every notification once, in order, when it is back', async () => {
      const url = endpoint();
      await subscribe(restHook(url, 'Observation?code=3333-3'));
      const refusedBefore = listener.refused;
      listener.failNext(4);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await server.fhir<Observation>('POST', '/Observation', { body: observation('3333-3', i) })).body.id as string);
      const got = await until(url, 5);
      assert.ok(listener.refused - refusedBefore >= 4, 'the endpoint was down');
      assert.deepEqual(got.map((r) => (JSON.parse(r.body) as Observation).id), ids);
    });

    test("another project's writes never reach the subscriber", async () => {
      const url = endpoint();
      await subscribe(restHook(url, 'Observation?code=4444-4'));
      const other = await createProject(server, 'Elsewhere');
      const stranger = await createMember(server, other.projectId);
      assert.equal((await server.fhir('POST', '/Observation', { token: stranger.token, body: observation('4444-4') })).status, 201);
      const mine = await server.fhir<Observation>('POST', '/Observation', { body: observation('4444-4') });
      const got = await until(url, 1);
      // Written first: had it matched, it would have been delivered first.
      assert.deepEqual(got.map((r) => (JSON.parse(r.body) as Observation).id), [mine.body.id]);
    });

    test("a notification carries only what the author may read now: the membership's access policy, set after the Subscription, applies", async () => {
      const url = endpoint();
      const project = await createProject(server, 'Policies');
      const author = await createMember(server, project.projectId);
      const sub = await server.fhir<Subscription>('POST', '/Subscription', { token: author.token, body: restHook(url, 'Observation?code=9191-9') });
      assert.equal(sub.status, 201, sub.text);
      const policy = await server.fhir('POST', '/AccessPolicy', {
        token: project.adminToken,
        body: { resourceType: 'AccessPolicy', name: 'lab reader', resource: [{ resourceType: 'Observation', criteria: 'Observation?category=laboratory' }, { resourceType: 'Subscription' }] },
      });
      assert.equal(policy.status, 201, policy.text);
      const path = `/admin/projects/${project.projectId}/members/${author.membershipId}`;
      const membership = await server.request('GET', path, { token: project.adminToken });
      assert.equal(membership.status, 200, membership.text);
      const updated = await server.request('POST', path, { token: project.adminToken, body: { ...membership.body, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } } });
      assert.equal(updated.status, 200, updated.text);
      const lab = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' }] };
      const hidden = await server.fhir<Observation>('POST', '/Observation', { token: project.adminToken, body: observation('9191-9') });
      const visible = await server.fhir<Observation>('POST', '/Observation', { token: project.adminToken, body: { ...observation('9191-9'), category: [lab] } });
      const got = await until(url, 1);
      // Written first: had it been sent, it would have arrived first.
      assert.deepEqual(got.map((r) => (JSON.parse(r.body) as Observation).id), [visible.body.id]);
      const status = await server.fhir('GET', `/Subscription/${sub.body.id}/$status`, { token: author.token });
      const states = (status.body.parameter as Array<{ name: string; part?: Array<{ name: string; valueCode?: string; valueReference?: { reference: string } }> }>)
        .filter((p) => p.name === 'notification')
        .map((p) => [p.part?.find((x) => x.name === 'focus')?.valueReference?.reference, p.part?.find((x) => x.name === 'state')?.valueCode]);
      assert.deepEqual(states, [
        [`Observation/${visible.body.id}/_history/1`, 'sent'],
        [`Observation/${hidden.body.id}/_history/1`, 'skipped'],
      ]);
    });

    test('delivery failing past the attempts sets the Subscription to error with the reason; $status lists the attempts', async () => {
      const url = endpoint();
      const sub = await subscribe(restHook(url, 'Observation?code=5555-5', { extension: [{ url: MAX_ATTEMPTS, valueInteger: 2 }] }));
      listener.failNext(1000, 500);
      try {
        await server.fhir('POST', '/Observation', { body: observation('5555-5') });
        let current = sub;
        for (let i = 0; i < 500 && current.status !== 'error'; i++) {
          await new Promise((r) => setTimeout(r, 20));
          current = (await server.fhir<Subscription>('GET', `/Subscription/${sub.id}`)).body;
        }
        assert.equal(current.status, 'error');
        assert.match(current.error ?? '', /^Delivery failed after 2 attempts: endpoint answered 500/);
      } finally {
        listener.failNext(0);
      }
      const status = await server.fhir('GET', `/Subscription/${sub.id}/$status`);
      assert.equal(status.status, 200, status.text);
      const params = status.body.parameter as Array<{ name: string; valueCode?: string; part?: Array<{ name: string; valueCode?: string; valueInteger?: number }> }>;
      assert.equal(params.find((p) => p.name === 'status')?.valueCode, 'error');
      const notification = params.find((p) => p.name === 'notification');
      assert.equal(notification?.part?.find((p) => p.name === 'state')?.valueCode, 'failed');
      assert.equal(notification?.part?.find((p) => p.name === 'attempts')?.valueInteger, 2);
    });

    test('a websocket client binds with its token and is pinged on each matching write', async () => {
      const sub = await subscribe({ resourceType: 'Subscription', status: 'requested', reason: 'ws', criteria: 'Observation?code=6666-6', channel: { type: 'websocket' } });
      const metadata = await server.fhir('GET', '/metadata', { token: null });
      const wsUrl = (metadata.body.rest[0].extension as Array<{ url: string; valueUri: string }>).find((e) => e.url === 'http://hl7.org/fhir/StructureDefinition/capabilitystatement-websocket')?.valueUri;
      assert.equal(wsUrl, `${server.baseUrl.replace(/^http/, 'ws')}/ws/subscriptions-r4`);
      const socket = new WebSocket(`${wsUrl}?access_token=${server.memberToken}`);
      const messages: string[] = [];
      let heard: () => void = () => undefined;
      socket.on('message', (data) => {
        messages.push((data as Buffer).toString());
        heard();
      });
      const next = async (count: number) => {
        while (messages.length < count) await new Promise<void>((r) => (heard = r));
      };
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      try {
        socket.send(`bind ${sub.id}`);
        await next(1);
        assert.equal(messages[0], `bound ${sub.id}`);
        await server.fhir('POST', '/Observation', { body: observation('0000-0') });
        await server.fhir('POST', '/Observation', { body: observation('6666-6') });
        await next(2);
        await server.fhir('POST', '/Observation', { body: observation('6666-6') });
        await next(3);
        assert.deepEqual(messages, [`bound ${sub.id}`, `ping ${sub.id}`, `ping ${sub.id}`]);
      } finally {
        socket.close();
      }
    });

    test('a websocket without a token cannot bind', async () => {
      const sub = await subscribe({ resourceType: 'Subscription', status: 'requested', reason: 'ws', criteria: 'Observation', channel: { type: 'websocket' } });
      const socket = new WebSocket(`${server.baseUrl.replace(/^http/, 'ws')}/ws/subscriptions-r4`);
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      const message = new Promise<string>((resolve) => socket.once('message', (d) => resolve((d as Buffer).toString())));
      socket.send(`bind ${sub.id}`);
      assert.match(await message, new RegExp(`^error ${sub.id}: a valid access token is required`));
      socket.close();
    });

    test('a Subscription Lattice cannot honour is refused with a 400 saying why', async () => {
      const cases: Array<[Subscription, string]> = [
        [{ ...restHook(listener.url, 'Observation'), channel: { type: 'email', endpoint: 'mailto:a@example.org' } }, "Subscription channel type 'email' is not supported (supported: rest-hook, websocket)"],
        [restHook(listener.url, 'Observation?not-a-parameter=1'), 'Invalid Subscription criteria: '],
        [restHook(listener.url, 'Observation?code=1&_sort=date'), "Invalid Subscription criteria: result parameter '_sort' selects nothing and is not supported"],
        [restHook(listener.url, 'Observation?subject.name=Eve'), "Invalid Subscription criteria: chained parameter 'subject.name' is not supported"],
        [restHook(listener.url, 'NotAType?x=1'), "Invalid Subscription criteria: 'NotAType' is not a resource type"],
        [{ ...restHook(listener.url, 'Observation'), channel: { type: 'rest-hook', endpoint: listener.url, payload: 'application/fhir+xml' } }, "Subscription payload 'application/fhir+xml' is not supported"],
      ];
      for (const [body, text] of cases) {
        const res = await server.fhir('POST', '/Subscription', { body });
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.ok(ooText(res.body)?.startsWith(text), `${ooText(res.body)} should start with ${text}`);
      }
    });

    test('at most 100 active Subscriptions of a project on one type: the 101st is 400 too-costly', async () => {
      const ws = (i: number): Subscription => ({ resourceType: 'Subscription', status: 'requested', reason: `bound ${i}`, criteria: 'Basic', channel: { type: 'websocket' } });
      const bundle = { resourceType: 'Bundle', type: 'transaction', entry: Array.from({ length: 100 }, (_, i) => ({ request: { method: 'POST', url: 'Subscription' }, resource: ws(i) })) };
      assert.equal((await server.fhir('POST', '', { body: bundle })).status, 200);
      const res = await server.fhir('POST', '/Subscription', { body: ws(100) });
      assert.equal(res.status, 400);
      assert.equal(res.body.issue[0].code, 'too-costly');
      assert.equal(ooText(res.body), 'A project may have at most 100 active Subscriptions on Basic');
      // One that is off costs no write anything: it is stored.
      assert.equal((await server.fhir('POST', '/Subscription', { body: { ...ws(101), status: 'off' } })).status, 201);
    });

    test('the CapabilityStatement lists the channels', async () => {
      const metadata = await server.fhir('GET', '/metadata', { token: null });
      const entry = (metadata.body.rest[0].resource as Array<{ type: string; documentation?: string; operation?: Array<{ name: string }> }>).find((r) => r.type === 'Subscription');
      assert.equal(entry?.documentation, 'Channels: rest-hook, websocket');
      assert.ok(entry?.operation?.some((o) => o.name === 'status'));
    });
  });

  describe(`subscriptions without LATTICE_SUBSCRIPTION_ALLOW_PRIVATE (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(async () => server?.stop());

    test('an endpoint on 127.0.0.1 (or a name for it) is refused', async () => {
      for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::1]:9/hook', 'http://169.254.169.254/latest']) {
        const res = await server.fhir('POST', '/Subscription', { body: restHook(url, 'Observation') });
        assert.equal(res.status, 400, url);
        assert.match(ooText(res.body) ?? '', /is on a loopback, private or link-local address; set LATTICE_SUBSCRIPTION_ALLOW_PRIVATE=true to allow it$/);
      }
    });
  });
}
