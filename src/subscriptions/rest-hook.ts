import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isPrivateAddress, PRIVATE_REFUSED } from './address-guard.js';

/** One rest-hook POST, as the sender builds it. */
export interface RestHookRequest {
  endpoint: string;
  headers: Record<string, string>;
  body: string;
}

/** Most bytes of an endpoint's answer read (it is only logged). */
const MAX_ANSWER = 4096;

/**
 * POSTs a notification (docs/rest.md#subscriptions). Resolves on a 2xx answer; rejects with
 * what went wrong otherwise — another status (a redirect is not followed: it is a failure),
 * no connection, no answer within `timeoutMs`, or an address the guard refuses: the guard runs
 * on the addresses the connection actually uses (DNS is asked once, by this lookup), so a name
 * that resolved to a public address at create cannot be pointed at a private one later.
 */
export function postNotification(request: RestHookRequest, options: { allowPrivate: boolean; timeoutMs: number }): Promise<void> {
  const url = new URL(request.endpoint);
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const allowed = options.allowPrivate ? addresses : addresses.filter((a) => !isPrivateAddress(a.address));
      if (allowed.length === 0) return callback(new Error(`endpoint ${url.host} ${PRIVATE_REFUSED}`), '', 0);
      if (lookupOptions.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0].address, allowed[0].family);
    });
  };
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivate && /^[\d.]+$|:/.test(literal) && isPrivateAddress(literal)) {
    return Promise.reject(new Error(`endpoint ${url.host} ${PRIVATE_REFUSED}`));
  }
  const body = Buffer.from(request.body, 'utf8');
  const send = url.protocol === 'https:' ? https.request : http.request;
  return new Promise<void>((resolve, reject) => {
    const req = send(url, {
      method: 'POST',
      headers: { ...request.headers, 'Content-Length': String(body.length) },
      lookup,
      timeout: options.timeoutMs,
      agent: false,
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on('response', (res) => {
      let answer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (answer.length < MAX_ANSWER) answer += chunk.slice(0, MAX_ANSWER - answer.length);
      });
      res.on('error', () => undefined);
      res.on('end', () => {
        clearTimeout(timer);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve();
        else if (status >= 300 && status < 400) reject(new Error(`endpoint answered ${status} (redirects are not followed)`));
        else reject(new Error(`endpoint answered ${status}${answer ? `: ${answer.slice(0, 200)}` : ''}`));
      });
    });
    req.end(body);
  });
}
