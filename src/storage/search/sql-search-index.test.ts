import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Resource } from '@medplum/fhirtypes';
import { FhirError } from '../../fhir/outcome.js';
import { createSearchIndex } from './sql-search-index.js';

/**
 * A write never stores what it cannot index (docs/rest.md#search-index-upgrades): the rows are
 * computed before the write's statement, and when that throws the write is refused with a 400
 * that says so — before, the error escaped as a 500 (issue 32 finding 4). Content nested deeper
 * than the extraction walks (20,000 extensions; REST bodies stop at 256 levels, but stored data
 * from elsewhere need not) makes the extraction throw whatever the UCUM code does.
 */
test('a resource whose index rows cannot be computed → 400 processing naming it, not a stack overflow', () => {
  const deep = `${'{"url":"http://example.org/n","extension":['.repeat(20_000)}{"url":"http://example.org/leaf","valueString":"x"}${']}'.repeat(20_000)}`;
  const patient = JSON.parse(`{"resourceType":"Patient","id":"deep","extension":[${deep}]}`) as Resource;
  const index = createSearchIndex();
  for (const compute of [() => index.extract(patient), () => index.indexCtes(patient, [], { replace: false }), () => index.manyIndexCtes([patient], [])]) {
    assert.throws(compute, (err: unknown) => {
      assert.ok(err instanceof FhirError, String(err));
      assert.equal(err.status, 400);
      assert.equal(err.outcome.issue[0].code, 'processing');
      assert.equal(err.outcome.issue[0].details?.text, 'Patient cannot be indexed for search (Maximum call stack size exceeded); it was not stored');
      return true;
    });
  }
  assert.ok(index.extract({ resourceType: 'Patient', id: 'plain', name: [{ family: 'Plain' }] }).string.length > 0);
});
