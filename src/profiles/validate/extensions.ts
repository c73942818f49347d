import type { StructureDefinition } from '@medplum/fhirtypes';
import { isObject } from '../../fhir/json.js';
import type { At, WalkContext } from './walk-context.js';

/** The specification's own extensions: the server holds every R4 one, so an unknown url here is a mistake. */
const CORE = 'http://hl7.org/fhir/StructureDefinition/';

/**
 * An extension no slice of the profile claims: its url resolved to an extension definition →
 * the extension is validated against it and its `context` checked; unknown → an error for a
 * modifier extension or one in the specification's own space (hl7.org/fhir/StructureDefinition/:
 * the server holds all of those; an implementation guide's space such as hl7.org/fhir/us/ is not
 * meant), else a warning. A relative url is a complex extension's part (its parent's
 * definition checks it).
 */
export async function checkExtension(ctx: WalkContext, ext: unknown, holder: At, modifier: boolean, expr: string): Promise<void> {
  if (!isObject(ext) || typeof ext.url !== 'string' || !ext.url.includes(':')) return;
  const url = ext.url;
  const resolved = await ctx.source.resolve(url);
  if (resolved.found === 'no-snapshot') {
    ctx.add('warning', 'not-supported', `Extension ${url} was not checked: its definition is held but its snapshot is not available (snapshot generation is not available)`, expr);
    return;
  }
  if (resolved.found === 'unavailable') {
    ctx.add('warning', 'not-supported', `Extension ${url} was not checked: its definition could not be loaded inside a transaction`, expr);
    return;
  }
  if (resolved.found === 'no') {
    if (modifier || url.startsWith(CORE)) {
      ctx.add('error', 'structure', `Unknown ${modifier ? 'modifier ' : ''}extension ${url}: it is not allowed here`, `${expr}.url`, 'Extension_EXT_Unknown_NotHere');
    } else {
      ctx.add('warning', 'structure', `Unknown extension ${url}: its content was not checked`, `${expr}.url`, 'Extension_EXT_Unknown');
    }
    return;
  }
  const sd = resolved.profile.sd;
  if (sd.type !== 'Extension') {
    ctx.add('error', 'structure', `${url} is not an extension definition (it defines a ${sd.type ?? 'type'})`, `${expr}.url`);
    return;
  }
  if (!contextAllows(sd, holder)) {
    const where = (sd.context ?? []).map((c) => c.expression).join(', ');
    // Another resource or type altogether is an error; a different element of the right type (where
    // the specification's own artefacts are loose, e.g. on a primitive's parent) a warning.
    const firsts = new Set((sd.context ?? []).map((c) => (c.expression ?? '').split('.')[0]));
    const near = firsts.has(holder.path.split('.')[0]) || firsts.has(holder.base.split('.')[0]);
    ctx.add(near ? 'warning' : 'error', 'structure', `Extension ${url} is not allowed on ${holder.path}: its context is ${where}`, `${expr}.url`);
  }
  if (modifier !== sd.snapshot?.element?.[0]?.isModifier && sd.snapshot?.element?.[0]?.isModifier !== undefined) {
    const text = modifier ? `Extension ${url} is not a modifier extension: use extension, not modifierExtension` : `Extension ${url} is a modifier extension: use modifierExtension`;
    ctx.add('error', 'structure', text, `${expr}.url`, modifier ? 'Extension_EXT_Modifier_N' : 'Extension_EXT_Modifier_Y');
  }
  await ctx.walker.validateAgainst(ctx, resolved.profile, ext, { expr, base: 'Extension', path: `${holder.path}.extension`, type: 'Extension' }, 'profile');
}

/** Does the definition's `context` allow the element holding the extension? Unstated → anywhere. */
function contextAllows(sd: StructureDefinition, holder: At): boolean {
  const contexts = sd.context ?? [];
  if (contexts.length === 0) return true;
  const resourceType = holder.path.split('.')[0];
  const atRoot = !holder.path.includes('.');
  return contexts.some((c) => {
    if (c.type === 'fhirpath') return true;
    const e = (c.expression ?? '').replace(/\[x\]/g, '');
    if (c.type === 'extension') return holder.type === 'Extension';
    // `holder.base` is the path within the data type that holds it (`ElementDefinition.binding`).
    if (e === 'Element' || e === holder.path || e === holder.base || e === holder.type || e === 'Base') return true;
    if ((e === 'Resource' || e === 'DomainResource' || e === resourceType) && atRoot) return true;
    // A context on a data type's element (`Address.line`) or a path through a choice (`Observation.value`).
    return holder.path.endsWith(`.${e}`);
  });
}
