import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UCUM_MAX_DEPTH, UCUM_MAX_LENGTH, checkUcum, toCanonical, ucumBeyondBounds, ucumConversion } from './ucum.js';

/** UCUM expressions and canonical units (docs/terminology.md#ucum). */

const canonical = (code: string) => {
  const checked = checkUcum(code);
  assert.ok(checked.valid, code);
  return checked.canonical;
};

describe('checkUcum', () => {
  test('canonical units: base units in order m s g rad K C cd, joined by dots', () => {
    assert.equal(canonical('mL'), 'm3');
    assert.equal(canonical('kg'), 'g');
    assert.equal(canonical('mg/dL'), 'm-3.g');
    assert.equal(canonical('/min'), 's-1');
    assert.equal(canonical('kg.m/s2'), 'm.s-2.g');
    assert.equal(canonical('mmol/L'), 'm-3');
    assert.equal(canonical('%'), '1');
    assert.equal(canonical('{rbc}'), '1');
    assert.equal(canonical('[IU]/L'), undefined);
  });

  test('annotations: any printable ASCII but braces, standing for 1', () => {
    assert.equal(canonical('mg/dL{milligram per deciliter}'), 'm-3.g');
    assert.deepEqual(checkUcum('g{a{b}'), { valid: false, reason: 'The annotation at character 2 holds a character an annotation may not hold' });
    assert.deepEqual(checkUcum('g}'), { valid: false, reason: "Unexpected '}' at character 2" });
    assert.deepEqual(checkUcum('g{é}'), { valid: false, reason: 'The annotation at character 2 holds a character an annotation may not hold' });
  });

  test('the library corrections do not count: a unit name, surrounding spaces', () => {
    assert.equal(checkUcum('gram').valid, false);
    assert.equal(checkUcum('kg ').valid, false);
    assert.deepEqual(checkUcum(''), { valid: false, reason: 'No unit given' });
  });
});

describe('toCanonical', () => {
  test('5.4 mg and 5400 ug are the same quantity of g', () => {
    const a = toCanonical(5.4, 'mg');
    const b = toCanonical(5400, 'ug');
    assert.equal(a?.unit, 'g');
    assert.equal(b?.unit, 'g');
    assert.ok(a && b && Math.abs(a.value - b.value) < 1e-15, JSON.stringify([a, b]));
    assert.ok(a && Math.abs(a.value - 0.0054) < 1e-15);
  });

  test('temperatures convert with their offset', () => {
    assert.deepEqual(toCanonical(37, 'Cel'), { value: 310.15, unit: 'K' });
    const f = toCanonical(98.6, '[degF]');
    assert.equal(f?.unit, 'K');
    assert.ok(f && Math.abs(f.value - 310.15) < 1e-9);
  });

  test('annotated units convert as the unit they annotate', () => {
    assert.deepEqual(toCanonical(2, 'L{total volume}'), { value: 0.002, unit: 'm3' });
  });

  test('no canonical form: invalid, arbitrary and logarithmic units', () => {
    assert.equal(toCanonical(1, 'kgXX'), undefined);
    assert.equal(toCanonical(1, '[IU]'), undefined);
    assert.equal(toCanonical(7, '[pH]'), undefined);
    assert.equal(toCanonical(1, 'dB'), undefined);
  });
});

describe('bounds on an expression (issue 32 findings 4 and 6)', () => {
  const deep = (n: number) => `${'('.repeat(n)}mg${')'.repeat(n)}`;

  test('nesting deeper than UCUM_MAX_DEPTH is refused unparsed, never a stack overflow', () => {
    assert.equal(canonical(deep(UCUM_MAX_DEPTH)), 'g');
    assert.deepEqual(checkUcum(deep(UCUM_MAX_DEPTH + 1)), { valid: false, reason: `The unit expression nests parentheses ${UCUM_MAX_DEPTH + 1} deep (at most ${UCUM_MAX_DEPTH})`, tooCostly: true });
    for (const n of [UCUM_MAX_DEPTH + 1, 5_000, 20_000]) {
      assert.equal(checkUcum(deep(n)).valid, false);
      // The search index's conversion: none (the quantity is indexed without its canonical row).
      assert.equal(ucumConversion(deep(n)), undefined);
      assert.equal(toCanonical(1, deep(n)), undefined);
    }
  });

  test('an expression longer than UCUM_MAX_LENGTH is refused unparsed; annotations do not count as nesting', () => {
    const long = `${'m.'.repeat(UCUM_MAX_LENGTH / 2)}m`;
    assert.deepEqual(checkUcum(long), { valid: false, reason: `The unit expression is ${long.length} characters long (at most ${UCUM_MAX_LENGTH})`, tooCostly: true });
    assert.equal(ucumBeyondBounds(`mg{${'('.repeat(40)}}`), undefined);
  });
});
