import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SearchCache, type KeptAnswer } from './search-cache.js';

const answer = (json: string): KeptAnswer => ({ json, total: 0, count: 10, offset: 0 });

test('nothing is kept before changes are heard, nor after they stop being heard', () => {
  const cache = new SearchCache(true, 1_000_000);
  cache.set('a', answer('[]'), cache.generation());
  assert.equal(cache.get('a'), undefined);
  cache.listening(true);
  cache.set('a', answer('[]'), cache.generation());
  assert.deepEqual(cache.get('a'), answer('[]'));
  cache.listening(false); // the listening connection was lost
  assert.equal(cache.get('a'), undefined);
  cache.set('a', answer('[]'), cache.generation());
  assert.equal(cache.size.entries, 0);
});

test('an answer read while a change was heard is not kept; a change drops every answer', () => {
  const cache = new SearchCache(false, 1_000_000);
  cache.listening(true);
  const readAt = cache.generation();
  cache.set('kept', answer('[1]'), readAt);
  const during = cache.generation();
  cache.clear(); // a commit was heard while `late` was read
  cache.set('late', answer('[2]'), during);
  assert.equal(cache.get('late'), undefined);
  assert.equal(cache.get('kept'), undefined);
  assert.deepEqual(cache.size, { entries: 0, chars: 0 });
});

test('bounded by entries and by characters, least recently used dropped first; an answer over an eighth of the budget is not kept', () => {
  const byEntries = new SearchCache(false, 1_000_000, 2);
  byEntries.listening(true);
  byEntries.set('a', answer('[1]'), byEntries.generation());
  byEntries.set('b', answer('[2]'), byEntries.generation());
  byEntries.get('a'); // b is now the least recently used
  byEntries.set('c', answer('[3]'), byEntries.generation());
  assert.deepEqual([byEntries.get('a')?.json, byEntries.get('b')?.json, byEntries.get('c')?.json], ['[1]', undefined, '[3]']);

  const byChars = new SearchCache(false, 8 * 1000);
  byChars.listening(true);
  const text = `[${'x'.repeat(500)}]`;
  // Each about 700 characters with its key and overhead: 20 of them do not fit in 8,000.
  for (const key of 'abcdefghijklmnopqrst') byChars.set(key, answer(text), byChars.generation());
  assert.ok(byChars.size.chars <= 8 * 1000, `${byChars.size.chars} characters kept`);
  assert.equal(byChars.get('a'), undefined);
  assert.equal(byChars.get('t')?.json, text);
  byChars.set('big', answer(`[${'x'.repeat(1000)}]`), byChars.generation());
  assert.equal(byChars.get('big'), undefined);
  // The same key again replaces its answer without counting it twice.
  const before = byChars.size.chars;
  byChars.set('t', answer(text), byChars.generation());
  assert.equal(byChars.size.chars, before);
});
