// The SQLite floor of the capture write path, without HealthProbe's code: the statements
// of PageOperations (UUID lookup, sample, seen-set mark, version, event, range), prepared
// once, on the real v2 schema, for N new samples over 8 types in time order.
//
//   .build/debug/hp-node --home /tmp/schema-home init
//   sqlite3 /tmp/schema-home/archive/HealthProbeArchive.sqlite "SELECT sql || ';' FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid" > /tmp/schema.sql
//   gcc -O2 -o /tmp/capture_floor scripts/bench/capture_floor.c -lsqlite3
//   SCHEMA=/tmp/schema.sql /tmp/capture_floor /tmp/floor.sqlite 1000000 50000 1000 64 1 rand 1 1
//
// Arguments: DB N SAMPLES_PER_COMMIT WAL_AUTOCHECKPOINT CACHE_MIB FOREIGN_KEYS(0|1)
// UUIDS(rand|seq|none) SEEN_SET(0|1) UUID_LOOKUP(0|1) [INDEXES_TO_DROP,...]
// Environment: SCHEMA (required), PAGESIZE, RECAPTURE=1 (then an unchanged pass of lookups
// and seen-set marks), BYFP=1 (that pass looks samples up by strict fingerprint),
// CODES=1 (event and evidence kinds as schema 15's integer codes), BYFP's lookup seeks the
// fingerprint's 16-byte prefix as schema 14's index holds it (a filter on earlier schemas),
// BLOB=1 (hashes bound as 32-byte blobs, as schema 9 stores them; without it, 64 hex
// characters as schema 8 and earlier did), REBUILD=1 (the dropped indexes are built again
// from their own SQL before the last commit, timed: the bulk path of a replica's first
// bundle, docs/decisions/2026-11-25-deferred-indexes.md). A replica's first bundle is one
// transaction without lookups or foreign keys:
//   BLOB=1 REBUILD=1 SCHEMA=/tmp/schema.sql /tmp/capture_floor /tmp/floor.sqlite 1000000 1000000 1000 48 0 rand 0 0
//     idx_samples_uuid_hash,idx_samples_first_seen,idx_sample_versions_time,idx_sample_versions_created,idx_events_sample,idx_visibility_open_ranges,idx_visibility_point_lookup
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static uint64_t s = 88172645463325252ULL;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
static void hex(char *out, int n) { static const char *d = "0123456789abcdef"; for (int i = 0; i < n; i++) out[i] = d[rnd() & 15]; out[n] = 0; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void ex(sqlite3 *db, const char *sql) { char *e = 0; if (sqlite3_exec(db, sql, 0, 0, &e) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, e); exit(1); } }
static sqlite3_stmt *prep(sqlite3 *db, const char *sql) { sqlite3_stmt *st; if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, 0) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db)); exit(1); } return st; }
static int blobs = 0;
// Binds a 64-character hex hash as schema 9 stores it (32 bytes) or as text (schema 8).
static void bindhash(sqlite3_stmt *st, int i, const char *h) {
    if (!blobs) { sqlite3_bind_text(st, i, h, 64, SQLITE_TRANSIENT); return; }
    unsigned char b[32];
    for (int k = 0; k < 32; k++) { int hi = h[2 * k], lo = h[2 * k + 1]; b[k] = (unsigned char)(((hi & 15) + 9 * (hi >> 6)) << 4 | ((lo & 15) + 9 * (lo >> 6))); }
    sqlite3_bind_blob(st, i, b, 32, SQLITE_TRANSIENT);
}
static void step(sqlite3_stmt *st) { int rc = sqlite3_step(st); if (rc != SQLITE_DONE && rc != SQLITE_ROW) { fprintf(stderr, "step %d %s\n", rc, sqlite3_errmsg(sqlite3_db_handle(st))); exit(1); } sqlite3_reset(st); }

