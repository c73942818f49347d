import { MemoryGraph, type MemoryConcept } from './src/terminology/providers/snomed/ecl/memory-graph.js';
import { evaluateEcl, clearEclCache } from './src/terminology/providers/snomed/ecl/evaluate.js';
import { seeded } from './src/terminology/providers/snomed/ecl/toy-edition.js';
const rnd = seeded(3);
const N = 300000;
const concepts: MemoryConcept[] = [{ sctid: '138875005' }, { sctid: '404684003', parents: ['138875005'] }, { sctid: '123037004', parents: ['138875005'] }, { sctid: '363698007', parents: ['138875005'] }, { sctid: '116676008', parents: ['138875005'] }];
const structs: string[] = [];
for (let i = 0; i < 40000; i++) { const s = String(1000000 + i); concepts.push({ sctid: s, parents: [structs.length && rnd() < 0.9 ? structs[Math.floor(rnd() * structs.length)]! : '123037004'] }); structs.push(s); }
const finds: string[] = [];
for (let i = 0; i < N; i++) { const s = String(2000000 + i); const ps = [finds.length && rnd() < 0.95 ? finds[Math.floor(rnd() * finds.length)]! : '404684003']; if (finds.length > 10 && rnd() < 0.3) ps.push(finds[Math.floor(rnd() * finds.length)]!);
  concepts.push({ sctid: s, parents: [...new Set(ps)], attributes: [[1, '363698007', structs[Math.floor(rnd() * structs.length)]!], [1, '116676008', structs[Math.floor(rnd() * structs.length)]!], [2, '363698007', structs[Math.floor(rnd() * structs.length)]!]] }); finds.push(s); }
let t = performance.now();
const g = new MemoryGraph({ concepts });
console.log('build', Math.round(performance.now() - t));
t = performance.now(); g.descendants(g.resolve('404684003')!); g.descendants(g.resolve('123037004')!); console.log('closure warm', Math.round(performance.now() - t));
for (const e of ['<< 404684003 : { 363698007 = << 123037004, 116676008 = * }']) {
  clearEclCache(g); await evaluateEcl(g, e); clearEclCache(g);
  t = performance.now(); const r = await evaluateEcl(g, e); const cold = performance.now() - t;
  t = performance.now(); await evaluateEcl(g, e); const warm = performance.now() - t;
  console.log(e, r.length, 'cold', cold.toFixed(1), 'warm', warm.toFixed(2));
}
