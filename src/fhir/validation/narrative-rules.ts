import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { issue } from '../outcome.js';

/** Elements R4 narrative may not use (txt-1: basic formatting only; no scripts, forms, frames or embedded objects). */
const FORBIDDEN = /<\s*(script|form|input|button|select|textarea|iframe|frame|frameset|object|embed|applet|base|link|meta|style)\b/i;
/** A tag: `[^<>]` keeps every match (and every failed start) within one tag, so the scan is linear. */
const TAG = /<[^<>]*>/g;
/** An event handler attribute (`onclick=`, …) in a tag. */
const HANDLER = /\son[a-z]+\s*=/i;
const ROOT = /^\s*<div\b[^>]*\sxmlns\s*=\s*("http:\/\/www\.w3\.org\/1999\/xhtml"|'http:\/\/www\.w3\.org\/1999\/xhtml')/;

/**
 * The R4 rules of a Narrative's `div` (narrative.html, txt-1 and txt-2) that hold without an
 * XHTML parser: the root is a `div` in the XHTML namespace, no forbidden element or event
 * handler attribute, and some content (text or an image).
 */
export function narrativeIssues(div: string, expr: string): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  if (!ROOT.test(div)) out.push(issue('invariant', 'txt-1: The narrative must be a <div> element in the XHTML namespace (xmlns="http://www.w3.org/1999/xhtml")', expr));
  const element = FORBIDDEN.exec(div);
  if (element) out.push(issue('invariant', `txt-1: The narrative may not contain a <${element[1].toLowerCase()}> element`, expr));
  else if ((div.match(TAG) ?? []).some((tag) => HANDLER.test(tag))) out.push(issue('invariant', 'txt-1: The narrative may not contain event handler attributes (on…=)', expr));
  const text = div.replace(TAG, '').replace(/&nbsp;|&#160;|&#xa0;/gi, '');
  if (text.trim() === '' && !/<\s*img\b/i.test(div)) out.push(issue('invariant', 'txt-2: The narrative must have some non-whitespace content', expr));
  return out;
}
