-- A UCUM quantity is also indexed in its canonical unit (docs/rest.md#quantity-search); those
-- extra rows are marked, so a search that does not convert (no system, another system, a unit
-- without a conversion) and `_sort` only see the quantities as written.
ALTER TABLE search_quantity ADD COLUMN canonical boolean NOT NULL DEFAULT false;
