import { internalError, methodNotAllowed } from '../fhir/outcome.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import { OutputViolation, formatOutput } from './format-output.js';
import { UNDECLARED_INPUTS, type Operation, type OperationTarget, type OperationValues } from '../core/operation.js';
import { paramsByName, paramsOf } from './params.js';
import { inputFromParameters } from './parameters-input.js';
import { buildInput } from './parse-input.js';
import { parseQueryInput } from './query-input.js';
import { isObject } from '../fhir/json.js';
import { PreparedAnswer } from '../core/reusable-answer.js';

/** The input of a POST: a Parameters body, or (for `resourceInput`, docs/operations.md#post) a bare resource. */
function postedInput(operation: Operation, body: unknown): OperationValues {
  const { definition, resourceInput } = operation;
  if (resourceInput !== undefined && isObject(body) && typeof body.resourceType === 'string' && body.resourceType !== 'Parameters') {
    return buildInput(paramsOf(definition.parameter, 'in'), [{ name: resourceInput, resource: body }]);
  }
  return inputFromParameters(definition, body, resourceInput);
}

/**
 * Runs one invocation of a resolved operation: reads the input from the query (GET) or the
 * Parameters body (POST), validates it against the definition, calls the handler and formats
 * its output. Client mistakes are FhirErrors (4xx); output that breaks the definition is a
 * server bug: logged, answered with the generic 500.
 */
export async function invokeOperation(req: FhirRequest, operation: Operation, target: OperationTarget): Promise<FhirResult> {
  const { definition } = operation;
  const { method } = req; // a HEAD arrives as GET
  // The same request line (and POST body) asked again: its kept answer, before the input is even read.
  const kept = (method === 'GET' || method === 'POST') && operation.keptAnswers ? await operation.keptAnswers.find(req, target) : undefined;
  if (kept && 'answer' in kept) return preparedResult(kept.answer);
  let input: OperationValues;
  const fromQuery = method === 'GET' || (method === 'POST' && req.body === undefined && operation.emptyPost === true);
  if (fromQuery) input = buildInput(paramsOf(definition.parameter, 'in'), parseQueryInput(definition, req.query));
  else if (method === 'POST') input = postedInput(operation, req.body);
  else {
    const allowed = definition.affectsState === true ? ['POST'] : ['GET', 'HEAD', 'POST'];
    throw methodNotAllowed(req.method, allowed, `Operation $${definition.code} cannot be invoked with ${req.method}`);
  }
  if (operation.reportUndeclared === true) input[UNDECLARED_INPUTS] = undeclaredNames(operation, fromQuery ? req.query : [], fromQuery ? undefined : req.body);
  if (operation.respond) return operation.respond(req, input, target);
  const output: unknown = await operation.handler(req.ctx, input, target);
  try {
    // A kept answer (src/core/reusable-answer.ts) is already formatted and serialised.
    if (output instanceof PreparedAnswer) {
      if (output.reusable) kept?.keep(output);
      return preparedResult(output);
    }
    return { status: 200, body: formatOutput(definition, output) };
  } catch (err) {
    if (!(err instanceof OutputViolation)) throw err;
    req.ctx.log.error({ err, operation: definition.id, target }, `Operation $${definition.code} returned output that violates its definition`);
    throw internalError();
  }
}

/**
 * The result of a kept answer: its text, and a fresh copy of its body for whoever reads one (a
 * batch entry). A class: its getter lives on the prototype, not on every result.
 */
class PreparedResult implements FhirResult {
  status = 200;
  readonly json: string;
  constructor(private readonly answer: PreparedAnswer) {
    this.json = answer.json;
  }
  get body(): unknown {
    return this.answer.body();
  }
}

function preparedResult(answer: PreparedAnswer): FhirResult {
  return new PreparedResult(answer);
}

/** Names of supplied inputs the definition does not declare (Operation.reportUndeclared), once each, in order. */
function undeclaredNames(operation: Operation, query: Array<[string, string]>, body: unknown): string[] {
  const declared = paramsByName(paramsOf(operation.definition.parameter, 'in'));
  const names = query.filter(([name]) => !name.startsWith('_')).map(([name]) => name);
  if (isObject(body) && body.resourceType === 'Parameters' && Array.isArray(body.parameter)) {
    for (const entry of body.parameter as unknown[]) if (isObject(entry) && typeof entry.name === 'string') names.push(entry.name);
  }
  return [...new Set(names.filter((name) => !declared.has(name)))];
}
