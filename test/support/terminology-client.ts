import assert from 'node:assert/strict';
import type { CodeSystem, OperationOutcome, Parameters, ParametersParameter, ValueSet, ValueSetExpansionContains } from '@medplum/fhirtypes';
import { flatContains, type ApiResponse, type TestServer } from '../harness.js';

/** A terminology operation's answer: Parameters, a ValueSet with its expansion, or an OperationOutcome. */
export type TxAnswer = Omit<Parameters, 'resourceType'> & { resourceType: string; expansion?: ValueSet['expansion']; issue?: OperationOutcome['issue'] };

/** The calls the terminology rule tests make, against `server()` (read when called: the server starts in `before`). */
export function terminologyCalls(server: () => TestServer) {
  const post = (path: string, parameter: ParametersParameter[]): Promise<ApiResponse<TxAnswer>> =>
    server().fhir('POST', path, { body: { resourceType: 'Parameters', parameter } });
  return {
    /** PUT a CodeSystem or ValueSet by its id; asserts it was stored. */
    put: async (r: CodeSystem | ValueSet): Promise<void> => {
      const res = await server().fhir('PUT', `/${r.resourceType}/${r.id}`, { body: r });
      assert.ok(res.status === 200 || res.status === 201, `${r.resourceType}/${r.id}: ${res.status} ${res.text}`);
    },
    post,
    expand: (v: ValueSet, more: ParametersParameter[] = []) => post('/ValueSet/$expand', [{ name: 'valueSet', resource: v }, ...more]),
    expandUrl: (url: string, more: ParametersParameter[] = []) => post('/ValueSet/$expand', [{ name: 'url', valueUri: url }, ...more]),
    validate: (url: string, system: string, code: string, more: ParametersParameter[] = []) =>
      post('/ValueSet/$validate-code', [{ name: 'url', valueUri: url }, { name: 'system', valueUri: system }, { name: 'code', valueCode: code }, ...more]),
  };
}

/** The value (or resource) of the output parameter `name` of a Parameters answer. */
export function out(body: Pick<Parameters, 'parameter'> | undefined, name: string): unknown {
  const p: ParametersParameter | undefined = body?.parameter?.find((x) => x.name === name);
  return p && (p.resource ?? Object.entries(p).find(([k]) => k.startsWith('value'))?.[1]);
}

/** The codes of an expansion's `contains`, nested ones included (depth first, in order). */
export function codes(contains: ValueSetExpansionContains[] | undefined): string[] {
  return flatContains(contains).map((c) => c.code as string);
}
