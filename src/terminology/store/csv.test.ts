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

  test('records are keyed by the header; a row with fewer fields than the header is refused naming the file and line', async () => {
    const out: Record<string, string>[] = [];
    const records = async (text: string) => {
      for await (const r of csvRecords((async function* () {
        yield text;
      })(), { name: 'Loinc.csv' })) out.push(r);
    };
    await records('"LOINC_NUM","STATUS"\r\n"1-8","ACTIVE"\r\n"2-6","ACTIVE"\r\n');
    assert.deepEqual(out, [{ LOINC_NUM: '1-8', STATUS: 'ACTIVE' }, { LOINC_NUM: '2-6', STATUS: 'ACTIVE' }]);
    await assert.rejects(records('"LOINC_NUM","STATUS"\r\n"1-8","ACTIVE"\r\n"two\nlines","ACTIVE"\r\n"2-6"\r\n'), {
      message: 'Loinc.csv line 5: 1 fields where the header has 2 (is the file cut short?)',
    });
  });

  test('NUL characters, bytes that are not UTF-8, a row past the bound, a file cut inside quotes: refused naming the line', async () => {
    const read = async (chunks: Buffer[], maxLine?: number) => {
      for await (const _ of csvRows((async function* () {
        yield* chunks;
      })(), { name: 'Part.csv', maxLine }));
    };
    await assert.rejects(read([Buffer.from('a,b\n1,2\n3,\u00004\n')]), { message: 'Part.csv line 3: the line holds a NUL character' });
    await assert.rejects(read([Buffer.from('a,b\n1,2\n'), Buffer.from([0x33, 0x2c, 0xff, 0x0a])]), { message: 'Part.csv line 3: the line is not valid UTF-8' });
    await assert.rejects(read([Buffer.from('a,b\n1,2\n'), Buffer.from('x'.repeat(600)), Buffer.from('y'.repeat(600))], 1000), {
      message: 'Part.csv line 3: the line is longer than 1000 bytes (LATTICE_TX_IMPORT_MAX_LINE)',
    });
    await assert.rejects(read([Buffer.from('a,b\n1,"2\n3,4\n')]), { message: 'Part.csv line 2: a quoted field is not closed at the end of the file (is the file cut short?)' });
  });
});
