import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonProblems, MAX_JSON_PROBLEMS } from './json-syntax.js';

const found = (text: string) => jsonProblems(text).map((p) => `${p.line}:${p.column} ${p.text}`);

describe('jsonProblems', () => {
  it('finds nothing in valid JSON', () => {
    assert.deepEqual(found('{"a": [1, -2.5e3, true, false, null, "x\\"\\u00e9"], "b": {}, "c": []}'), []);
    assert.deepEqual(found('  "text"  '), []);
  });

  it('reports every syntax problem with its line and column, reading on after each', () => {
    const text = ['{', '  "resourceType": "Patient",', '  "active": tru,', '  "gender" "male",', '  "birthDate": 01,', '  "name": [{"family": "Doe",}]', '}'].join('\n');
    assert.deepEqual(found(text), [
      "3:13 Unexpected 'tru': expected a string, number, object, array, true, false or null",
      "4:12 Expected ':' after property name 'gender'",
      "5:16 Invalid number '01': numbers must not have leading zeros",
      "6:28 Trailing comma before '}'",
    ]);
  });

  it('reports duplicate property names, per object', () => {
    assert.deepEqual(found('{"a": 1, "b": {"a": 2}, "a": 3, "c": [{"x": 1, "x": 2}]}'), [
      "1:25 Duplicate property 'a': a JSON object must not repeat a name",
      "1:48 Duplicate property 'x': a JSON object must not repeat a name",
    ]);
    // Names are compared decoded: "\u0061" is "a".
    assert.deepEqual(found('{"a": 1, "\\u0061": 2}'), ["1:10 Duplicate property 'a': a JSON object must not repeat a name"]);
  });

  it('reports unclosed containers, missing commas, stray content and unterminated strings', () => {
    assert.deepEqual(found('{"a": [1 2'), ["1:10 Expected ',' or ']' after an array item", "1:7 Unclosed array: ']' missing", "1:1 Unclosed object: '}' missing"]);
    assert.deepEqual(found('{"a": 1} x'), ["1:10 Unexpected 'x': expected a string, number, object, array, true, false or null", '1:10 Unexpected content after the end of the JSON value']);
    assert.deepEqual(found('{"a": "b\n, "c": 1}'), ['1:7 Unterminated string']);
    assert.deepEqual(found(''), ['1:1 Unexpected end of content: a value is missing']);
  });

  it('stops after a bounded number of problems and a bounded nesting', () => {
    const many = jsonProblems(`[${'01,'.repeat(500)}1]`);
    assert.equal(many.length, MAX_JSON_PROBLEMS);
    assert.match(many.at(-1)?.text ?? '', /^Too many problems/);
    // Deep nesting the bracket counter of json-body.ts does not see (after an unterminated string).
    const deep = jsonProblems(`["x\n${'['.repeat(100_000)}`);
    assert.ok(deep.some((p) => p.text.startsWith('Content is nested too deeply')));
  });
});
