import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
import { startServer } from './harness.js';
test('exp', async () => {
  const server = await startServer('pg');
  const mb = (n: number) => (n / 1048576).toFixed(0);
  const base = randomBytes(1048576);
  const show = (l: string) => { const m = process.memoryUsage(); console.log(l, 'rss', mb(m.rss), 'ab', mb(m.arrayBuffers), 'heap', mb(m.heapUsed), 'ext', mb(m.external)); };
  const blocks = 100;
  const id = await new Promise<string>((resolve, reject) => {
    const req = request(`${server.fhirUrl}/Binary`, { method: 'POST', headers: { authorization: `Bearer ${server.memberToken}`, 'content-type': 'application/octet-stream', 'content-length': String(blocks * 1048576) } }, (res) => { let t = ''; res.on('data', (c) => (t += c)); res.on('end', () => resolve(JSON.parse(t).id)); });
    req.on('error', reject);
    let i = 0;
    const pump = () => { while (i < blocks) { i++; if (!req.write(Buffer.from(base))) return void req.once('drain', pump); } req.end(); };
    pump();
  });
  show('uploaded');
  const timer = setInterval(() => show('tick'), 500);
  await new Promise<void>((resolve) => request(`${server.fhirUrl}/Binary/${id}`, { headers: { authorization: `Bearer ${server.memberToken}` } }, (res) => { let n = 0; res.on('data', (c: Buffer) => { n += c.length; }); res.on('end', () => { console.log('got', n); resolve(); }); }).end());
  clearInterval(timer);
  show('end');
  gc(); show('after gc');
  await server.stop();
});
