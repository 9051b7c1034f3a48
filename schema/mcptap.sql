-- mcptap.sql - the capture file's schema: the one place its tables are defined.
--
-- A capture file is an SQLite database. It holds many sessions: each run of
-- `mcptap record` (one wrapped server process) is one session. Read it with the
-- sqlite3 shell; every table and column is described here.
--
-- PRAGMA application_id marks the file as mcptap's ('MCPT' = 0x4d435054), and
-- PRAGMA user_version is the schema version. mcptap migrates older versions
-- forward and refuses files from a newer mcptap.
--
-- Times: *_ns columns are monotonic nanoseconds since the session started (for
-- ordering and latency); *_wall columns are Unix time in microseconds (for
-- people: datetime(x / 1e6, 'unixepoch')).

PRAGMA application_id = 1296257108;
PRAGMA user_version = 4;

-- Facts about the file itself: created_by and migrated_by (the mcptap versions
-- that created it and last changed its schema).
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT
);

-- One row per captured session.
CREATE TABLE session (
  id               INTEGER PRIMARY KEY,
  transport        TEXT NOT NULL DEFAULT 'stdio', -- stdio | http (Streamable HTTP) |
                                                  -- sse (the legacy HTTP+SSE) | pcap
  started_wall     INTEGER NOT NULL,              -- µs since the Unix epoch
  ended_wall       INTEGER,                       -- NULL while recording (or if the tap was killed)
  duration_ns      INTEGER,                       -- monotonic, start to end
  command          TEXT,                          -- the wrapped command line, shell-quoted
  cwd              TEXT,                          -- where it ran
  pid              INTEGER,                       -- the child's pid
  exit_status      INTEGER,                       -- the child's exit code, when it exited
  exit_signal      INTEGER,                       -- the signal that killed it, when one did
  error            TEXT,                          -- why the command could not run, when it could not
  protocol_version TEXT,                          -- negotiated: the server's initialize answer
  client_name      TEXT,                          -- initialize params.clientInfo
  client_version   TEXT,
  server_name      TEXT,                          -- initialize result.serverInfo
  server_version   TEXT,
  client_caps      TEXT,                          -- JSON: the client's declared capabilities
  server_caps      TEXT,                          -- JSON: the server's declared capabilities
  http_session_id  TEXT,                          -- Mcp-Session-Id, on HTTP transports
  mcptap_version   TEXT NOT NULL,                 -- the mcptap that recorded it
  tap_pid          INTEGER,                       -- the recording tap's own pid (version 2)
  tap_id           TEXT,                          -- that process's identity, "BOOT-ID:START-TICKS":
                                                  -- a session not ended whose tap no longer lives
                                                  -- ended abnormally (version 2)
  -- What the session holds, kept up to date with each commit (version 3):
  msgs_c2s         INTEGER NOT NULL DEFAULT 0,    -- message rows client to server
  msgs_s2c         INTEGER NOT NULL DEFAULT 0,    -- message rows server to client
  stderr_lines     INTEGER NOT NULL DEFAULT 0,    -- stderr_line rows
  bytes_c2s        INTEGER NOT NULL DEFAULT 0,    -- sum of their size, client to server
  bytes_s2c        INTEGER NOT NULL DEFAULT 0,    -- and server to client
  upstream         TEXT,                          -- the URL an HTTP tap forwarded to (version 4)
  client_addr      TEXT                           -- the address of the first client connection
                                                  -- of an HTTP tap (version 4)
);

