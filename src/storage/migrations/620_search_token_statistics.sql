-- The bounded COUNT (docs/rest.md#query-plans) reads a token criterion's rows through
-- search_token_lookup and stops at the bound, unless PostgreSQL expects few rows: it then reads
-- every matching index entry into a bitmap first (153,850 for an Observation status). Its estimate
-- multiplied the frequencies of the type, the parameter and the code as if they were unrelated
-- (23,235 for those 153,850); the most common combinations of the three, kept together, give it
-- the real figure. No cost per write: ANALYZE computes them.
CREATE STATISTICS IF NOT EXISTS search_token_codes (mcv) ON resource_type, param, code FROM search_token;
ANALYZE search_token;
