import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OperationOutcome, ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { FhirError } from '../../../fhir/outcome.js';
import { filterOp, invalidValueSet, regexError } from '../filters.js';
import { BindValues } from '../../../storage/bind-values.js';
import { filterPredicate, type FindConcepts } from './sql-filters.js';
import { MESSAGE_ID, TX_ISSUE_TYPE } from '../../issues.js';
import type { CodeSystemInfo } from '../../types.js';

/**
 * Only the branches of `filterPredicate` that need no concept look-up are tested here (they are
 * pure SQL building); `is-a`, `descendent-of`, `child-of`, … resolve the filter's code in the
 * database and are covered end to end, and by the equivalence test of the two providers. The
 * look-up given here throws on any use to prove that.
 */
const noDatabase: FindConcepts = () => {
  throw new Error('the concept look-up was used');
};

const URL = 'http://example.org/cs';
const PATH = 'ValueSet.compose.include[0].filter[0]';

function info(caseSensitive: boolean): CodeSystemInfo {
  return {
    key: 7,
    resourceId: 'cs1',
    projectId: undefined,
    url: URL,
    version: undefined,
    lastUpdated: '2024-01-01T00:00:00Z',
    content: 'complete',
    caseSensitive,
    hierarchyMeaning: undefined,
    supplements: undefined,
    language: undefined,
    name: undefined,
    title: undefined,
    propertyDefs: [],
    conceptCount: 0,
  };
}

async function predicate(f: ValueSetComposeIncludeFilter, caseSensitive = true): Promise<{ sql: string; values: unknown[] }> {
  const p = new BindValues();
  const sql = await filterPredicate(noDatabase, info(caseSensitive), f, p, PATH);
  return { sql, values: p.values };
}

function filter(property: string, op: string, value: string | undefined): ValueSetComposeIncludeFilter {
  return { property, op: op as ValueSetComposeIncludeFilter['op'], value } as ValueSetComposeIncludeFilter;
}

/** The outcome of a `vs-invalid` error at the filter. */
function vsInvalid(text: string, id?: string, expression: string | null = PATH): OperationOutcome {
  return {
    resourceType: 'OperationOutcome',
    issue: [
      {
        ...(id ? { extension: [{ url: MESSAGE_ID, valueString: id }] } : {}),
        severity: 'error',
        code: 'invalid',
        details: { coding: [{ system: TX_ISSUE_TYPE, code: 'vs-invalid' }], text },
        ...(expression ? { expression: [expression] } : {}),
      },
    ],
  };
}

async function rejects400(promise: Promise<unknown>, outcome: OperationOutcome): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof FhirError);
    assert.equal(err.status, 400);
    assert.deepEqual(err.outcome, outcome);
    return true;
  });
}

const notSupported = (property: string, op: string) => `The filter with property = ${property}, op = ${op} is not supported for the system ${URL}`;
const property = (condition: string) =>
  `EXISTS (SELECT 1 FROM tx_concept_property q WHERE q.cs_key = c.cs_key AND q.concept = c.id AND q.code = $1${condition})`;

describe('BindValues', () => {
  test('numbers placeholders from $1 and keeps the values in order', () => {
    const p = new BindValues();
    assert.equal(p.add('a'), '$1');
    assert.equal(p.add(['b', 'c']), '$2');
    assert.equal(p.add(3), '$3');
    assert.deepEqual(p.values, ['a', ['b', 'c'], 3]);
  });
});

