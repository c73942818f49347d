-- The publication status of an indexed code system (docs/terminology.md#status-of-the-resources-used):
-- a JSON object {status, experimental, standardsStatus} taken from CodeSystem.status,
-- CodeSystem.experimental and its structuredefinition-standards-status extension; NULL when it
-- states none of them.
ALTER TABLE tx_code_system ADD COLUMN publication text;
