-- SNOMED CT beside the terminology index (docs/terminology.md#snomed-ct): what the tx_* tables
-- cannot hold. Rows are keyed by the code system's `cs_key` and concept ids (tx_concept.id), so
-- they belong to one index and follow its staged, atomic import exactly (written under the
-- staging row, switched in with it, removed with it: code-system-store.ts CHILD_TABLES).

-- Per concept (tx_concept.id): its module's SCTID, effective time (yyyymmdd) and whether it is
-- fully defined; kept here rather than as property rows (three per concept) so that an
-- edition's index stays small.
CREATE TABLE tx_sct_concept (
  cs_key integer NOT NULL,
  id integer NOT NULL,
  module text NOT NULL,
  effective integer NOT NULL,
  defined boolean NOT NULL,
  PRIMARY KEY (cs_key, id)
);

-- Active inferred relationships other than |is a| (those are tx_closure's edges).
CREATE TABLE tx_sct_relationship (
  cs_key integer NOT NULL,
  source integer NOT NULL,
  type integer NOT NULL,
  destination integer NOT NULL,
  grp integer NOT NULL
);
CREATE INDEX tx_sct_relationship_source ON tx_sct_relationship (cs_key, source);

-- Active concrete values (RelationshipConcreteValues): `value` as RF2 writes it (#12, #1.5, "text").
CREATE TABLE tx_sct_concrete (
  cs_key integer NOT NULL,
  source integer NOT NULL,
  type integer NOT NULL,
  grp integer NOT NULL,
  value text NOT NULL
);
CREATE INDEX tx_sct_concrete_source ON tx_sct_concrete (cs_key, source);

-- Active members of reference sets whose referenced component is a concept; `target` is the
-- target concept of an association member (e.g. |REPLACED BY|), else NULL.
CREATE TABLE tx_sct_member (
  cs_key integer NOT NULL,
  refset integer NOT NULL,
  referenced integer NOT NULL,
  target integer
);
CREATE INDEX tx_sct_member_referenced ON tx_sct_member (cs_key, referenced);

-- Acceptability of active descriptions in language reference sets (dialects): the description's
-- SCTID and term (its tx_designation row has the same term), the language refset, and whether it
-- is preferred there (the display in that dialect) or acceptable.
CREATE TABLE tx_sct_acceptability (
  cs_key integer NOT NULL,
  concept integer NOT NULL,
  description text NOT NULL,
  term text NOT NULL,
  refset text NOT NULL,
  preferred boolean NOT NULL
);
CREATE INDEX tx_sct_acceptability_concept ON tx_sct_acceptability (cs_key, concept);
