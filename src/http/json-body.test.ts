import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FhirError } from '../fhir/outcome.js';
import { parseJsonBody } from './json-body.js';

/** The texts of the issues `parseJsonBody` refuses `text` with (empty when it is accepted). */
function refusal(text: string): string[] {
  try {
    parseJsonBody(text);
    return [];
  } catch (err) {
    assert.ok(err instanceof FhirError, String(err));
    assert.equal(err.status, 400);
    return err.outcome.issue.map((i) => i.details?.text ?? '');
  }
}

describe('parseJsonBody: repeated property names', () => {
  test('a name repeated at any depth is refused with its place', () => {
    assert.deepEqual(refusal('{"a":1,"a":2}'), ["Line 1, column 8: Duplicate property 'a': a JSON object must not repeat a name"]);
    assert.deepEqual(refusal('{"p":[{"x":1},{"x":1,"y":{"z":1,\n  "z" :2}}]}'), ["Line 2, column 3: Duplicate property 'z': a JSON object must not repeat a name"]);
    assert.deepEqual(refusal('{"__proto__":{},"__proto__":{}}'), ["Line 1, column 17: Duplicate property '__proto__': a JSON object must not repeat a name"]);
    assert.deepEqual(refusal('{"q\\"":1,"q\\u0022":2}'), ['Line 1, column 10: Duplicate property \'q"\': a JSON object must not repeat a name']);
    assert.deepEqual(refusal('{"":1,"" :2}'), ["Line 1, column 7: Duplicate property '': a JSON object must not repeat a name"]);
  });

  test('the same name in different objects, and colons inside strings, are not repetitions', () => {
    const text = '{"resourceType":"Parameters","parameter":[{"name":"a:b","valueString":"\\":\\" \\"x\\":"},{"name":"a:b","valueString":"{\\"name\\":1}"}],"":"",\n "t" \t\r\n : [ {"name" : ":"} ]}';
    assert.deepEqual(refusal(text), []);
    assert.deepEqual(parseJsonBody(text), JSON.parse(text));
    assert.deepEqual(parseJsonBody('[{"a":1},{"a":1},[{"a":[{"a":null}]}]]'), [{ a: 1 }, { a: 1 }, [{ a: [{ a: null }] }]]);
    assert.equal(parseJsonBody(' "a" '), 'a');
  });
});
