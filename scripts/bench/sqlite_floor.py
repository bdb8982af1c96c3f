#!/usr/bin/env python3
"""The SQLite floor of the capture write path, without HealthProbe's code.

Inserts N synthetic new samples (UUID hash, strict and semantic fingerprints, payload
hash: random 64-hex keys) into the real v2 schema, four rows per sample (sample,
version, appeared event, open range) plus the run's seen-set, in transactions of
--page samples, either one statement per row (--mode rows, like the capture path) or
set-based from a staging table (--mode set). Prints samples/s and seconds per statement.

  .build/debug/hp-node --home /tmp/schema-home init
  python3 scripts/bench/sqlite_floor.py --schema-from /tmp/schema-home/archive/HealthProbeArchive.sqlite \\
      --samples 300000 --mode set --page 50000 --wal-autocheckpoint 20000
"""
import argparse, collections, hashlib, os, sqlite3, time

ap = argparse.ArgumentParser()
ap.add_argument("--schema-from", required=True, help="an archive made by `hp-node init`")
ap.add_argument("--samples", type=int, default=300000)
ap.add_argument("--mode", choices=["rows", "set"], default="set")
ap.add_argument("--page", type=int, default=5000)
ap.add_argument("--cache-kib", type=int, default=65536)
ap.add_argument("--wal-autocheckpoint", type=int, default=1000)
ap.add_argument("--db", default="/tmp/hp-sqlite-floor.sqlite")
a = ap.parse_args()

schema = [r[0] for r in sqlite3.connect(a.schema_from).execute(
    "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(a.db + suffix):
        os.remove(a.db + suffix)
raw = sqlite3.connect(a.db, isolation_level=None)
for stmt in schema:
    raw.execute(stmt)
for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON",
               "cache_size=-%d" % a.cache_kib, "wal_autocheckpoint=%d" % a.wal_autocheckpoint):
    raw.execute("PRAGMA " + pragma)
raw.execute("INSERT INTO device_chains(id, device_chain_hash, created_at) VALUES (1, 'x', 0)")
raw.execute("INSERT INTO observations(id, device_chain_id, observed_at, status, trigger_reason, schema_version) VALUES (1, 1, 0, 'running', 'bench', 7)")
raw.execute("INSERT INTO sample_types(id, type_identifier) VALUES (1, 'HKQuantityTypeIdentifierHeartRate')")
raw.execute("CREATE TEMP TABLE seen(type_run_id INTEGER, sample_id INTEGER, PRIMARY KEY(type_run_id, sample_id)) WITHOUT ROWID")
raw.execute("CREATE TEMP TABLE stage(i INTEGER PRIMARY KEY, u TEXT, s TEXT, m TEXT, p TEXT, sd REAL, ed REAL, v REAL, sid INTEGER, vid INTEGER)")

spent = collections.Counter()
def q(sql, args=(), many=False):
    t = time.perf_counter()
    c = raw.executemany(sql, args) if many else raw.execute(sql, args)
    spent[" ".join(sql.split())[:70]] += time.perf_counter() - t
    return c

def h(i, d):
    return hashlib.sha256(b"%s%d" % (d, i)).hexdigest()

start = time.perf_counter()
for off in range(0, a.samples, a.page):
    page = [(h(i, b"u"), h(i, b"s"), h(i, b"m"), h(i, b"p"), 1e9 + i * 10.0, 1e9 + i * 10 + 5, 60.0 + i % 50)
            for i in range(off, min(off + a.page, a.samples))]
    q("BEGIN")
    if a.mode == "rows":
        for (u, s, m, p, sd, ed, v) in page:
            q("SELECT id FROM samples INDEXED BY idx_samples_uuid_hash WHERE sample_uuid_hash = ? AND sample_type_id = 1", (u,)).fetchone()
            sid = q("INSERT OR IGNORE INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, first_seen_observation_id, first_seen_at) VALUES (1, ?, ?, ?, 1, 0)", (u, s, m)).lastrowid
            q("INSERT OR IGNORE INTO temp.seen VALUES (1, ?)", (sid,))
            vid = q("INSERT INTO sample_versions(sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, created_observation_id) VALUES (?, ?, ?, ?, 'quantity', ?, 'count/min', 1)", (sid, p, sd, ed, v)).lastrowid
            q("INSERT OR IGNORE INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind) VALUES (1, ?, ?, 'appeared', 0, 'reported')", (sid, vid))
            q("INSERT OR IGNORE INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, last_observation_id, first_seen_at) VALUES (?, ?, 1, NULL, 0)", (sid, vid))
    else:
        q("DELETE FROM stage")
        q("INSERT INTO stage(u, s, m, p, sd, ed, v) VALUES (?, ?, ?, ?, ?, ?, ?)", page, many=True)
        q("UPDATE stage SET sid = (SELECT id FROM samples INDEXED BY idx_samples_uuid_hash WHERE sample_uuid_hash = stage.u AND sample_type_id = 1)")
        q("INSERT INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, first_seen_observation_id, first_seen_at) SELECT 1, u, s, m, 1, 0 FROM stage WHERE sid IS NULL ORDER BY i")
        q("UPDATE stage SET sid = (SELECT id FROM samples INDEXED BY idx_samples_uuid_hash WHERE sample_uuid_hash = stage.u AND sample_type_id = 1) WHERE sid IS NULL")
        q("INSERT INTO temp.seen SELECT 1, sid FROM stage")
        q("INSERT INTO sample_versions(sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, created_observation_id) SELECT sid, p, sd, ed, 'quantity', v, 'count/min', 1 FROM stage ORDER BY sid")
        q("UPDATE stage SET vid = (SELECT id FROM sample_versions WHERE sample_id = stage.sid AND payload_hash = stage.p)")
        q("INSERT INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind) SELECT 1, sid, vid, 'appeared', 0, 'reported' FROM stage ORDER BY sid")
        q("INSERT INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, last_observation_id, first_seen_at) SELECT sid, vid, 1, NULL, 0 FROM stage ORDER BY sid")
    q("COMMIT")
seconds = time.perf_counter() - start
print("%s: %d samples in %.2f s = %d samples/s; database %.0f MB" % (a.mode, a.samples, seconds, a.samples / seconds, os.path.getsize(a.db) / 1e6))
for sql, t in spent.most_common(8):
    print("  %6.2f s  %s" % (t, sql))
