-- The search answer cache (docs/rest.md#search-answer-cache): every statement that changes a
-- table a search reads — the current resources and their search index — announces it on
-- `lattice_search`, whoever sends it (a request, a bulk load, a re-index, another node, the
-- command line, psql). PostgreSQL folds the identical notifications of one transaction into one
-- and delivers it at commit (nothing for a rollback); every node, this one included, then drops
-- its kept answers. A statement-level trigger costs one call per statement, not per row.
-- test/search-cache.test.ts checks that every `resource` and `search_*` index table has it.
CREATE FUNCTION lattice_search_changed() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_notify('lattice_search', ''); RETURN NULL; END$$;
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON resource FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_date FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_number FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_quantity FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_reference FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_string FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_text FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_token FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
CREATE TRIGGER search_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_uri FOR EACH STATEMENT EXECUTE FUNCTION lattice_search_changed();