int main(int argc, char **argv) {
    const char *path = argv[1]; long n = atol(argv[2]); long txn = atol(argv[3]); int ckpt = atoi(argv[4]); int cache = atoi(argv[5]);
    int fk = atoi(argv[6]); const char *umode = argv[7]; int seen = atoi(argv[8]); int lookup = atoi(argv[9]); const char *drop = argc > 10 ? argv[10] : "";
    blobs = getenv("BLOB") != 0;
    char buf[1 << 16]; unlink(path); snprintf(buf, sizeof buf, "%s-wal", path); unlink(buf); snprintf(buf, sizeof buf, "%s-shm", path); unlink(buf);
    sqlite3 *db; sqlite3_open(path, &db); char p0[128];
    if (!getenv("SCHEMA")) { fprintf(stderr, "set SCHEMA to the schema file\n"); return 2; }
    FILE *f = fopen(getenv("SCHEMA"), "r"); if (!f) { perror(getenv("SCHEMA")); return 2; } size_t len = fread(buf, 1, sizeof buf - 1, f); buf[len] = 0; fclose(f);
    if (getenv("PAGESIZE")) { snprintf(p0, sizeof p0, "PRAGMA page_size=%s", getenv("PAGESIZE")); ex(db, p0); }
    ex(db, "PRAGMA journal_mode=WAL"); ex(db, "PRAGMA synchronous=NORMAL");
    ex(db, buf);
    char p[256];
    snprintf(p, sizeof p, "PRAGMA foreign_keys=%d", fk); ex(db, p);
    snprintf(p, sizeof p, "PRAGMA cache_size=-%d", cache * 1024); ex(db, p);
    snprintf(p, sizeof p, "PRAGMA wal_autocheckpoint=%d", ckpt); ex(db, p);
    ex(db, "PRAGMA temp_store=FILE; PRAGMA temp.cache_size=-16384");
    static char recreate[16][1024]; int nrec = 0;
    if (*drop) { char d[1024]; strcpy(d, drop); for (char *t = strtok(d, ","); t; t = strtok(0, ",")) {
        sqlite3_stmt *q = prep(db, "SELECT sql FROM sqlite_schema WHERE name = ?"); sqlite3_bind_text(q, 1, t, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) == SQLITE_ROW && nrec < 16) snprintf(recreate[nrec++], 1024, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        snprintf(p, sizeof p, "DROP INDEX %s", t); ex(db, p); } }
    ex(db, "INSERT INTO device_chains(id, device_chain_hash, created_at) VALUES (1, 'x', 0)");
    ex(db, "INSERT INTO observations(id, device_chain_id, observed_at, status, trigger_reason, schema_version) VALUES (1, 1, 0, 'running', 'bench', 7)");
    for (int t = 1; t <= 8; t++) { snprintf(p, sizeof p, "INSERT INTO sample_types(id, type_identifier) VALUES (%d, 'T%d')", t, t); ex(db, p); }
    ex(db, "INSERT INTO sources(id, bundle_identifier) VALUES (1, 'b'); INSERT INTO source_revisions(id, source_id) VALUES (1, 1); INSERT INTO hk_devices(id, device_hash) VALUES (1, 'd')");
    ex(db, "CREATE TEMP TABLE hp_run_seen(type_run_id INTEGER NOT NULL, sample_id INTEGER NOT NULL, PRIMARY KEY (type_run_id, sample_id)) WITHOUT ROWID");
    sqlite3_stmt *byUUID = !lookup && !getenv("RECAPTURE") ? 0 : prep(db, "SELECT s.id, r.version_id, v.payload_hash FROM samples s INDEXED BY idx_samples_uuid_hash LEFT JOIN sample_visibility_ranges r ON r.sample_id = s.id AND +r.last_observation_id IS NULL LEFT JOIN sample_versions v ON v.id = r.version_id WHERE s.sample_uuid_hash = ? AND s.sample_type_id = ? ORDER BY s.id LIMIT 1");
    sqlite3_stmt *ins = prep(db, "INSERT OR IGNORE INTO samples(sample_type_id, sample_uuid_hash, strict_fingerprint, semantic_fingerprint, first_seen_observation_id, first_seen_at) VALUES (?, ?, ?, NULL, 1, 0)");
    sqlite3_stmt *mark = prep(db, "INSERT OR IGNORE INTO temp.hp_run_seen(type_run_id, sample_id) VALUES (?, ?)");
    sqlite3_stmt *ver = prep(db, "INSERT INTO sample_versions(sample_id, payload_hash, start_date, end_date, value_kind, numeric_value, unit, category_value, workout_activity_type, duration_seconds, source_revision_id, hk_device_id, metadata_id, created_observation_id, creation_date) VALUES (?, ?, ?, ?, 'quantity', ?, 'count/min', NULL, NULL, NULL, 1, 1, NULL, 1, NULL)");
    // Schema 15 stores the kinds as codes (appeared 0, reported 0); earlier schemas as names.
    sqlite3_stmt *ev = prep(db, getenv("CODES")
        ? "INSERT OR IGNORE INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind) VALUES (1, ?, ?, 0, 0, 0)"
        : "INSERT OR IGNORE INTO sample_observation_events(observation_id, sample_id, version_id, event_kind, observed_at, evidence_kind) VALUES (1, ?, ?, 'appeared', 0, 'reported')");
    sqlite3_stmt *rg = prep(db, "INSERT OR IGNORE INTO sample_visibility_ranges(sample_id, version_id, first_observation_id, last_observation_id, first_seen_at, last_seen_at) VALUES (?, ?, 1, NULL, 0, NULL)");
    sqlite3_stmt *byFP = prep(db, "SELECT s.id, s.sample_uuid_hash, r.version_id, v.payload_hash FROM samples s LEFT JOIN sample_visibility_ranges r ON r.sample_id = s.id AND +r.last_observation_id IS NULL LEFT JOIN sample_versions v ON v.id = r.version_id WHERE s.sample_type_id = ?1 AND substr(s.strict_fingerprint, 1, 16) = substr(?2, 1, 16) AND s.strict_fingerprint = ?2");
    double t0 = now(); long per = n / 8; long inTxn = 0; long k = 0;
    ex(db, "BEGIN");
    for (int t = 1; t <= 8; t++) for (long i = 0; i < per; i++, k++) {
        char u[65], fp[65], ph[65];
        if (!strcmp(umode, "seq")) snprintf(u, sizeof u, "%016lx%048d", k, 0); else hex(u, 64);
        snprintf(fp, 17, "%016lx", (unsigned long)(1700000000000L + i * 60000)); hex(fp + 16, 48); hex(ph, 64);
        if (lookup) { bindhash(byUUID, 1, u); sqlite3_bind_int(byUUID, 2, t); step(byUUID); }
        sqlite3_bind_int(ins, 1, t);
        if (!strcmp(umode, "none")) sqlite3_bind_null(ins, 2); else bindhash(ins, 2, u);
        bindhash(ins, 3, fp); step(ins);
        sqlite3_int64 sid = sqlite3_last_insert_rowid(db);
        if (seen) { sqlite3_bind_int(mark, 1, t); sqlite3_bind_int64(mark, 2, sid); step(mark); }
        double sd = 1.7e9 + i * 60.0;
        sqlite3_bind_int64(ver, 1, sid); bindhash(ver, 2, ph); sqlite3_bind_double(ver, 3, sd); sqlite3_bind_double(ver, 4, sd + 30); sqlite3_bind_double(ver, 5, 60 + i % 50); step(ver);
        sqlite3_int64 vid = sqlite3_last_insert_rowid(db);
        sqlite3_bind_int64(ev, 1, sid); sqlite3_bind_int64(ev, 2, vid); step(ev);
        sqlite3_bind_int64(rg, 1, sid); sqlite3_bind_int64(rg, 2, vid); step(rg);
        if (++inTxn == txn) { ex(db, "COMMIT"); ex(db, "BEGIN"); inTxn = 0; }
    }
    double tb = now();
    if (getenv("REBUILD")) for (int r = 0; r < nrec; r++) ex(db, recreate[r]);
    if (getenv("REBUILD")) fprintf(stderr, "index rebuild %.2f s\n", now() - tb);
    ex(db, "COMMIT");
    double secs = now() - t0;
    if (getenv("RECAPTURE")) {
        s = 88172645463325252ULL; double t1 = now(); k = 0; ex(db, "BEGIN"); inTxn = 0;
        ex(db, "DELETE FROM temp.hp_run_seen");
        for (int t = 1; t <= 8; t++) for (long i = 0; i < per; i++, k++) {
            char u[65], fp[65], ph[65];
            if (!strcmp(umode, "seq")) snprintf(u, sizeof u, "%016lx%048d", k, 0); else hex(u, 64);
            snprintf(fp, 17, "%016lx", (unsigned long)(1700000000000L + i * 60000)); hex(fp + 16, 48); hex(ph, 64);
            if (getenv("BYFP")) { sqlite3_bind_int(byFP, 1, t); bindhash(byFP, 2, fp); if (sqlite3_step(byFP) != SQLITE_ROW) { fprintf(stderr, "miss fp\n"); exit(1); } sqlite3_reset(byFP); }
            else {
            bindhash(byUUID, 1, u); sqlite3_bind_int(byUUID, 2, t);
            if (sqlite3_step(byUUID) != SQLITE_ROW) { fprintf(stderr, "miss\n"); exit(1); }
            sqlite3_reset(byUUID); }
            sqlite3_int64 sid = k + 1;
            if (seen) { sqlite3_bind_int(mark, 1, t); sqlite3_bind_int64(mark, 2, sid); step(mark); }
            if (++inTxn == txn) { ex(db, "COMMIT"); ex(db, "BEGIN"); inTxn = 0; }
        }
        ex(db, "COMMIT");
        double s2 = now() - t1;
        printf("recapture: %.2f s = %.0f samples/s (%.2f us/sample)\n", s2, n / s2, s2 / n * 1e6);
    }

    printf("blob=%d ps=%s n=%ld txn=%ld ckpt=%d cache=%d fk=%d uuid=%s seen=%d lookup=%d drop=%s: %.2f s = %.0f samples/s (%.1f us/sample)\n", blobs, getenv("PAGESIZE") ? getenv("PAGESIZE") : "4096", n, txn, ckpt, cache, fk, umode, seen, lookup, drop, secs, n / secs, secs / n * 1e6);
    return 0;
}
