import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import pino from 'pino';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { redactUrl } from '../src/http/server.js';

/** Secrets never reach the log (docs/errors.md#logs): set-password links, OAuth codes and tokens. */
describe('request log redaction', () => {
  test('redactUrl keeps the route and drops the secrets', () => {
    assert.equal(redactUrl('/setpassword/abc/s3cr3t'), '/setpassword/abc/[redacted]');
    assert.equal(redactUrl('/setpassword/abc/s3cr3t?x=1'), '/setpassword/abc/[redacted]?x=1');
    assert.equal(redactUrl('/oauth2/authorize?client_id=c&code=abc&state=s'), '/oauth2/authorize?client_id=c&code=[redacted]&state=s');
    assert.equal(redactUrl('/x?access_token=t&refresh_token=r&password=p'), '/x?access_token=[redacted]&refresh_token=[redacted]&password=[redacted]');
    assert.equal(redactUrl('/fhir/R4/Patient?name=code'), '/fhir/R4/Patient?name=code');
    // A terminology code is what an operator needs to see; an OAuth code outside /fhir/ is not.
    assert.equal(
      redactUrl('/fhir/R4/CodeSystem/$lookup?system=http://loinc.org&code=1234-5&access_token=t'),
      '/fhir/R4/CodeSystem/$lookup?system=http://loinc.org&code=1234-5&access_token=[redacted]',
    );
    assert.equal(redactUrl('/fhir/R4/Observation?code=http://loinc.org|8867-4'), '/fhir/R4/Observation?code=http://loinc.org|8867-4');
    assert.equal(redactUrl('/auth/callback?code=secret-oauth-code'), '/auth/callback?code=[redacted]');
  });

  test('a served request is logged once, without the set-password secret', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const config = loadConfig({ PORT: '0', LATTICE_DATA_DIR: 'memory://', LOG_LEVEL: 'info', LATTICE_ADMIN_PASSWORD: 'admin-password-123', LATTICE_BASE_TERMINOLOGY: 'lazy' });
    const app = await createApp(config, { log: pino({ level: 'info' }, sink) });
    try {
      const res = await app.http.inject({ method: 'GET', url: '/setpassword/some-id/SECRETVALUE123' });
      assert.equal(res.statusCode, 404);
      await app.http.inject({ method: 'GET', url: '/oauth2/authorize?response_type=code&client_id=x&code_challenge=SECRETCHALLENGE&code=SECRETCODE' });
    } finally {
      await app.close();
    }
    const log = lines.join('');
    assert.doesNotMatch(log, /SECRETVALUE123|SECRETCODE/);
    const completed = lines.map((l) => JSON.parse(l) as { msg: string; req?: { url: string } }).filter((l) => l.msg === 'request completed');
    assert.deepEqual(completed.map((l) => l.req?.url)[0], '/setpassword/some-id/[redacted]');
  });
});
