import type { EmailMessage } from './outbox.js';

/** What the invite e-mail needs to know. */
export interface InviteEmailInput {
  to: string;
  projectName: string;
  firstName: string;
  /** True when the invite created the user. */
  newUser: boolean;
  /** Link to choose a password (new users; existing users who never set one). */
  setPasswordUrl?: string;
  /** Where the user signs in (the server's public URL). */
  signInUrl: string;
}

/**
 * The invite e-mail, plain text plus simple HTML (docs/invite.md#e-mail): a new user gets
 * `Welcome to <project>` with the set-password link, an existing user
 * `You were invited to <project>`.
 */
export function inviteEmail(input: InviteEmailInput): EmailMessage {
  const { projectName, firstName, setPasswordUrl } = input;
  // A project name is user input: no line breaks in a header.
  const name = projectName.replace(/[\r\n]+/g, ' ');
  const subject = input.newUser ? `Welcome to ${name}` : `You were invited to ${name}`;
  const intro = input.newUser
    ? `You have been invited to ${projectName}.`
    : `You have been added to ${projectName}.`;
  const action = setPasswordUrl
    ? 'Choose your password to activate your account (the link works once and expires in 7 days):'
    : 'Sign in with your existing account:';
  const link = setPasswordUrl ?? input.signInUrl;
  const text = [`Hello ${firstName},`, '', intro, '', action, link, '', 'If you did not expect this e-mail, you can ignore it.', ''].join('\n');
  const html = [
    '<!doctype html>',
    '<html><body style="font-family: sans-serif; line-height: 1.5">',
    `<p>Hello ${escapeHtml(firstName)},</p>`,
    `<p>${escapeHtml(intro)}</p>`,
    `<p>${escapeHtml(action)}<br><a href="${escapeHtml(link)}">${escapeHtml(setPasswordUrl ? 'Set your password' : link)}</a></p>`,
    '<p style="color: #666">If you did not expect this e-mail, you can ignore it.</p>',
    '</body></html>',
  ].join('\n');
  return { to: input.to, subject, text, html };
}

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
