import type { Extension, Subscription } from '@medplum/fhirtypes';
import { badRequest } from '../fhir/outcome.js';
import { parseCriteria, type Criteria } from './criteria.js';

/** The write interactions a Subscription is notified of. */
export type WriteInteraction = 'create' | 'update' | 'delete';

/** The channels Lattice delivers (docs/rest.md#subscriptions); others are refused. */
export const CHANNEL_TYPES = ['rest-hook', 'websocket'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/** Medplum's extensions (medplum.com/docs/subscriptions/subscription-extensions), matched without scheme and `www.`. */
export const INTERACTION_EXTENSION = 'medplum.com/fhir/StructureDefinition/subscription-supported-interaction';
export const SECRET_EXTENSION = 'medplum.com/fhir/StructureDefinition/subscription-secret';
export const MAX_ATTEMPTS_EXTENSION = 'medplum.com/fhir/StructureDefinition/subscription-max-attempts';

/** Payload MIME types of a rest-hook: the resource as FHIR JSON. Without `payload` the body is empty. */
const JSON_PAYLOADS = ['application/fhir+json', 'application/json'];

/** What delivery needs of one Subscription resource. */
export interface SubscriptionSpec extends Criteria {
  channel: ChannelType;
  endpoint?: string;
  /** `channel.header` values as name/value pairs. */
  headers: Array<[string, string]>;
  /** True: the body is the resource (`payload` is a JSON MIME type); false: empty body. */
  withResource: boolean;
  interactions: WriteInteraction[];
  secret?: string;
  /** The Subscription's own limit on attempts (Medplum's extension), at most the server's. */
  maxAttempts?: number;
}

const at = (path: string) => `Subscription.${path}`;

/**
 * Reads and checks a Subscription resource (docs/rest.md#subscriptions). Anything Lattice could
 * not honour is a 400 naming the element: an unsupported channel type or payload, a malformed
 * header or endpoint, an unknown interaction, criteria it cannot evaluate.
 */
export function readSpec(subscription: Subscription): SubscriptionSpec {
  const criteria = parseCriteria(subscription.criteria);
  const channel = subscription.channel as Subscription['channel'] | undefined;
  const type = channel?.type as string | undefined;
  if (!CHANNEL_TYPES.includes(type as ChannelType)) {
    throw badRequest(`Subscription channel type '${type ?? ''}' is not supported (supported: ${CHANNEL_TYPES.join(', ')})`, at('channel.type'));
  }
  const spec: SubscriptionSpec = { ...criteria, channel: type as ChannelType, headers: [], withResource: false, interactions: interactionsOf(subscription.extension) };
  if (spec.channel === 'rest-hook') {
    spec.endpoint = endpointOf(channel?.endpoint);
    spec.headers = (channel?.header ?? []).map(headerOf);
    const payload = channel?.payload;
    if (payload !== undefined) {
      const mime = payload.split(';')[0].trim().toLowerCase();
      if (!JSON_PAYLOADS.includes(mime)) throw badRequest(`Subscription payload '${payload}' is not supported (supported: ${JSON_PAYLOADS.join(', ')}, or none for an empty body)`, at('channel.payload'));
      spec.withResource = true;
    }
  }
  const secret = extensionOf(subscription.extension, SECRET_EXTENSION);
  if (secret) {
    if (typeof secret.valueString !== 'string' || secret.valueString === '') throw badRequest('The subscription-secret extension needs a valueString', at('extension'));
    spec.secret = secret.valueString;
  }
  const attempts = extensionOf(subscription.extension, MAX_ATTEMPTS_EXTENSION);
  if (attempts) {
    const n = attempts.valueInteger;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw badRequest('The subscription-max-attempts extension needs a positive valueInteger', at('extension'));
    spec.maxAttempts = n;
  }
  return spec;
}

/** Medplum's interaction extensions (each a valueCode); none = create and update, as in Medplum. */
function interactionsOf(extensions: Extension[] | undefined): WriteInteraction[] {
  const codes = (extensions ?? []).filter((e) => sameExtension(e.url, INTERACTION_EXTENSION)).map((e) => e.valueCode);
  if (codes.length === 0) return ['create', 'update'];
  for (const code of codes) {
    if (code !== 'create' && code !== 'update' && code !== 'delete') {
      throw badRequest(`Subscription interaction '${code ?? ''}' is not supported (supported: create, update, delete)`, at('extension'));
    }
  }
  return [...new Set(codes as WriteInteraction[])];
}

function endpointOf(endpoint: string | undefined): string {
  if (!endpoint) throw badRequest('A rest-hook Subscription needs channel.endpoint', at('channel.endpoint'));
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw badRequest(`Subscription endpoint '${endpoint}' is not an absolute URL`, at('channel.endpoint'));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest(`Subscription endpoint '${endpoint}' must be http or https`, at('channel.endpoint'));
  if (url.username || url.password) throw badRequest('Subscription endpoint must not carry credentials: use channel.header', at('channel.endpoint'));
  return url.href;
}

/** `Name: value` (R4 Subscription.channel.header). */
function headerOf(header: string): [string, string] {
  const m = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([^\r\n]*)$/.exec(header);
  if (!m) throw badRequest(`Subscription header '${header}' is not 'Name: value'`, at('channel.header'));
  return [m[1], m[2].trim()];
}

function extensionOf(extensions: Extension[] | undefined, url: string): Extension | undefined {
  return (extensions ?? []).find((e) => sameExtension(e.url, url));
}

function sameExtension(given: string | undefined, url: string): boolean {
  return given?.replace(/^https?:\/\//, '').replace(/^www\./, '') === url;
}
