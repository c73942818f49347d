import { randomBytes } from 'node:crypto';
import type { AppRequest, AppResult, AppRoute } from '../core/app-route.js';
import { FhirError, informational } from '../fhir/outcome.js';
import type { Database } from '../core/database.js';
import { PASSWORD_SET_TEXT, messagePage, setPasswordPage, type Page } from './set-password-page.js';
import { checkSetPasswordLink, setPasswordWithLink } from './set-password-store.js';
import type { TxWriter } from './tx-writer.js';

const HTML = 'text/html; charset=utf-8';

/**
 * `GET /setpassword/:id/:secret` (the page the e-mail links to) and
 * `POST /auth/setpassword {id, secret, password}` (JSON; or the page's plain form post).
 */
export function setPasswordRoutes(db: Database, writer: TxWriter, passwordCost: number): AppRoute[] {
  return [
    {
      method: 'GET',
      url: '/setpassword/:id/:secret',
      auth: false,
      async handler(req) {
        const { id, secret } = req.params;
        const link = await checkSetPasswordLink(db, id, secret);
        switch (link.state) {
          case 'valid':
            return html(setPasswordPage(id, secret, randomBytes(16).toString('base64')));
          case 'used':
            return html(messagePage(410, 'Link already used', 'This link has already been used to set a password. You can sign in.'));
          case 'expired':
            return html(messagePage(410, 'Link expired', 'This link has expired. Ask your project administrator to invite you again.'));
          default:
            return html(messagePage(404, 'Invalid link', 'This link is not valid. Check that you opened the whole link from the e-mail.'));
        }
      },
    },
    {
      method: 'POST',
      url: '/auth/setpassword',
      auth: false,
      body: 'json-or-form',
      async handler(req) {
        const input = (req.body ?? {}) as { id?: unknown; secret?: unknown; password?: unknown; confirm?: unknown };
        if (!isFormPost(req)) {
          await setPasswordWithLink(db, writer, input, passwordCost);
          return { status: 200, body: informational('Password set'), contentType: 'application/fhir+json; charset=utf-8' };
        }
        return html(await formPost(db, writer, input, passwordCost));
      },
    },
  ];
}

/** The no-JavaScript path: same checks, answered as a page instead of an OperationOutcome. */
async function formPost(
  db: Database,
  writer: TxWriter,
  input: { id?: unknown; secret?: unknown; password?: unknown; confirm?: unknown },
  passwordCost: number,
): Promise<Page> {
  if (input.confirm !== undefined && input.confirm !== input.password) {
    return messagePage(400, 'Password not set', 'Passwords do not match. Go back and try again.');
  }
  try {
    await setPasswordWithLink(db, writer, input, passwordCost);
    return messagePage(200, 'Password set', PASSWORD_SET_TEXT);
  } catch (err) {
    // Presentation only: the contract's error text, shown as a page for a browser form post.
    if (!(err instanceof FhirError) || err.status >= 500) throw err;
    return messagePage(err.status, 'Password not set', err.message);
  }
}

function isFormPost(req: AppRequest): boolean {
  return /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '');
}

function html(page: Page): AppResult {
  return { status: page.status, body: page.html, contentType: HTML, headers: page.headers };
}
