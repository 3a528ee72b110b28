-- SPDX-License-Identifier: Apache-2.0
-- Checking fencing tokens in a SQL database (PostgreSQL syntax; MySQL notes
-- at the end). The reasoning is in docs/fencing.md; this file is the code.
--
-- The rule: a write is applied only if its token is >= the highest token
-- that already wrote the row, and the comparison is part of the write
-- itself (one statement), never a SELECT followed by an UPDATE in the client.
-- Use >=, not >: one holder writes many times with the same token, and two
-- different holders never share one.
--
-- The token comes from redlock: acquire with acquire_options::fenced = true
-- and pass *lock.fence() (an unsigned 64-bit integer; bigint holds every
-- value a real deployment will reach).
--
-- Run against a scratch database to see the statements at work:
--   psql -v ON_ERROR_STOP=1 -d scratch -f examples/fencing_sql.sql
-- The $1, $2, $3 placeholders are those of prepared statements, as a driver
-- (libpq, JDBC, psycopg, ...) would send them.

DROP TABLE IF EXISTS documents;
DROP TABLE IF EXISTS lock_fences;

-- The protected data carries the token of the holder that last wrote it.
CREATE TABLE documents (
  id    bigint PRIMARY KEY,
  body  text   NOT NULL,
  fence bigint NOT NULL DEFAULT 0   -- highest fencing token that wrote this row
);

-- ---------------------------------------------------------------------------
-- 1. Update an existing row.
--    $1 = id, $2 = new body, $3 = the holder's fencing token
-- ---------------------------------------------------------------------------
PREPARE fenced_update(bigint, text, bigint) AS
  UPDATE documents
     SET body = $2, fence = $3
   WHERE id = $1 AND fence <= $3;
-- The application MUST check the affected-row count (libpq: PQcmdTuples;
-- JDBC: executeUpdate's return value; psql prints "UPDATE n"):
--   1 -> written;
--   0 -> a newer holder already wrote (we are stale: abandon the work, do not
--        retry with this token), or there is no such row. To tell the two
--        apart, read the row afterwards: a fence greater than ours means stale.
--
-- Why it is safe under concurrency: PostgreSQL evaluates the WHERE clause of
-- an UPDATE against the newest committed version of the row while holding the
-- row lock; a second writer blocked on that lock re-checks the condition
-- against the first writer's committed token (READ COMMITTED). Under
-- REPEATABLE READ or SERIALIZABLE the second writer fails with a
-- serialization error (SQLSTATE 40001) instead; on retry its check fails.

-- ---------------------------------------------------------------------------
-- 2. Insert or update (PostgreSQL 9.5+): the row may not exist yet.
-- ---------------------------------------------------------------------------
PREPARE fenced_upsert(bigint, text, bigint) AS
  INSERT INTO documents AS d (id, body, fence) VALUES ($1, $2, $3)
  ON CONFLICT (id) DO UPDATE
     SET body = EXCLUDED.body, fence = EXCLUDED.fence
   WHERE d.fence <= EXCLUDED.fence;
-- Row count 1: inserted, or updated; 0: the row exists with a higher token
-- (stale writer). When the WHERE is false the row is left unchanged.

-- ---------------------------------------------------------------------------
-- 3. Many rows in one transaction: fence one per-resource row first.
--    Its row lock is held until COMMIT, so a stale holder's transaction waits
--    behind ours and then fails the check. Because the fence row is written
--    before anything is read, this also "registers the token before reading"
--    (docs/fencing.md): a late write from an older holder cannot slip in
--    between our read and our write.
-- ---------------------------------------------------------------------------
CREATE TABLE lock_fences (
  resource text   PRIMARY KEY,      -- the lock name, e.g. 'orders:42'
  token    bigint NOT NULL
);

PREPARE claim_fence(text, bigint) AS
  INSERT INTO lock_fences AS f (resource, token) VALUES ($1, $2)
  ON CONFLICT (resource) DO UPDATE
     SET token = EXCLUDED.token
   WHERE f.token <= EXCLUDED.token;
-- Usage, per critical section:
--   BEGIN;
--   EXECUTE claim_fence('orders:42', <token>);   -- must affect 1 row, else ROLLBACK
--   ... SELECT / UPDATE / INSERT the protected rows ...
--   COMMIT;
-- Every writer of those rows must go through the same claim, or the fence
-- protects nothing.

-- ---------------------------------------------------------------------------
-- Demonstration: holder with token 33 pauses, holder 34 writes, 33 comes back.
-- ---------------------------------------------------------------------------
EXECUTE fenced_upsert(42, 'created by holder 33', 33);      -- INSERT 0 1: created
EXECUTE fenced_update(42, 'written by holder 34', 34);      -- UPDATE 1: newer token
EXECUTE fenced_update(42, 'late write by holder 33', 33);  -- UPDATE 0: refused
EXECUTE fenced_upsert(42, 'late upsert by holder 33', 33); -- INSERT 0 0: refused
EXECUTE fenced_update(42, 'second write by holder 34', 34);-- UPDATE 1: same token again
SELECT id, body, fence FROM documents;                      -- 'second write by holder 34', 34

BEGIN;
EXECUTE claim_fence('orders:42', 35);                       -- INSERT 0 1: claimed
UPDATE documents SET body = 'holder 35, inside its claim', fence = 35 WHERE id = 42;
COMMIT;
BEGIN;
EXECUTE claim_fence('orders:42', 34);                       -- INSERT 0 0: stale, so...
ROLLBACK;                                                   -- ...the application rolls back
SELECT resource, token FROM lock_fences;                    -- orders:42, 35

-- ---------------------------------------------------------------------------
-- MySQL / MariaDB (InnoDB): the UPDATE of section 1 works unchanged (with ?
-- placeholders); its row count is "affected rows", which by default counts
-- only rows actually changed, so writing an identical body with the same
-- token reports 0. Connect with CLIENT_FOUND_ROWS (useAffectedRows=false in
-- Connector/J) to count matched rows instead. For the upsert, MySQL's
-- INSERT ... ON DUPLICATE KEY UPDATE has no WHERE; use conditional
-- assignments, fence last:
--   INSERT INTO documents (id, body, fence) VALUES (?, ?, ?)
--   ON DUPLICATE KEY UPDATE
--     body  = IF(fence <= VALUES(fence), VALUES(body), body),
--     fence = IF(fence <= VALUES(fence), VALUES(fence), fence);
-- (assignments are applied left to right, so body must be decided before
-- fence changes). Check that the stored fence equals your token afterwards.
