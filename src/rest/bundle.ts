import type { Bundle, BundleEntry, BundleLink, Resource } from '@medplum/fhirtypes';
import { badRequest } from '../fhir/outcome.js';

/** Reads an integer query parameter within bounds (e.g. `_count`). */
export function intParam(query: Array<[string, string]>, name: string, fallback: number, max: number): number {
  const raw = [...query].reverse().find(([k]) => k === name)?.[1];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw badRequest(`Invalid value '${raw}' for ${name}`);
  return Math.min(Number(raw), max);
}

/**
 * `self`/`previous`/`next` links of a paged Bundle. Links repeat the request's parameters
 * (so `_count`, `_sort`, `_summary`, `_elements` survive paging) with a new `_offset`; when the
 * page names where the next one starts (`cursor`, docs/rest.md#search), the `next` link carries
 * it as `_cursor` too, and `self` keeps the request's.
 */
export function pageLinks(
  url: string,
  query: Array<[string, string]>,
  page: { offset: number; count: number; total: number; cursor?: string },
): BundleLink[] {
  const keep = query.filter(([k]) => k !== '_offset' && k !== '_cursor');
  const given = [...query].reverse().find(([k]) => k === '_cursor')?.[1];
  const href = (offset: number, cursor?: string): string => {
    const params = new URLSearchParams();
    for (const [k, v] of keep) params.append(k, v);
    if (offset > 0) params.set('_offset', String(offset));
    if (cursor) params.set('_cursor', cursor);
    const qs = params.toString();
    return qs ? `${url}?${qs}` : url;
  };
  const links: BundleLink[] = [{ relation: 'self', url: href(page.offset, given) }];
  if (page.count > 0 && page.offset + page.count < page.total) links.push({ relation: 'next', url: href(page.offset + page.count, page.cursor) });
  if (page.offset > 0) links.push({ relation: 'previous', url: href(Math.max(0, page.offset - Math.max(page.count, 1))) });
  return links;
}

/** Builds a Bundle of `type` from entries (no `entry` when there are none: FHIR JSON has no empty arrays). */
export function bundle(type: Bundle['type'], entries: BundleEntry[], total: number | undefined, link: BundleLink[]): Bundle {
  const b: Bundle = { resourceType: 'Bundle', type };
  if (total !== undefined) b.total = total;
  b.link = link;
  if (entries.length > 0) b.entry = entries;
  return b;
}

/** `fullUrl` of a resource under the FHIR base. */
export function fullUrl(fhirBaseUrl: string, resource: Resource): string {
  return `${fhirBaseUrl}/${resource.resourceType}/${resource.id}`;
}
