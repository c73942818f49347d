-- Search: quantity values (value with its unit system and code), which search_number cannot hold.
CREATE TABLE search_quantity (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  value numeric NOT NULL,
  system text,                -- e.g. http://unitsofmeasure.org
  code text,                  -- coded unit (Money: the currency)
  unit text                   -- unit as displayed
);
CREATE INDEX search_quantity_lookup ON search_quantity (resource_type, param, value);
CREATE INDEX search_quantity_owner ON search_quantity (resource_type, id);

-- Canonical references are searched by their text (their tail is not a resource id).
CREATE INDEX search_reference_text ON search_reference (resource_type, param, reference);

-- The value `_sort` orders by. A HumanName indexes each part (family, given, …) for search,
-- but sorts by one "family given" value; other strings sort by themselves.
ALTER TABLE search_string ADD COLUMN sort_key boolean NOT NULL DEFAULT true;
