import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MedplumClient } from '@medplum/core';
import type { Binary, DocumentReference } from '@medplum/fhirtypes';
import { Client } from 'fhir-kit-client';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * Binary content through real clients (issue 34, docs/rest.md#binary): MedplumClient's
 * createBinary, createAttachment and download through the URL it is given, and fhir-kit-client's
 * raw requests.
 */
for (const driver of drivers) {
  describe(`Binary through clients (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    const medplum = () => {
      const client = new MedplumClient({ baseUrl: `${server.baseUrl}/`, fetch, storage: undefined });
      client.setAccessToken(server.memberToken as string);
      return client;
    };

    test('MedplumClient: createBinary stores the content; download through Binary.url gives it back', async () => {
      const client = medplum();
      const binary = await client.createBinary({ data: 'medplum text content', contentType: 'text/plain', filename: 'note.txt' });
      assert.equal(binary.resourceType, 'Binary');
      assert.equal(binary.contentType, 'text/plain');
      assert.ok(binary.id);
      const url = (binary as Binary & { url?: string }).url;
      assert.ok(url, 'Binary.url (a signed URL) is given');
      const blob = await client.download(url);
      assert.equal(await blob.text(), 'medplum text content');
      // Through the FHIR read too, as MedplumClient's download of `Binary/<id>` does.
      const again = await client.download(`${server.fhirUrl}/Binary/${binary.id}`);
      assert.equal(await again.text(), 'medplum text content');
    });

    test('MedplumClient: createAttachment gives an Attachment whose url downloads; a DocumentReference holding it reads back with a working URL', async () => {
      const client = medplum();
      const bytes = new Uint8Array([37, 80, 68, 70, 45, 49, 46, 55, 10, 0, 255]);
      const attachment = await client.createAttachment({ data: bytes, contentType: 'application/pdf', filename: 'referral.pdf' });
      assert.equal(attachment.contentType, 'application/pdf');
      assert.equal(attachment.title, 'referral.pdf');
      assert.ok(attachment.url);
      assert.deepEqual(new Uint8Array(await (await client.download(attachment.url)).arrayBuffer()), bytes);

      const doc = await client.createResource<DocumentReference>({ resourceType: 'DocumentReference', status: 'current', content: [{ attachment }] });
      const read = await client.readResource('DocumentReference', doc.id);
      const url = read.content[0].attachment.url as string;
      const plain = await fetch(url); // no Authorization header, as an <img src> would
      assert.equal(plain.status, 200);
      assert.deepEqual(new Uint8Array(await plain.arrayBuffer()), bytes);
      assert.equal(plain.headers.get('content-disposition'), `inline; filename="referral.pdf"; filename*=UTF-8''referral.pdf`);
    });

    test('fhir-kit-client: a raw create, the Binary read as FHIR JSON with data, and the content read raw', async () => {
      const client = new Client({ baseUrl: server.fhirUrl, bearerToken: server.memberToken as string });
      const file = JSON.stringify({ hello: 'world' });
      const created = (await client.request('Binary', { method: 'POST', options: { headers: { 'content-type': 'application/json' } }, body: file })) as unknown as Binary;
      assert.equal(created.resourceType, 'Binary');
      assert.equal(created.contentType, 'application/json');
      const read = (await client.read({ resourceType: 'Binary', id: created.id as string })) as unknown as Binary;
      assert.equal(Buffer.from(read.data as string, 'base64').toString(), file);
      const content = await client.request(`Binary/${created.id}`, { options: { headers: { accept: '*/*' } } });
      assert.deepEqual({ ...content }, { hello: 'world' });
      const updated = (await client.request(`Binary/${created.id}`, { method: 'PUT', options: { headers: { 'content-type': 'application/json' } }, body: '{"hello":"again"}' })) as unknown as Binary;
      assert.equal(updated.meta?.versionId, '2');
    });
  });
}
