import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Generations } from './generations.js';

/** Asks `keys` in turn `rounds` times (setting what is missing); answers the hits of the last round. */
function cycle(map: Generations<number>, keys: number, rounds: number): number {
  let hits = 0;
  for (let round = 0; round < rounds; round++) {
    hits = 0;
    for (let k = 0; k < keys; k++) {
      if (map.get(`k${k}`) === k) hits++;
      else map.set(`k${k}`, k);
    }
  }
  return hits;
}

test('Generations: a set asked in turn that fits one generation is answered whole from memory', () => {
  const map = new Generations<number>(100);
  assert.equal(cycle(map, 100, 3), 100);
  assert.equal(map.size, 100);
});

test('Generations: a set asked in turn larger than one generation is still partly answered, and never more than twice the limit is held', () => {
  const map = new Generations<number>(100);
  const hits = cycle(map, 150, 4);
  assert.ok(hits > 0 && hits < 150, `hits ${hits}`);
  assert.ok(map.size <= 200, `size ${map.size}`);
  assert.equal(cycle(new Generations<number>(100), 250, 4), 0, 'beyond two generations nothing is held');
});

test('Generations: an entry read from the old generation survives the next turn; one not read is dropped', () => {
  const map = new Generations<number>(2);
  map.set('a', 1);
  map.set('b', 2);
  map.set('c', 3); // turn: a, b old
  assert.equal(map.get('a'), 1); // back to the young generation (c, a): full
  map.set('d', 4); // turn: c, a old; b dropped
  assert.equal(map.get('b'), undefined);
  assert.equal(map.get('a'), 1);
  assert.equal(map.get('c'), 3);
});

test('Generations: the byte limit turns the young generation, set replaces and delete removes in both', () => {
  const map = new Generations<string>(100, 10, (v) => v.length);
  map.set('a', 'x'.repeat(6));
  map.set('b', 'y'.repeat(6)); // 12 bytes: the next new key turns
  map.set('c', 'z');
  map.set('d', 'w'); // c fits (1 byte young): no turn
  assert.equal(map.size, 4);
  map.set('a', 'v'); // replaces the old a
  assert.equal(map.get('a'), 'v');
  map.delete('b');
  map.delete('a');
  assert.equal(map.get('b'), undefined);
  assert.equal(map.get('a'), undefined);
  assert.equal(map.size, 2);
});
