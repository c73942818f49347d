import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { OperationOutcome } from '@medplum/fhirtypes';
import { after, before, describe, test } from 'node:test';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * A body over `LATTICE_BODY_LIMIT` always gets its 413 OperationOutcome (docs/errors.md#body-limit),
 * also when the client sends the whole body before it reads the answer, as most clients do.
 * Before, the server answered and closed the connection without reading the rest: the client,
 * still sending, often saw a broken pipe or a reset instead of the 413.
 */
const LIMIT = 256 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

interface Outcome {
  status?: number;
  body?: string;
  error?: string;
  /** The server closed the connection before the whole body was sent. */
  cut?: boolean;
}

/**
 * POSTs `total` bytes in 64 KiB chunks and only then takes the answer, as a client that sends
 * its whole body before it reads does: a connection reset while it sends is a failure even
 * when an early answer already arrived (a reset discards what the client had not read).
 */
function send(server: TestServer, total: number, chunked: boolean, close: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const url = new URL(`${server.fhirUrl}/Patient`);
    const headers: Record<string, string | number> = { 'content-type': 'application/fhir+json', authorization: `Bearer ${server.memberToken}` };
    if (!chunked) headers['content-length'] = total;
    if (close) headers.connection = 'close';
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers });
    let error: string | undefined;
    let sent = false;
    let cut = false;
    let answer: Outcome | undefined;
    // "Answers at all" (not a timing check): a client left waiting, neither answered nor reset, fails too.
    const hung = setTimeout(() => {
      error ??= 'no answer within 60 s';
      req.destroy();
      settle();
    }, 60_000);
    const settle = () => {
      if (error !== undefined || (sent && answer)) clearTimeout(hung);
      if (error !== undefined) resolve({ error, cut });
      else if (sent && answer) resolve({ ...answer, cut });
      else if (sent && cut) resolve({ error: 'closed without an answer', cut });
    };
    req.on('error', (err: NodeJS.ErrnoException) => {
      error ??= err.code ?? err.message;
      settle();
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        answer = { status: res.statusCode, body };
        settle();
      });
    });
    const write = async () => {
      let written = 0;
      req.once('close', () => (cut = written < total));
      for (let at = 0; at < total && error === undefined && !cut; at += CHUNK.length) {
        const piece = CHUNK.subarray(0, Math.min(CHUNK.length, total - at));
        const more = req.write(piece);
        written += piece.length;
        if (!more) await new Promise<void>((r) => req.once('drain', r).once('close', r));
        // A client on a real network sends slower than loopback: the server answers long before the end.
        await new Promise((r) => setTimeout(r, 1));
      }
      if (error === undefined && !cut) req.end();
      sent = true;
      settle();
    };
    void write();
  });
}

for (const driver of drivers) {
  describe(`body over the limit (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver, { env: { LATTICE_BODY_LIMIT: String(LIMIT) } });
    });
    after(() => server.stop());

    for (const [chunked, close] of [[false, false], [true, false], [false, true], [true, true]]) {
      const kind = `${chunked ? 'chunked' : 'Content-Length'}${close ? ', Connection: close' : ''}`;
      test(`a body 3× the limit sent in chunks (${kind}) → 413, never a broken connection`, async () => {
        for (let round = 0; round < 4; round++) {
          const res = await send(server, LIMIT * 3, chunked, close);
          assert.equal(res.error, undefined, `round ${round}: the connection failed (${res.error}) instead of a 413`);
          assert.equal(res.cut, false, `round ${round}: the server closed the connection before the body was sent`);
          assert.equal(res.status, 413, `round ${round}: ${res.body}`);
          const body = JSON.parse(res.body ?? '') as OperationOutcome;
          assert.equal(body.resourceType, 'OperationOutcome');
          assert.equal(body.issue?.[0].code, 'too-costly');
          assert.equal(ooText(body), 'Request body too large');
        }
        // The server is fine afterwards.
        assert.equal((await server.fhir('GET', '/Patient?_count=1')).status, 200);
      });
    }

    test('a body beyond 4× the limit: the 413, or the connection closed once it is sent — never a client left waiting', async () => {
      for (const chunked of [false, true]) {
        const res = await send(server, LIMIT * 32, chunked, false);
        if (res.error === undefined) assert.equal(res.status, 413, res.body);
        else assert.match(res.error, /^(ECONNRESET|EPIPE|closed without an answer)$/, `chunked ${chunked}`);
      }
      assert.equal((await server.fhir('GET', '/Patient?_count=1')).status, 200);
    });
  });
}
