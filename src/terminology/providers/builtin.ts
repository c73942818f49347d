import subtagMeta from 'language-subtag-registry/data/json/meta.json' with { type: 'json' };
import mimePackage from 'mime-db/package.json' with { type: 'json' };
import countriesPackage from 'i18n-iso-countries/package.json' with { type: 'json' };
import type { CodeSystemInfo, TermContext } from '../types.js';
import type { CodeSystemProvider } from './provider.js';
import { RegistryProvider, type Registry } from './registries/registry.js';

/**
 * The code systems built in (docs/terminology.md#code-systems-built-in): UCUM, BCP-47 language
 * tags, MIME types, ISO 3166 countries and ISO 4217 currencies answer from a grammar or a
 * registry package, with nothing to import. Canonical resolution falls back to them when no
 * stored or request-supplied CodeSystem has the URL (engine/resolve.ts); their data is loaded on
 * first use.
 */

interface Builtin {
  url: string;
  version: string;
  name: string;
  title: string;
  caseSensitive: boolean;
  load: () => Promise<Registry>;
  /** A grammar's common codes, the value set an include of the whole system expands to (docs/terminology.md#expanding-a-grammar). */
  commonCodes?: string;
}

/** ISO 4217's list date as `currency-codes` 2.2.0 carries it (the package says it in its data). */
const ISO_4217_LIST_DATE = '2024-06-25';

const BUILTINS: Builtin[] = [
  {
    url: 'http://unitsofmeasure.org',
    // The UCUM release whose definitions @lhncbc/ucum-lhc 7 carries.
    version: '2.2',
    name: 'UCUM',
    title: 'Unified Code for Units of Measure',
    caseSensitive: true,
    load: async () => (await import('./registries/ucum.js')).ucumRegistry,
    commonCodes: 'http://hl7.org/fhir/ValueSet/ucum-common',
  },
  {
    url: 'urn:ietf:bcp:47',
    version: subtagMeta['File-Date'],
    name: 'BCP-47',
    title: 'Tags for Identifying Languages (BCP 47)',
    caseSensitive: false,
    load: async () => (await import('./registries/bcp47.js')).bcp47Registry,
  },
  {
    url: 'urn:ietf:bcp:13',
    version: mimePackage.version,
    name: 'MIME',
    title: 'Media types (BCP 13)',
    caseSensitive: false,
    load: async () => (await import('./registries/mime.js')).mimeRegistry,
  },
  {
    url: 'urn:iso:std:iso:3166',
    version: countriesPackage.version,
    name: 'ISO3166',
    title: 'ISO 3166-1 country codes',
    caseSensitive: true,
    load: async () => (await import('./registries/iso3166.js')).iso3166Registry,
  },
  {
    url: 'urn:iso:std:iso:4217',
    version: ISO_4217_LIST_DATE,
    name: 'ISO4217',
    title: 'ISO 4217 currency codes',
    caseSensitive: true,
    load: async () => (await import('./registries/iso4217.js')).iso4217Registry,
  },
];

/** Keys far below those of request-supplied code systems (which count down from -1). */
const FIRST_KEY = -2_000_000_000;

const infos = new Map<string, CodeSystemInfo>(
  BUILTINS.map((b, i) => [
    b.url,
    {
      key: FIRST_KEY - i,
      resourceId: `builtin-${b.name.toLowerCase()}`,
      projectId: undefined,
      url: b.url,
      version: b.version,
      lastUpdated: '1970-01-01T00:00:00.000Z',
      content: 'complete',
      caseSensitive: b.caseSensitive,
      hierarchyMeaning: undefined,
      supplements: undefined,
      language: 'en',
      name: b.name,
      title: b.title,
      propertyDefs: [],
      conceptCount: 0,
    },
  ]),
);
const byKey = new Map(BUILTINS.map((b, i) => [FIRST_KEY - i, b]));

/** The built-in code system of a URL (undefined when none is built in). */
export function builtinCodeSystem(url: string): CodeSystemInfo | undefined {
  return infos.get(url);
}

/** Every built-in code system (for TerminologyCapabilities). */
export function builtinCodeSystems(): CodeSystemInfo[] {
  return [...infos.values()];
}

/** True for a code system built in (nothing stored: nothing to import into, nothing to index). */
export function isBuiltin(cs: CodeSystemInfo): boolean {
  return byKey.get(cs.key)?.url === cs.url;
}

/** The provider of a built-in code system; undefined for any other. */
export function builtinProvider(tc: TermContext, cs: CodeSystemInfo): CodeSystemProvider | undefined {
  const b = byKey.get(cs.key);
  return b && isBuiltin(cs) ? new RegistryProvider(tc, cs, b.load, b.commonCodes) : undefined;
}
