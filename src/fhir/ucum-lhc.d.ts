// The part of @lhncbc/ucum-lhc (no type declarations of its own) that src/fhir/ucum.ts uses.
declare module '@lhncbc/ucum-lhc' {
  interface UcumUnit {
    name_: string;
    csCode_: string;
    isMetric_: boolean;
    isBase_: boolean;
    isSpecial_: boolean;
    isArbitrary_: boolean;
    source_: string;
  }
  interface ValidationResult {
    status: 'valid' | 'invalid' | 'error';
    ucumCode: string | null;
    unit?: { code: string; name: string; guidance?: string };
    msg: string[];
  }
  interface BaseUnitsResult {
    status: 'succeeded' | 'invalid' | 'failed' | 'error';
    msg: string[];
    magnitude?: number;
    unitToExp?: Record<string, number>;
    fromUnitIsSpecial?: boolean;
  }
  interface UcumLhcUtils {
    validateUnitString(unit: string, suggest?: boolean): ValidationResult;
    convertToBaseUnits(unit: string, value: number): BaseUnitsResult;
  }
  const ucum: {
    UcumLhcUtils: { getInstance(): UcumLhcUtils };
    UnitTables: { getInstance(): { getUnitByCode(code: string): UcumUnit | null | undefined } };
  };
  export default ucum;
}

declare module '@lhncbc/ucum-lhc/source-cjs/prefixTables.js' {
  export const PrefixTables: { getInstance(): { getPrefixByCode(code: string): { name_: string } | null | undefined } };
}
