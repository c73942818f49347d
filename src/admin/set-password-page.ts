import { escapeHtml } from '../email/templates.js';

/**
 * Shown once the password is set (the browser test looks for it): where to go next. Lattice has
 * no sign-in page of its own to send the user to — applications sign users in through
 * `/oauth2/authorize` (docs/auth.md#browser-sign-in-page) — so the user goes back to the app.
 */
export const PASSWORD_SET_TEXT =
  'Your password has been set. Go back to the application that invited you and sign in there with your e-mail address and this password; this page can be closed.';

/** A server-rendered page: HTML plus the headers that keep the link's secret private. */
export interface Page {
  status: number;
  html: string;
  headers: Record<string, string>;
}

/**
 * The set-password form (no framework). It posts `{id, secret, password}` as JSON to
 * `POST /auth/setpassword` and shows the outcome in place; without JavaScript the plain form
 * post works too (the route answers with `resultPage`). Paths are relative, so the page also
 * works behind a proxy that mounts Lattice under a prefix.
 */
export function setPasswordPage(id: string, secret: string, nonce: string): Page {
  const body = `
<h1>Set your password</h1>
<form id="set-password" method="post" action="../../auth/setpassword">
  <input type="hidden" name="id" value="${escapeHtml(id)}">
  <input type="hidden" name="secret" value="${escapeHtml(secret)}">
  <label for="password">New password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required>
  <label for="confirm">Confirm password</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password" minlength="8" required>
  <p class="hint">At least 8 characters.</p>
  <button type="submit">Set password</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>
<script nonce="${nonce}">
(() => {
  const form = document.getElementById('set-password');
  const status = document.getElementById('status');
  const button = form.querySelector('button');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    if (data.get('password') !== data.get('confirm')) {
      status.textContent = 'Passwords do not match';
      return;
    }
    button.disabled = true;
    status.textContent = 'Saving…';
    try {
      const res = await fetch(form.action, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: data.get('id'), secret: data.get('secret'), password: data.get('password') }),
      });
      const outcome = await res.json().catch(() => undefined);
      if (res.ok) {
        const done = document.createElement('p');
        done.id = 'done';
        done.textContent = ${JSON.stringify(PASSWORD_SET_TEXT)};
        form.replaceWith(done);
        return;
      }
      status.textContent = outcome?.issue?.[0]?.details?.text ?? 'Something went wrong (' + res.status + ')';
    } catch {
      status.textContent = 'Could not reach the server. Please try again.';
    }
    button.disabled = false;
  });
})();
</script>`;
  return page(200, 'Set your password', body, nonce);
}

/** A page with a single message (link invalid/used/expired, or the no-JavaScript result). */
export function messagePage(status: number, title: string, message: string): Page {
  return page(status, title, `<h1>${escapeHtml(title)}</h1>\n<p id="${status < 300 ? 'done' : 'error'}">${escapeHtml(message)}</p>`);
}

function page(status: number, title: string, body: string, nonce?: string): Page {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)} · Lattice</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 26rem; margin: 4rem auto; padding: 0 1rem; color: #222; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input[type=password] { width: 100%; padding: .5rem; font-size: 1rem; box-sizing: border-box; }
  button { margin-top: 1rem; padding: .6rem 1.2rem; font-size: 1rem; }
  .hint { color: #666; font-size: .9rem; }
  #status { color: #b00020; min-height: 1.5em; }
</style>
</head>
<body>
<main>${body}
</main>
</body>
</html>
`;
  return {
    status,
    html,
    headers: {
      // The URL holds the secret: never send it as a Referer, never cache the page.
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
      'X-Frame-Options': 'DENY',
      'Content-Security-Policy': [
        "default-src 'none'",
        nonce ? `script-src 'nonce-${nonce}'` : "script-src 'none'",
        "style-src 'unsafe-inline'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
      ].join('; '),
    },
  };
}
