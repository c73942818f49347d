import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { badRequest } from '../fhir/outcome.js';

/**
 * The server-side request forgery guard of rest-hook endpoints (docs/rest.md#subscriptions):
 * addresses a Subscription must not make the server call unless
 * `LATTICE_SUBSCRIPTION_ALLOW_PRIVATE` is set — loopback, private, link-local (cloud metadata),
 * carrier-grade NAT, unspecified, multicast and their IPv6 counterparts.
 */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 127],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) PRIVATE.addSubnet(net, prefix, 'ipv6');

/** True for an address endpoints may not reach (IPv4-mapped IPv6 is judged as IPv4). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1], 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address: never trusted
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export const PRIVATE_REFUSED = 'is on a loopback, private or link-local address; set LATTICE_SUBSCRIPTION_ALLOW_PRIVATE=true to allow it';

/**
 * At Subscription create/update: refuses an endpoint whose host is, or resolves to, an address
 * `isPrivateAddress` names. A host that does not resolve now is accepted (it is checked again
 * at every delivery, where the connection is refused the same way).
 */
export async function checkEndpoint(endpoint: string): Promise<void> {
  const host = new URL(endpoint).hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return;
    }
  }
  if (addresses.some(isPrivateAddress)) throw badRequest(`Subscription endpoint ${endpoint} ${PRIVATE_REFUSED}`, 'Subscription.channel.endpoint');
}
