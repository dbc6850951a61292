-- Schema version 6 (issue 29): the host pair of an imported run. Additive: one nullable column.
-- links.host already names the far end (remote mode: the target; import: the server the client
-- connected to); source_host names the near end (import: the client), so that runs over one path can be
-- compared. NULL: the file did not say, or the link is emulated.

ALTER TABLE links ADD COLUMN IF NOT EXISTS source_host VARCHAR;   -- import: the client's host or address
