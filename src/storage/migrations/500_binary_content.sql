-- Binary content (docs/rest.md#binary): the bytes of every Binary version live in the database,
-- in chunks, so every API node reaches them and every backup of the database holds them.
-- A content row is staged (not `stored`) while its upload streams in, chunk by chunk in short
-- transactions of their own; the Binary version's write transaction marks it stored and maps the
-- version to it, so the content becomes visible exactly when its version does. Staged rows that
-- stop growing are swept (binary/content-store.ts), with their chunks.
CREATE TABLE binary_content (
  id text PRIMARY KEY,
  project_id text,
  stored boolean NOT NULL DEFAULT false,
  size bigint NOT NULL DEFAULT 0,
  sha256 text,
  chunk_size int NOT NULL,
  filename text,
  touched_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX binary_content_staged ON binary_content (touched_at) WHERE NOT stored;
-- Which content each Binary version has: a version written without new content (a PATCH, a JSON
-- update without `data`) keeps its predecessor's, without copying a byte.
CREATE TABLE binary_version (
  binary_id text NOT NULL,
  version_id int NOT NULL,
  content_id text NOT NULL REFERENCES binary_content (id),
  PRIMARY KEY (binary_id, version_id)
);
CREATE TABLE binary_chunk (
  content_id text NOT NULL REFERENCES binary_content (id) ON DELETE CASCADE,
  seq int NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (content_id, seq)
);
-- Files are mostly compressed already (images, PDFs): out-of-line storage without a compression
-- attempt, and a range read fetches only the chunks it needs.
ALTER TABLE binary_chunk ALTER COLUMN data SET STORAGE EXTERNAL;
-- The key of signed content URLs (binary/signed-urls.ts): one row, made on first start, shared
-- by every node.
CREATE TABLE binary_url_key (
  id int PRIMARY KEY CHECK (id = 1),
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
