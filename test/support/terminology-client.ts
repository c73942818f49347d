import assert from 'node:assert/strict';
import type { CodeSystem, OperationOutcome, Parameters, ParametersParameter, ValueSet } from '@medplum/fhirtypes';
import type { ApiResponse, TestServer } from '../harness.js';

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
