import { randomBytes } from 'node:crypto';
import type { ClientApplication } from '@medplum/fhirtypes';
import { badRequest } from '../fhir/outcome.js';
import type { AppRoute } from '../core/app-route.js';
import type { AuthState } from './auth-state.js';
import { isRegisteredRedirect } from './client-auth.js';
import { findLaunch } from './launch-context.js';
import { PKCE_METHODS } from './pkce.js';


/** The authorize page's answer to a public client without `code_challenge`. */
export const PUBLIC_NEEDS_PKCE = 'A public client must use PKCE (code_challenge)';
/**
 * `GET /oauth2/authorize` (the discovery documents' authorization_endpoint): a small HTML
 * sign-in page for the browser authorization-code flow. The page itself only calls the JSON
 * endpoints (/auth/login, /auth/profile, /auth/patient for a `launch/patient` sign-in) and then
 * navigates to `redirect_uri?code=…&state=…` (docs/auth.md#browser-sign-in-page).
 *
 * The redirect_uri must be registered on the ClientApplication named by client_id — otherwise
 * anyone could have a victim's code delivered to their own site — so a request with an
 * unknown client or an unregistered redirect_uri gets an OperationOutcome (400), not a page.
 */
export function authorizeRoute(state: AuthState): AppRoute {
  return {
    method: 'GET',
    url: '/oauth2/authorize',
    auth: false,
    async handler(req) {
      const q = req.query;
      if (q.response_type !== 'code') throw badRequest('Unsupported response_type (only code)', 'response_type');
      const client =
        typeof q.client_id === 'string' && /^[A-Za-z0-9\-.]{1,64}$/.test(q.client_id)
          ? await state.env.system.tryRead<ClientApplication>('ClientApplication', q.client_id)
          : undefined;
      if (!client) throw badRequest('Unknown client_id', 'client_id');
      if (!q.redirect_uri || !isRegisteredRedirect(client, q.redirect_uri)) throw badRequest('redirect_uri is not registered for this client', 'redirect_uri');
      // A public client has no secret: only PKCE binds the code to the app that asked (docs/auth.md#client-applications).
      if ((client as { public?: boolean }).public === true && !q.code_challenge) throw badRequest(PUBLIC_NEEDS_PKCE, 'code_challenge');
      if (q.code_challenge && q.code_challenge_method && !(PKCE_METHODS as readonly string[]).includes(q.code_challenge_method)) {
        throw badRequest(`Unsupported code challenge method: ${q.code_challenge_method}`, 'code_challenge_method');
      }
      // SMART: `aud` names the FHIR server the app means; a token for another one is refused here.
      const fhirBase = `${state.env.config.publicUrl}/fhir/R4`;
      if (q.aud && q.aud.replace(/\/+$/, '') !== fhirBase) throw badRequest(`aud is not this server's FHIR base (${fhirBase})`, 'aud');
      if (q.launch && !(await findLaunch(state.env.db, q.launch))) throw badRequest('Invalid or expired launch', 'launch');
      const nonce = randomBytes(16).toString('base64');
      const params = {
        clientId: client.id,
        redirectUri: q.redirect_uri,
        state: q.state ?? '',
        scope: q.scope ?? 'openid',
        codeChallenge: q.code_challenge ?? '',
        codeChallengeMethod: q.code_challenge ? (q.code_challenge_method ?? 'plain') : '',
        nonce: q.nonce ?? '',
        launch: q.launch ?? '',
      };
      return {
        status: 200,
        contentType: 'text/html; charset=utf-8',
        headers: {
          'Cache-Control': 'no-store',
          'Content-Security-Policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'`,
        },
        body: page(client.name ?? 'an application', params, nonce),
      };
    },
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(clientName: string, params: Record<string, string | undefined>, nonce: string): string {
  // JSON inside <script>: escape '<' so no value can close the script element.
  const json = JSON.stringify(params).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · Lattice</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:22rem;margin:4rem auto;padding:0 1rem}
label,input,button{display:block;width:100%;box-sizing:border-box;margin:.4rem 0}input,button{padding:.5rem}
#error{color:#b00020}</style></head>
<body><h1>Sign in</h1><p>to continue to <strong>${escapeHtml(clientName)}</strong></p>
<form id="login"><label>Email <input name="email" type="email" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form><div id="choices"></div><p id="error" role="alert"></p>
<script nonce="${nonce}">
const p = ${json};
const err = (t) => { document.getElementById('error').textContent = t; };
const post = async (path, body) => {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.issue?.[0]?.details?.text ?? 'Sign-in failed');
  return data;
};
const done = (code) => {
  const url = new URL(p.redirectUri);
  url.searchParams.set('code', code);
  if (p.state) url.searchParams.set('state', p.state);
  location.assign(url.toString());
};
document.getElementById('login').addEventListener('submit', async (e) => {
  e.preventDefault(); err('');
  const f = new FormData(e.target);
  try {
    const r = await post('/auth/login', { email: f.get('email'), password: f.get('password'), clientId: p.clientId, redirectUri: p.redirectUri, scope: p.scope,
      codeChallenge: p.codeChallenge || undefined, codeChallengeMethod: p.codeChallengeMethod || undefined,
      nonce: p.nonce || undefined, launch: p.launch || undefined });
    document.getElementById('login').hidden = true;
    next(r);
  } catch (x) { err(x.message); }
});
// After a step: a code ends the sign-in; else a project (membership) or a patient to choose.
function next(r) {
  if (r.code) return done(r.code);
  const box = document.getElementById('choices');
  box.replaceChildren();
  const title = document.createElement('p');
  title.textContent = r.patients ? 'Choose a patient:' : 'Choose a project:';
  box.appendChild(title);
  const options = r.patients
    ? r.patients.map((pt) => [pt.display, () => post('/auth/patient', { login: r.login, patient: pt.reference })])
    : (r.memberships ?? []).map((m) => [m.project.display + ' — ' + (m.profile.display ?? ''), () => post('/auth/profile', { login: r.login, profile: m.id })]);
  for (const [label, choose] of options) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.addEventListener('click', async () => { err(''); try { next(await choose()); } catch (x) { err(x.message); } });
    box.appendChild(b);
  }
}
</script></body></html>`;
}
