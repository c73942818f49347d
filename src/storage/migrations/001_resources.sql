-- Resources: the current version of each resource, its full history, and the search index.
-- Migration numbering: 0xx storage/REST, 1xx terminology, 2xx auth, 3xx admin/e-mail.

-- Current version. `project_id` NULL = shared content (e.g. base terminologies).
CREATE TABLE resource (
  resource_type text NOT NULL,
  id text NOT NULL,
  version_id integer NOT NULL,
  project_id text,
  last_updated timestamptz NOT NULL,
  deleted boolean NOT NULL DEFAULT false,
  content text NOT NULL,
  PRIMARY KEY (resource_type, id)
);
CREATE INDEX resource_type_updated ON resource (resource_type, last_updated);
CREATE INDEX resource_project ON resource (project_id, resource_type);

-- Every version, including deletions (content of a deletion is the last content, deleted = true).
CREATE TABLE resource_history (
  resource_type text NOT NULL,
  id text NOT NULL,
  version_id integer NOT NULL,
  project_id text,
  last_updated timestamptz NOT NULL,
  deleted boolean NOT NULL DEFAULT false,
  content text NOT NULL,
  PRIMARY KEY (resource_type, id, version_id)
);
CREATE INDEX resource_history_type_updated ON resource_history (resource_type, last_updated);

-- Search index, one table per search-parameter type. Rows belong to the current version only.
CREATE TABLE search_string (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  value text NOT NULL,       -- normalized: lower case, accents removed, whitespace folded
  raw text NOT NULL          -- as written, for :exact
);
CREATE INDEX search_string_lookup ON search_string (resource_type, param, value text_pattern_ops);
CREATE INDEX search_string_owner ON search_string (resource_type, id);

CREATE TABLE search_token (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  system text,
  code text,
  code_lower text,           -- for case-insensitive matching (:text not supported)
  text_value text            -- display/text, lower case, for :text
);
CREATE INDEX search_token_lookup ON search_token (resource_type, param, code);
CREATE INDEX search_token_owner ON search_token (resource_type, id);

CREATE TABLE search_reference (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  target_type text,
  target_id text,
  reference text NOT NULL    -- as written (relative, absolute or canonical)
);
CREATE INDEX search_reference_lookup ON search_reference (resource_type, param, target_id);
CREATE INDEX search_reference_owner ON search_reference (resource_type, id);

CREATE TABLE search_date (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  low timestamptz,            -- NULL = unbounded below
  high timestamptz            -- NULL = unbounded above
);
CREATE INDEX search_date_lookup ON search_date (resource_type, param, low, high);
CREATE INDEX search_date_owner ON search_date (resource_type, id);

CREATE TABLE search_number (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  value numeric NOT NULL
);
CREATE INDEX search_number_lookup ON search_number (resource_type, param, value);
CREATE INDEX search_number_owner ON search_number (resource_type, id);

CREATE TABLE search_uri (
  resource_type text NOT NULL,
  id text NOT NULL,
  param text NOT NULL,
  value text NOT NULL
);
CREATE INDEX search_uri_lookup ON search_uri (resource_type, param, value);
CREATE INDEX search_uri_owner ON search_uri (resource_type, id);
