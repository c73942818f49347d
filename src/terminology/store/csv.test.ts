import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { csvRecords, csvRows } from './csv.js';

async function rows(chunks: string[]): Promise<string[][]> {
  const out: string[][] = [];
  for await (const r of csvRows((async function* () {
    for (const c of chunks) yield Buffer.from(c, 'utf8');
  })())) out.push(r);
  return out;
}

describe('csvRows', () => {
  test('quoted and plain fields, doubled quotes, commas and line breaks inside quotes, CRLF', async () => {
    assert.deepEqual(await rows(['\uFEFF"a","b,c"\r\n1,"say ""hi""","two\nlines"\r\n,,\n']), [
      ['a', 'b,c'],
      ['1', 'say "hi"', 'two\nlines'],
      ['', '', ''],
    ]);
  });

  test('the same rows however the input is cut into chunks', async () => {
    const text = '"x","y ""q"" z"\r\n"1,2",3\n"last"';
    const whole = await rows([text]);
    assert.deepEqual(whole, [['x', 'y "q" z'], ['1,2', '3'], ['last']]);
    for (let cut = 1; cut < text.length; cut++) assert.deepEqual(await rows([text.slice(0, cut), text.slice(cut)]), whole, `cut at ${cut}`);
  });

  test('a multi-byte character split between chunks', async () => {
    const bytes = Buffer.from('"Glukóza",ü\n', 'utf8');
    const out: string[][] = [];
    for await (const r of csvRows((async function* () {
      yield bytes.subarray(0, 8);
      yield bytes.subarray(8);
    })())) out.push(r);
    assert.deepEqual(out, [['Glukóza', 'ü']]);
  });

  test('an unclosed quote is an error', async () => {
    await assert.rejects(rows(['"a,b\n']), /a quoted field is not closed/);
  });

  test('records are keyed by the header', async () => {
    const out: Record<string, string>[] = [];
    for await (const r of csvRecords((async function* () {
      yield '"LOINC_NUM","STATUS"\n"1-8","ACTIVE"\n"2-6"\n';
    })())) out.push(r);
    assert.deepEqual(out, [{ LOINC_NUM: '1-8', STATUS: 'ACTIVE' }, { LOINC_NUM: '2-6', STATUS: '' }]);
  });
});