-- One row per protocol message (a stdio line; over HTTP, a request body, a
-- JSON response body or one SSE event's data), in the order the tap read them.
-- seq is shared with stderr_line, gap and http_exchange, so they interleave by seq.
-- Rows are kept in (session, seq) order (a WITHOUT ROWID table): a session
-- is read back as one sequential scan, and appended without a second index.
CREATE TABLE message (
  session     INTEGER NOT NULL REFERENCES session(id),
  seq         INTEGER NOT NULL,   -- order of reading, across directions and stderr
  t_ns        INTEGER NOT NULL,   -- when the read that completed it returned
  wall        INTEGER NOT NULL,   -- µs since the Unix epoch
  dir         TEXT NOT NULL,      -- c2s (client to server) | s2c (server to client)
  channel     TEXT NOT NULL DEFAULT 'stdio', -- stdio | body (an HTTP request body, or a
                                  -- JSON response body) | sse (an SSE event's data)
  kind        TEXT NOT NULL,      -- request | notification | response | error |
                                  -- batch | invalid (not JSON) | notjsonrpc
  id,                             -- JSON-RPC id, no affinity: 1 (integer) and '1'
                                  -- (text) stay different; see idtype
  idtype      TEXT,               -- number | string | null; NULL when there is no id
  method      TEXT,               -- requests and notifications
  error_code  INTEGER,            -- error responses: error.code
  request_seq INTEGER,            -- responses and errors: the seq of the request
                                  -- they answer (same id, other direction, paired
                                  -- by the tap as it read them); notifications/cancelled:
                                  -- the seq of the request it cancels (its requestId,
                                  -- same direction, still open then; version 3);
                                  -- NULL when none
  progress_token,                 -- params._meta.progressToken, or params.progressToken
                                  -- of notifications/progress (no affinity, like id)
  has_meta    INTEGER NOT NULL DEFAULT 0, -- 1 when params or result carries _meta
  batch_size  INTEGER,            -- batch: number of elements
  incomplete  INTEGER NOT NULL DEFAULT 0, -- 1: the side closed before the newline
  size        INTEGER NOT NULL,   -- bytes, as relayed
  raw         BLOB NOT NULL,      -- the exact bytes, newline included
  -- Over HTTP (version 4; NULL or 0 on stdio):
  exchange    INTEGER,            -- the seq of the http_exchange it travelled in
  sse_id      TEXT,               -- the SSE event's id: field, when it had one
  sse_event   TEXT,               -- the SSE event's event: type, when it had one
  replayed    INTEGER NOT NULL DEFAULT 0, -- 1: an event a server sent again after a
                                  -- Last-Event-ID resumption (the tap stores such an
                                  -- event once, as the replay of the first)
  PRIMARY KEY (session, seq)
) WITHOUT ROWID;

CREATE INDEX message_by_request ON message(session, request_seq) WHERE request_seq IS NOT NULL;
-- The messages of an HTTP exchange (version 4).
CREATE INDEX message_by_exchange ON message(session, exchange) WHERE exchange IS NOT NULL;

-- What the server wrote on its stderr, one row per line (the bytes pass through
-- to the tap's own stderr unchanged).
CREATE TABLE stderr_line (
  session INTEGER NOT NULL REFERENCES session(id),
  seq     INTEGER NOT NULL,
  t_ns    INTEGER NOT NULL,
  wall    INTEGER NOT NULL,
  incomplete INTEGER NOT NULL DEFAULT 0,
  raw     BLOB NOT NULL,          -- the line, newline included
  UNIQUE (session, seq)
);

-- A logging gap: traffic that was relayed but could not be stored. The relay
-- never stops for the store; this row says what is missing and why.
CREATE TABLE gap (
  session    INTEGER NOT NULL REFERENCES session(id),
  seq        INTEGER,            -- where in the order the gap starts, when known
  dir        TEXT,               -- c2s | s2c | stderr, when one direction
  messages   INTEGER NOT NULL,   -- messages (lines) not stored
  bytes      INTEGER NOT NULL,   -- bytes not stored
  reason     TEXT NOT NULL
);

-- One row per HTTP request an HTTP tap relayed (or pcap import read), with
-- its response (version 4). seq says when the request arrived, in the order
-- of the session's messages; the JSON-RPC messages its bodies carried are message rows that
-- name it in their exchange column. Headers are JSON arrays of [name, value]
-- pairs, in the order sent; secrets in them and in the target are redacted.
CREATE TABLE http_exchange (
  session       INTEGER NOT NULL REFERENCES session(id),
  seq           INTEGER NOT NULL, -- when the request arrived (shared with message)
  conn          INTEGER NOT NULL, -- the client connection's number in the tap's run
  method        TEXT NOT NULL,    -- GET | POST | DELETE | ...
  target        TEXT NOT NULL,    -- the path and query, as sent (redacted)
  req_headers   TEXT NOT NULL,    -- JSON array of [name, value] (redacted)
  req_body      BLOB,             -- the request's body when no message holds it (not
                                  -- JSON-RPC: an OAuth form, ...); NULL otherwise
  status        INTEGER,          -- the response's status; NULL: no response came
  resp_headers  TEXT,             -- JSON array of [name, value] (redacted)
  resp_type     TEXT,             -- json | sse | empty | other
  resp_body     BLOB,             -- a response body that is not JSON-RPC (OAuth
                                  -- metadata, an error page), as much as the tap keeps
  t_ns          INTEGER NOT NULL, -- when the request's head was read
  wall          INTEGER NOT NULL, -- µs since the Unix epoch
  first_byte_ns INTEGER,          -- when the response's head was read
  end_ns        INTEGER,          -- when the exchange ended
  outcome       TEXT,             -- complete | client-gone | upstream-gone | timeout |
                                  -- unreachable | refused | stopped; an import's also
                                  -- closed (the connection closed first) | gap (bytes
                                  -- not captured cut it); NULL while open
  error         TEXT,             -- what went wrong, when something did
  last_event_id TEXT,             -- the request's Last-Event-ID (an SSE resumption)
  PRIMARY KEY (session, seq)
) WITHOUT ROWID;

-- Requests with their answers (paired by the tap: same id, the other
-- direction) and the latency between them. outcome: response | error, or
-- cancelled when the sender cancelled it before any answer came (an answer
-- after the cancel still shows in response_seq), or NULL: never answered.
CREATE VIEW exchange AS
SELECT q.session        AS session,
       q.seq            AS request_seq,
       q.dir            AS dir,
       q.method         AS method,
       q.id             AS id,
       r.seq            AS response_seq,
       CASE WHEN r.seq IS NOT NULL AND (q.cancel_seq IS NULL OR r.seq < q.cancel_seq) THEN r.kind
            WHEN q.cancel_seq IS NOT NULL THEN 'cancelled' END AS outcome,
       r.error_code     AS error_code,
       r.t_ns - q.t_ns  AS latency_ns,
       q.cancel_seq     AS cancel_seq
FROM (SELECT m.*, (SELECT min(c.seq) FROM message c INDEXED BY message_by_request
                   WHERE c.session = m.session AND c.request_seq = m.seq
                     AND c.kind = 'notification') AS cancel_seq
      FROM message m WHERE m.kind = 'request') q
-- (INDEXED BY: without statistics, SQLite would scan the session for each request.)
LEFT JOIN message r INDEXED BY message_by_request
                    ON r.session = q.session AND r.request_seq = q.seq
                   AND r.kind IN ('response', 'error');

-- Per-method counts, errors and latency (mean and max; percentiles: mcptap stats).
CREATE VIEW method_stats AS
SELECT session, dir, method,
       count(*)                                     AS requests,
       sum(outcome IS 'error')                      AS errors,
       sum(outcome IS 'cancelled')                  AS cancelled,
       sum(outcome IS NULL)                         AS unanswered,
       avg(latency_ns) / 1e6                        AS mean_ms,
       max(latency_ns) / 1e6                        AS max_ms
FROM exchange
GROUP BY session, dir, method;

-- Each tools/call with its tool's name, how it ended and its latency. outcome:
-- result | isError (a result whose isError is true: the tool failed) | error
-- (a JSON-RPC error) | cancelled | unanswered.
CREATE VIEW tool_call AS
SELECT e.session        AS session,
       e.request_seq    AS request_seq,
       e.id             AS id,
       json_extract(CAST(q.raw AS TEXT), '$.params.name') AS tool,
       CASE WHEN e.outcome = 'response'
                 AND json_extract(CAST(r.raw AS TEXT), '$.result.isError') IS 1 THEN 'isError'
            WHEN e.outcome = 'response' THEN 'result'
            WHEN e.outcome IS NULL THEN 'unanswered'
            ELSE e.outcome END AS outcome,
       e.error_code     AS error_code,
       e.latency_ns     AS latency_ns
FROM exchange e
JOIN message q ON q.session = e.session AND q.seq = e.request_seq
LEFT JOIN message r ON r.session = e.session AND r.seq = e.response_seq
WHERE e.method = 'tools/call' AND json_valid(CAST(q.raw AS TEXT));

-- One row per run of `mcptap analyze` over a session.
CREATE TABLE analysis (
  id             INTEGER PRIMARY KEY,
  session        INTEGER NOT NULL REFERENCES session(id),
  started_wall   INTEGER NOT NULL,   -- µs since the Unix epoch
  mcptap_version TEXT NOT NULL,
  spec           TEXT NOT NULL,      -- the protocol revision the session was checked against
  spec_source    TEXT NOT NULL,      -- negotiated | requested | option | nearest | default
  errors         INTEGER NOT NULL DEFAULT 0,
  warnings       INTEGER NOT NULL DEFAULT 0,
  infos          INTEGER NOT NULL DEFAULT 0,
  -- 0 while its findings are being stored: a long analysis commits them in
  -- slices, so that it never holds the file from the taps for long (version 3)
  complete       INTEGER NOT NULL DEFAULT 1,
  -- the rules that ran, comma-separated, when not every rule did (--rules,
  -- --skip-rules); NULL: every rule (version 3)
  rules          TEXT
);

-- What an analysis found: one row per finding, tied to the message it is
-- about (seq) and to others it refers to (related, a JSON array of seqs).
CREATE TABLE finding (
  analysis INTEGER NOT NULL REFERENCES analysis(id),
  session  INTEGER NOT NULL REFERENCES session(id),
  rule     TEXT NOT NULL,          -- LIFE-001, CAP-004, ... (mcptap analyze --list-rules)
  severity TEXT NOT NULL,          -- error | warning | info
  seq      INTEGER,                -- the message; NULL when it is about the whole session
  related  TEXT,                   -- JSON array of other seqs, or NULL
  text     TEXT NOT NULL
);
CREATE INDEX finding_by_analysis ON finding(analysis);

-- The current findings of each session: for each rule, those of the newest
-- complete analysis that ran it (a run of a few rules replaces their
-- findings only).
CREATE VIEW latest_finding AS
SELECT f.* FROM finding f
WHERE f.analysis = (SELECT max(a.id) FROM analysis a
                    WHERE a.session = f.session AND a.complete
                      AND (a.rules IS NULL OR instr(',' || a.rules || ',', ',' || f.rule || ',') > 0));

-- One row per `mcptap replay` run. mode 'client': the recorded client of a
-- session sent to a live server, every answer compared with the recorded one
-- (passed/differed/missing count its requests). mode 'server': the mock of the
-- recorded server answering a live client (passed: requests answered from the
-- recording, differed: requests without one, missing: recorded requests the
-- client never sent). Columns after `missing` came with schema version 2.
CREATE TABLE replay_run (
  id             INTEGER PRIMARY KEY,
  session        INTEGER NOT NULL REFERENCES session(id), -- the recording replayed
  started_wall   INTEGER NOT NULL,   -- µs since the Unix epoch
  duration_ns    INTEGER,
  mcptap_version TEXT NOT NULL,
  command        TEXT NOT NULL,      -- client: the live server; server: the mock's own command line (shell-quoted)
  ignore         TEXT,               -- JSON array of the --ignore paths
  passed         INTEGER NOT NULL DEFAULT 0,
  differed       INTEGER NOT NULL DEFAULT 0,
  missing        INTEGER NOT NULL DEFAULT 0, -- no live answer in time
  mode           TEXT NOT NULL DEFAULT 'client', -- client | server
  runs           INTEGER NOT NULL DEFAULT 1, -- client: live runs compared (more than one tells noise from change)
  noise          INTEGER NOT NULL DEFAULT 0, -- client: paths set aside as per-run noise
  summary        TEXT                -- JSON: the run's summary (server: the document --report writes)
);

-- Each recorded request of a replay run: what was sent, what the recording
-- and the live peer did, and the paths where they differ.
CREATE TABLE replay_result (
  run      INTEGER NOT NULL REFERENCES replay_run(id),
  seq      INTEGER NOT NULL,  -- the recorded request (server mode: the closest one, or 0)
  method   TEXT,
  status   TEXT NOT NULL,     -- client: pass | diff | missing | cancelled | unanswered | redacted;
                              -- server: miss | unused | skipped
  sent     BLOB,              -- the request as sent (server mode: as the client sent it)
  recorded BLOB,              -- the recorded answer
  live     BLOB,              -- the live answer (NULL when missing)
  diff     TEXT,              -- JSON array of the paths that differ
  name     TEXT,              -- the tool, prompt or resource the request names (version 2)
  noise    TEXT               -- JSON array of the paths set aside as noise (version 2)
);
CREATE INDEX replay_result_by_run ON replay_result(run);
