-- Persisted in-memory terminology indexes (docs/terminology.md#persisted-indexes): the typed
-- arrays and text columns an index build makes, so that a restart on any node reads them in a
-- few statements instead of rebuilding the index from the tx_* tables. One snapshot per index
-- (`cs_key`) and section (`index`, `snomed`); its chunks are written first, the header that makes
-- them readable last. A header that does not match the code system (key), the format or the
-- checksum is ignored and the index rebuilt from the tables. Removed with the index.
CREATE TABLE tx_index_snapshot (
  cs_key integer NOT NULL REFERENCES tx_code_system (cs_key) ON DELETE CASCADE,
  section text NOT NULL,
  format integer NOT NULL,
  key text NOT NULL,                  -- url|version|concept count of the code system
  chunks integer NOT NULL,
  bytes bigint NOT NULL,
  crc bigint NOT NULL,                -- CRC-32 of the bytes
  written_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (cs_key, section)
);
CREATE TABLE tx_index_snapshot_chunk (
  cs_key integer NOT NULL REFERENCES tx_code_system (cs_key) ON DELETE CASCADE,
  section text NOT NULL,
  seq integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (cs_key, section, seq)
);
-- Typed arrays and text, read whole: stored out of line without a compression attempt.
ALTER TABLE tx_index_snapshot_chunk ALTER COLUMN data SET STORAGE EXTERNAL;
