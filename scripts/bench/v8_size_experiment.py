#!/usr/bin/env python3
"""Measures what schema v8 changes would save (issue 23), on a copy of a v7 archive.

usage: scripts/bench/v8_size_experiment.py ARCHIVE.sqlite OUT_DIR
Writes OUT_DIR/v7.sqlite (VACUUM INTO), OUT_DIR/step1.sqlite and OUT_DIR/step2.sqlite and prints
bytes per sample for each (docs/decisions/2026-11-24-compact-schema-v8.md).
Step 1: hashes as 32-byte BLOBs, idx_sample_versions_sample dropped, ranges WITHOUT ROWID.
Step 2: + partial open-range and UUID indexes, events WITHOUT ROWID keyed by their UNIQUE
(drops the event id), idx_events_observation_kind dropped."""
import os, shutil, sqlite3, sys


def step1(p):
    db = sqlite3.connect(p)
    db.create_function("unhex", 1, lambda h: bytes.fromhex(h) if h is not None else None, deterministic=True)
    db.execute("PRAGMA foreign_keys=OFF")
    c = db.cursor()
    def rebuild(table, create, cols, select):
        c.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
        c.execute(create)
        c.execute(f"INSERT INTO {table} ({cols}) SELECT {select} FROM old_{table}")
        c.execute(f"DROP TABLE old_{table}")
    c.execute("BEGIN")
    rebuild("samples", """CREATE TABLE samples (id INTEGER PRIMARY KEY, sample_type_id INTEGER NOT NULL, sample_uuid_hash BLOB,
        strict_fingerprint BLOB NOT NULL, semantic_fingerprint BLOB, fuzzy_key TEXT, first_seen_observation_id INTEGER NOT NULL,
        first_seen_at REAL NOT NULL, UNIQUE(sample_type_id, strict_fingerprint))""",
        "id, sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, fuzzy_key, first_seen_observation_id, first_seen_at",
        "id, sample_type_id, unhex(sample_uuid_hash), unhex(strict_fingerprint), unhex(semantic_fingerprint), fuzzy_key, first_seen_observation_id, first_seen_at")
    c.execute("CREATE INDEX idx_samples_uuid_hash ON samples(sample_uuid_hash)")
    c.execute("CREATE INDEX idx_samples_type_semantic ON samples(sample_type_id, semantic_fingerprint)")
    c.execute("CREATE INDEX idx_samples_first_seen ON samples(first_seen_observation_id)")
    cols = "id, sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value, workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date"
    rebuild("sample_versions", """CREATE TABLE sample_versions (id INTEGER PRIMARY KEY, sample_id INTEGER NOT NULL, payload_hash BLOB NOT NULL,
        start_date REAL NOT NULL, end_date REAL NOT NULL, value_kind TEXT, numeric_value REAL, unit TEXT, category_value INTEGER,
        workout_activity_type INTEGER, duration_seconds REAL, source_revision_id INTEGER, hk_device_id INTEGER, metadata_id INTEGER,
        created_observation_id INTEGER NOT NULL, creation_date REAL, UNIQUE(sample_id, payload_hash))""", cols, cols.replace("payload_hash", "unhex(payload_hash)"))
    # idx_sample_versions_sample dropped: a prefix of UNIQUE(sample_id, payload_hash)
    c.execute("CREATE INDEX idx_sample_versions_time ON sample_versions(start_date, end_date)")
    c.execute("CREATE INDEX idx_sample_versions_created ON sample_versions(created_observation_id)")
    cols = "sample_id, version_id, first_observation_id, last_observation_id, first_seen_at, last_seen_at"
    rebuild("sample_visibility_ranges", """CREATE TABLE sample_visibility_ranges (sample_id INTEGER NOT NULL, version_id INTEGER,
        first_observation_id INTEGER NOT NULL, last_observation_id INTEGER, first_seen_at REAL NOT NULL, last_seen_at REAL,
        PRIMARY KEY (sample_id, version_id, first_observation_id)) WITHOUT ROWID""", cols, cols)
    c.execute("CREATE INDEX idx_visibility_open_ranges ON sample_visibility_ranges(last_observation_id)")
    c.execute("CREATE INDEX idx_visibility_point_lookup ON sample_visibility_ranges(first_observation_id, last_observation_id)")
    db.commit()
    db.execute("VACUUM")
    db.close()


def step2(p):
    db = sqlite3.connect(p); c = db.cursor()
    c.execute("BEGIN")
    c.execute("DROP INDEX idx_visibility_open_ranges")
    c.execute("CREATE INDEX idx_visibility_open_ranges ON sample_visibility_ranges(sample_id) WHERE last_observation_id IS NULL")
    c.execute("DROP INDEX idx_events_observation_kind")
    c.execute("ALTER TABLE sample_observation_events RENAME TO old_e")
    c.execute("""CREATE TABLE sample_observation_events (observation_id INTEGER NOT NULL, sample_id INTEGER NOT NULL, version_id INTEGER,
      event_kind TEXT NOT NULL, observed_at REAL NOT NULL, evidence_kind TEXT, PRIMARY KEY (observation_id, sample_id, event_kind)) WITHOUT ROWID""")
    c.execute("INSERT INTO sample_observation_events SELECT observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind FROM old_e")
    c.execute("DROP TABLE old_e")
    c.execute("DROP INDEX IF EXISTS idx_events_sample")
    c.execute("CREATE INDEX idx_events_sample ON sample_observation_events(sample_id, observation_id)")
    c.execute("DROP INDEX idx_samples_uuid_hash")
    c.execute("CREATE INDEX idx_samples_uuid_hash ON samples(sample_uuid_hash) WHERE sample_uuid_hash IS NOT NULL")
    db.commit(); db.execute("VACUUM"); db.close()


def per_sample(p):
    db = sqlite3.connect(p)
    n = db.execute("SELECT count(*) FROM samples").fetchone()[0]
    size = os.path.getsize(p)
    db.close()
    return n, size, size / max(n, 1)


if __name__ == "__main__":
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    v7 = os.path.join(out, "v7.sqlite")
    for f in ("v7.sqlite", "step1.sqlite", "step2.sqlite"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    sqlite3.connect(src).execute(f"VACUUM INTO '{v7}'")
    shutil.copy(v7, os.path.join(out, "step1.sqlite"))
    step1(os.path.join(out, "step1.sqlite"))
    shutil.copy(os.path.join(out, "step1.sqlite"), os.path.join(out, "step2.sqlite"))
    step2(os.path.join(out, "step2.sqlite"))
    for f in ("v7.sqlite", "step1.sqlite", "step2.sqlite"):
        n, size, b = per_sample(os.path.join(out, f))
        print(f"{f}: {n} samples, {size} bytes, {b:.0f} bytes per sample")