describe('filterOp', () => {
  test('op when present', () => {
    assert.equal(filterOp({ property: 'concept', op: 'is-a', value: 'x' }), 'is-a');
  });

  test('the R5 operator extension on _op when op is absent', () => {
    const f = {
      property: 'concept',
      value: 'x',
      _op: { extension: [{ url: 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.compose.include.filter.op', valueCode: 'child-of' }] },
    } as unknown as ValueSetComposeIncludeFilter;
    assert.equal(filterOp(f), 'child-of');
  });

  test('op wins over the extension', () => {
    const f = {
      property: 'concept',
      op: 'is-a',
      value: 'x',
      _op: { extension: [{ url: 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.compose.include.filter.op', valueCode: 'child-of' }] },
    } as unknown as ValueSetComposeIncludeFilter;
    assert.equal(filterOp(f), 'is-a');
  });

  test('undefined without op or with another extension', () => {
    assert.equal(filterOp({ property: 'concept', value: 'x' } as ValueSetComposeIncludeFilter), undefined);
    const f = { property: 'concept', value: 'x', _op: { extension: [{ url: 'http://example.org/other', valueCode: 'child-of' }] } } as unknown as ValueSetComposeIncludeFilter;
    assert.equal(filterOp(f), undefined);
  });
});

describe('filterPredicate: concept / code', () => {
  test('= compares the code, case-sensitively', async () => {
    assert.deepEqual(await predicate(filter('concept', '=', 'AbC')), { sql: 'c.code = $1', values: ['AbC'] });
  });

  test('= in a case-insensitive system compares lower case', async () => {
    assert.deepEqual(await predicate(filter('concept', '=', 'AbC'), false), { sql: 'c.code_lower = $1', values: ['abc'] });
  });

  test('property `code` is the same as `concept`', async () => {
    assert.deepEqual(await predicate(filter('code', '=', 'x')), { sql: 'c.code = $1', values: ['x'] });
  });

  test('in: a comma-separated list, trimmed, empty entries dropped', async () => {
    assert.deepEqual(await predicate(filter('concept', 'in', ' a, B ,,c,')), { sql: 'c.code = ANY($1::text[])', values: [['a', 'B', 'c']] });
  });

  test('in, case-insensitive: the list in lower case', async () => {
    assert.deepEqual(await predicate(filter('concept', 'in', 'A,b'), false), { sql: 'c.code_lower = ANY($1::text[])', values: [['a', 'b']] });
  });

  test('not-in negates the list', async () => {
    assert.deepEqual(await predicate(filter('concept', 'not-in', 'a,b')), { sql: 'NOT (c.code = ANY($1::text[]))', values: [['a', 'b']] });
  });

  test('regex is anchored to the whole code', async () => {
    assert.deepEqual(await predicate(filter('concept', 'regex', '[A-Z]+|x')), { sql: 'c.code ~ $1', values: ['^(?:[A-Z]+|x)$'] });
  });

  test('regex is applied to the code as written even in a case-insensitive system', async () => {
    assert.deepEqual(await predicate(filter('concept', 'regex', 'A.*'), false), { sql: 'c.code ~ $1', values: ['^(?:A.*)$'] });
  });

  test('exists true / false is constant', async () => {
    assert.deepEqual(await predicate(filter('concept', 'exists', 'true')), { sql: 'true', values: [] });
    assert.deepEqual(await predicate(filter('concept', 'exists', 'false')), { sql: 'false', values: [] });
  });

  test('exists with a value other than true/false is refused', async () => {
    await rejects400(predicate(filter('concept', 'exists', 'yes')), vsInvalid(notSupported('concept', 'exists yes')));
  });
});

describe('filterPredicate: regex limits', () => {
  test('a pattern of 500 characters is accepted', async () => {
    const pattern = 'a'.repeat(500);
    assert.deepEqual(await predicate(filter('concept', 'regex', pattern)), { sql: 'c.code ~ $1', values: [`^(?:${pattern})$`] });
  });

  test('a pattern of 501 characters is refused, quoting its first 40 characters', async () => {
    const pattern = 'b'.repeat(501);
    await rejects400(predicate(filter('concept', 'regex', pattern)), vsInvalid(`The regular expression '${'b'.repeat(40)}…' is not valid or too complex`));
  });

  test('the limit applies to display and property regexes too', async () => {
    const pattern = 'c'.repeat(501);
    const text = `The regular expression '${'c'.repeat(40)}…' is not valid or too complex`;
    await rejects400(predicate(filter('display', 'regex', pattern)), vsInvalid(text));
    await rejects400(predicate(filter('STATUS', 'regex', pattern)), vsInvalid(text));
  });
});

describe('filterPredicate: missing value', () => {
  const text = (p: string, op: string) => `The system ${URL} filter with property = ${p}, op = ${op} has no value`;

  test('no value → 400 with the tx message id', async () => {
    await rejects400(predicate(filter('concept', 'is-a', undefined)), vsInvalid(text('concept', 'is-a'), 'UNABLE_TO_HANDLE_SYSTEM_FILTER_WITH_NO_VALUE'));
  });

  test('an empty value is no value', async () => {
    await rejects400(predicate(filter('display', '=', '')), vsInvalid(text('display', '='), 'UNABLE_TO_HANDLE_SYSTEM_FILTER_WITH_NO_VALUE'));
  });
});

describe('filterPredicate: inactive, notSelectable, display', () => {
  test('inactive = true / false', async () => {
    assert.deepEqual(await predicate(filter('inactive', '=', 'true')), { sql: 'c.inactive = true', values: [] });
    assert.deepEqual(await predicate(filter('inactive', '=', 'false')), { sql: 'c.inactive = false', values: [] });
  });

  test('inactive exists is constant', async () => {
    assert.deepEqual(await predicate(filter('inactive', 'exists', 'true')), { sql: 'true', values: [] });
    assert.deepEqual(await predicate(filter('inactive', 'exists', 'false')), { sql: 'false', values: [] });
  });

  test('inactive with a value other than true/false is refused', async () => {
    await rejects400(predicate(filter('inactive', '=', 'maybe')), vsInvalid(notSupported('inactive', '= maybe')));
  });

  test('notSelectable and abstract = compare the value the concept states for the property', async () => {
    const stated = 'EXISTS (SELECT 1 FROM tx_concept_property q WHERE q.cs_key = c.cs_key AND q.concept = c.id AND q.code = $1 AND q.value = $2)';
    assert.deepEqual(await predicate(filter('notSelectable', '=', 'true')), { sql: stated, values: ['notSelectable', 'true'] });
    assert.deepEqual(await predicate(filter('abstract', '=', 'false')), { sql: stated, values: ['abstract', 'false'] });
  });

  test('display =, regex, in, not-in (never lower-cased)', async () => {
    assert.deepEqual(await predicate(filter('display', '=', 'Heart Attack'), false), { sql: 'c.display = $1', values: ['Heart Attack'] });
    assert.deepEqual(await predicate(filter('display', 'regex', 'Heart.*')), { sql: 'c.display ~ $1', values: ['^(?:Heart.*)$'] });
    assert.deepEqual(await predicate(filter('display', 'in', 'A, B'), false), { sql: 'c.display = ANY($1::text[])', values: [['A', 'B']] });
    assert.deepEqual(await predicate(filter('display', 'not-in', 'A,B')), { sql: 'NOT (c.display = ANY($1::text[]))', values: [['A', 'B']] });
  });

  test('display exists', async () => {
    assert.deepEqual(await predicate(filter('display', 'exists', 'true')), { sql: 'c.display IS NOT NULL', values: [] });
    assert.deepEqual(await predicate(filter('display', 'exists', 'false')), { sql: 'c.display IS NULL', values: [] });
  });
});

describe('filterPredicate: other properties (stored property values)', () => {
  test('=', async () => {
    assert.deepEqual(await predicate(filter('STATUS', '=', 'ACTIVE')), { sql: property(' AND q.value = $2'), values: ['STATUS', 'ACTIVE'] });
  });

  test('in and not-in', async () => {
    assert.deepEqual(await predicate(filter('CLASS', 'in', 'A, B')), { sql: property(' AND q.value = ANY($2::text[])'), values: ['CLASS', ['A', 'B']] });
    assert.deepEqual(await predicate(filter('CLASS', 'not-in', 'A,B')), { sql: `NOT ${property(' AND q.value = ANY($2::text[])')}`, values: ['CLASS', ['A', 'B']] });
  });

  test('regex, anchored', async () => {
    assert.deepEqual(await predicate(filter('CLASS', 'regex', 'CHEM|HEM')), { sql: property(' AND q.value ~ $2'), values: ['CLASS', '^(?:CHEM|HEM)$'] });
  });

  test('exists true / false', async () => {
    assert.deepEqual(await predicate(filter('CLASS', 'exists', 'true')), { sql: property(''), values: ['CLASS'] });
    assert.deepEqual(await predicate(filter('CLASS', 'exists', 'false')), { sql: `NOT ${property('')}`, values: ['CLASS'] });
  });

  test('inactive with an operator of its own falls back to the stored property', async () => {
    assert.deepEqual(await predicate(filter('inactive', 'in', 'true')), { sql: property(' AND q.value = ANY($2::text[])'), values: ['inactive', ['true']] });
  });

  test('an unsupported operator is refused', async () => {
    await rejects400(predicate(filter('CLASS', 'generalizes', 'x')), vsInvalid(notSupported('CLASS', 'generalizes')));
    await rejects400(predicate(filter('display', 'generalizes', 'x')), vsInvalid(notSupported('display', 'generalizes')));
  });
});

describe('invalidValueSet', () => {
  test('a 400 FhirError with one vs-invalid issue at the expression', () => {
    const err = invalidValueSet('broken', 'ValueSet.compose', 'SOME_ID');
    assert.ok(err instanceof FhirError);
    assert.equal(err.status, 400);
    assert.equal(err.message, 'broken');
    assert.deepEqual(err.outcome, vsInvalid('broken', 'SOME_ID', 'ValueSet.compose'));
  });

  test('without a message id there is no extension', () => {
    assert.deepEqual(invalidValueSet('broken', 'ValueSet.compose').outcome, vsInvalid('broken', undefined, 'ValueSet.compose'));
  });
});

describe('regexError', () => {
  test('PostgreSQL’s invalid-regular-expression error (2201B) becomes a 400', () => {
    const pgError = Object.assign(new Error('invalid regular expression: parentheses () not balanced'), { code: '2201B' });
    const err = regexError(pgError);
    assert.ok(err instanceof FhirError);
    assert.equal(err.status, 400);
    assert.deepEqual(
      err.outcome,
      vsInvalid("The regular expression 'invalid regular expression: parentheses () not balanced' is not valid or too complex", undefined, null),
    );
  });

  test('any other error is not mapped', () => {
    assert.equal(regexError(Object.assign(new Error('syntax error'), { code: '42601' })), undefined);
    assert.equal(regexError(new Error('no code')), undefined);
    assert.equal(regexError(undefined), undefined);
    assert.equal(regexError('2201B'), undefined);
  });
});

describe('regex anchoring', () => {
  for (const pattern of ['a)|(b', '(a', 'a)', '[(]a)']) {
    test(`an unbalanced pattern ${pattern} is refused (it could escape the whole-value anchor)`, async () => {
      await assert.rejects(filterPredicate(noDatabase, info(true), { property: 'concept', op: 'regex', value: pattern }, new BindValues(), PATH), (err: unknown) => (err as { status?: number }).status === 400);
    });
  }
  for (const pattern of ['(a|b)c', '[()]x', 'a\\)b', '[]a]', '[^]a]']) {
    test(`a balanced pattern ${pattern} stays anchored`, async () => {
      const p = new BindValues();
      await filterPredicate(noDatabase, info(true), { property: 'concept', op: 'regex', value: pattern }, p, PATH);
      assert.equal(p.values[0], `^(?:${pattern})$`);
    });
  }
});
