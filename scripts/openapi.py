#!/usr/bin/env python3
"""Writes docs/openapi.json, the description of /api/v1: edit here, then run
`scripts/openapi.py > docs/openapi.json`. scripts/test-browser runs schemathesis against it."""
import json
def ref(n): return {"$ref": f"#/components/schemas/{n}"}
S = lambda **p: {"type": "object", "properties": p, "required": list(p.keys()), "additionalProperties": False}
def opt(schema): return {"anyOf": [schema, {"type": "null"}]}
# A positive 64-bit id or sequence: the server parses these as Int64 and answers 400 beyond.
pos_int = {"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}
string = {"type": "string"}; integer = {"type": "integer"}; number = {"type": "number"}; boolean = {"type": "boolean"}
date = {"type": "string", "description": "ISO 8601 UTC with milliseconds"}
hexhash = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
subject = {"type": "string", "pattern": "^([0-9a-f]{64}|server)$", "description": "Device chain hash, or `server` for the server-level alerts (admins only)"}
name = {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$", "description": "1 to 64 ASCII letters, digits, '.', '_' or '-'"}
arr = lambda s: {"type": "array", "items": s}
def optional_keys(schema, keys):
    # Optional values are omitted from the JSON when absent (Swift's encoder skips nil).
    schema["required"] = [k for k in schema["required"] if k not in keys]
    return schema
schemas = {
 "Error": S(error={"type": "string", "enum": ["unauthenticated", "forbidden", "not_found", "bad_request", "csrf", "throttled", "conflict", "method_not_allowed"]}, message=string),
 "Login": {"type": "object", "properties": {"name": string, "password": string}, "required": ["name", "password"]},
 "Session": S(person=string, role={"type": "string", "enum": ["admin", "member", "viewer"]}, csrf_token=string),
 "Me": S(name=string, role={"type": "string", "enum": ["admin", "member", "viewer"]}, devices=arr(string)),
 "Alert": optional_keys(S(kind={"type": "string", "enum": ["refused_bundles", "clock_skew", "disappeared", "loss", "verification_problem", "not_verified", "replaced_device"]}, message=string, link=string), ["link"]),
 "Glance": optional_keys(S(state={"type": "string", "enum": ["up_to_date", "needs_attention", "loss_found"]}, label=string, reason=string, fix=string, link=string), ["reason", "fix", "link"]),
 "Verification": S(checked_at=date, mode={"type": "string", "enum": ["quick", "full"]}, ok=boolean, problems=arr(string)),
 "DeviceStatus": optional_keys(S(state={"type": "string", "enum": ["syncing", "silent", "refused", "revoked", "never"]}, label=string, needs_action=boolean, since=date, reason=string, fix=string,
                 refusal_code=string), ["since", "refusal_code"]),
 "ChainCard": optional_keys(S(chain=hexhash, chain_short=string, device=string, person=string, last_sync_at=date, device_state=ref("DeviceStatus"), clock_offset_seconds=number,
                 bundles=integer, visible_records=integer, types=integer, latest_observation_id=integer, latest_observed_at=date,
                 latest_status=string, verification=ref("Verification"), alerts=arr(ref("Alert")), glance=ref("Glance"), last_sync_ago=string, clock_in_words=string),
                 ["device", "person", "last_sync_at", "clock_offset_seconds", "latest_observation_id", "latest_observed_at", "latest_status", "verification", "glance", "last_sync_ago", "clock_in_words"]),
 "PersonChains": S(person=string, chains=arr(ref("ChainCard"))),
 "Overview": S(signed_in_as=string, role=string, people=arr(ref("PersonChains"))),
 "TypeRow": optional_keys(S(type_identifier=string, type_name=string, unit=string, visible_records=integer, earliest_start=date, latest_end=date, value_sum=number, value_max=number),
                 ["unit", "earliest_start", "latest_end", "value_sum", "value_max"]),
 "TimelineRow": S(observation_id=integer, observed_at=date, status=string, trigger=string, type_runs=integer, appeared=integer, disappeared=integer, changed=integer),
 "ChainPage": optional_keys(S(card=ref("ChainCard"), timeline=arr(ref("TimelineRow")), next_after=integer, types=arr(ref("TypeRow"))), ["next_after"]),
 "TypeChange": optional_keys(S(type_identifier=string, type_name=string, run_status=string, appeared=integer, disappeared=integer, changed=integer, visible_after=integer,
                 verdict={"type": "string", "enum": ["unavailable", "loss", "uncertain", "consolidation", "restored", "duplication", "edits", "growth", "no_change", "first"]},
                 reasons=arr(string), labels=arr(string), uncertainty=arr(string), lost_records=integer, consolidated_records=integer, uncertain_records=integer, evidence=string),
                 ["run_status", "visible_after"]),
 "ObservationPage": optional_keys(S(loss_types=arr(string), loss_type_names=string, has_loss=boolean, chain=hexhash, observation_id=integer, observed_at=date, status=string, previous_observation_id=integer,
                 changes=arr(ref("TypeChange")), many_types_shifting=boolean, capture_window=string, late_types=arr(ref("LateType"))), ["previous_observation_id", "capture_window"]),
 "LateType": S(type_identifier=string, type_name=string, late_seconds=number, words=string),
 "VisibleRecord": optional_keys(S(type_identifier=string, type_name=string, start=date, local_start={"type": "string", "description": "the start in the device's local time, YYYY-MM-DD HH:mm"},
                                  end=date, value=string, payload_hash=hexhash, visible_since=integer), ["type_name", "local_start"]),
 "DisappearedRow": optional_keys(S(sample_id=integer, type_identifier=string, type_name=string, local_time=string, start=date, value=string, source=string,
                                    evidence={"type": "string", "enum": ["reported", "full_scan_absent", "hk_deleted_object"]}, why=string), ["source"]),
 "DisappearedPage": optional_keys(S(chain=hexhash, observation_id=integer, type_identifier=string, zone=string, records=arr(ref("DisappearedRow")), next_after=integer), ["type_identifier", "next_after"]),
 "VisiblePage": optional_keys(S(chain=hexhash, observation_id=integer, type_identifier=string, records=arr(ref("VisibleRecord")), next=string,
                                zone={"type": "string", "description": "the time zone local times are in"}), ["type_identifier", "next", "zone"]),
 "Day": optional_keys(S(day=string, start=number, records=integer, value_sum=number, value_max=number, source_revisions=integer), ["value_sum", "value_max"]),
 "StateTime": S(value=integer, name=string, seconds=number, spans_others=boolean),
 "StateDay": S(day=string, start=number, records=integer, states=arr(ref("StateTime"))),
 "TypeSeries": optional_keys(S(chain=hexhash, chain_short=string, device=string, person=string, type_identifier=string, observation_id=integer,
                 clock_offset_seconds=number, days=arr(ref("Day")), state_days=arr(ref("StateDay"))), ["device", "person", "observation_id", "clock_offset_seconds", "state_days"]),
 "Overlap": S(chains=arr(hexhash), identical_records=integer),
 "TypeAcross": optional_keys(S(type_identifier=string, series=arr(ref("TypeSeries")), overlaps=arr(ref("Overlap")),
                 overlaps_counted_at={**date, "description": "When the overlaps were counted (ISO 8601 UTC with milliseconds); absent while a first count is under way"},
                 overlaps_current={**boolean, "description": "Whether that count includes the latest bundle of every chain shown; false while it is counted again after a sync of one of them"},
                 overlaps_count_failed={**boolean, "description": "Whether the last attempt to count them again failed (the server's log says why)"}),
                 ["overlaps_counted_at"]),
 "DiffTypeCount": S(type_identifier=string, appeared=integer, disappeared=integer, changed=integer),
 "DiffRow": optional_keys(S(sample_id=integer, type_identifier=string, type_name=string, kind={"type": "string", "enum": ["appeared", "disappeared", "changed"]}, before=string, after=string), ["before", "after"]),
 "DiffPage": optional_keys(S(chain=hexhash, **{"from": integer}, to=integer, counts=arr(ref("DiffTypeCount")), rows=arr(ref("DiffRow")), next_after=integer), ["next_after"]),
 "Share": S(chain=hexhash, shared_with=arr(string)),
 "Person": S(id=integer, name=string, role={"type": "string", "enum": ["admin", "member", "viewer"]}, created_at=number, has_password=boolean, devices=arr(string)),
 "NewPerson": {"type": "object", "properties": {"name": name, "role": {"type": "string", "enum": ["admin", "member", "viewer"]}, "password": {"type": "string", "minLength": 12, "maxLength": 256}}, "required": ["name", "role", "password"]},
 "Device": optional_keys(S(name=string, created_at=number, enrolled_at=number, revoked_at=number, chains=arr(hexhash), person=string,
                          state={"type": "string", "enum": ["enrolled", "revoked", "token_issued", "token_expired", "restore_token_issued", "restoring", "restore_token_stale", "replaced"],
                                 "description": "enrolled; revoked; an enrollment token not redeemed yet, or expired unused; a restore token not redeemed yet; "
                                                "redeemed, restoring until the device takes its chain over; stale: the chain moved to another device after the "
                                                "restore token was issued, so it takes nothing; replaced: a replacement device took its chain over "
                                                "and it holds none (revoke it)"},
                          token_expires_at={"type": "number", "description": "When the unused enrollment token stops working (Unix seconds)"},
                          restore_chain={**hexhash, "description": "The chain the device's restore token names, until the device takes it over"},
                          replaced_by={**name, "description": "The device that took a chain over from this one with a restore token"},
                          advice={"type": "string", "description": "What an administrator does about the device, when its state asks for something"}),
                         ["enrolled_at", "revoked_at", "person", "token_expires_at", "restore_chain", "replaced_by", "advice"]),
 "NewToken": {"type": "object", "properties": {"device": name, "person": name}, "required": ["device", "person"]},
 "Token": S(device=string, token=string, command=string),
 "VerifyRequest": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["quick", "full"]}}, "required": ["mode"]},
 "Check": S(name=string, status={"type": "string", "enum": ["ok", "problem", "skipped", "notice"]}, detail=string),
 "ChainReport": S(chain=hexhash, bundles=integer, checks=arr(ref("Check"))),
 "AlertState": optional_keys(S(chain=subject, condition={"type": "string", "enum": ["silent", "refused", "verification_failed", "loss_found", "disk_space_low", "certificate_expiring", "delivery_failing", "backup_failing"]},
                 state={"type": "string", "enum": ["firing", "resolved"]}, detail=string, fired_at=number, last_reminded_at=number,
                 acknowledged_by=string, acknowledged_at=number, snoozed_until=number, resolved_at=number),
                 ["fired_at", "last_reminded_at", "acknowledged_by", "acknowledged_at", "snoozed_until", "resolved_at"]),
 "AlertChannel": optional_keys(S(id=integer, person=string, kind={"type": "string", "enum": ["webhook", "ntfy", "email"]}, target=string,
                 secret_hint=string, created_at=number), ["secret_hint"]),
 # A webhook or ntfy channel takes an http(s) URL with a host; an email channel an address.
 "NewAlertChannel": {"oneOf": [
     {"type": "object", "properties": {"kind": {"type": "string", "enum": ["webhook", "ntfy"]},
                                       "target": {"type": "string", "maxLength": 2048, "pattern": "^https?://[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*(/[A-Za-z0-9._~-]*)*$"},
                                       "secret": {"type": "string", "nullable": True, "minLength": 16, "maxLength": 256, "pattern": "^[\\x21-\\x7e]+$", "description": "absent or null: one is generated"}}, "required": ["kind", "target"]},
     {"type": "object", "properties": {"kind": {"type": "string", "enum": ["email"]},
                                       "target": {"type": "string", "maxLength": 254, "pattern": "^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$"}}, "required": ["kind", "target"]}]},
 "AuditEntry": optional_keys(S(id=integer, at=number, actor=string, via={"type": "string", "enum": ["web", "api", "cli", "device"]},
                 action={"type": "string", "enum": ["person.add", "person.role", "person.password", "person.remove", "device.token", "device.revoke",
                                                    "device.give", "chain.share", "chain.unshare", "verify",
                                                    "alert.channel.add", "alert.channel.remove", "alert.ack", "alert.snooze",
                                                    "chain.restore_token", "chain.transfer", "server.adopt"]}, target=string, detail=string), ["target"]),
}
def resp(schema, code="200", desc="OK"):
    return {code: {"description": desc, "content": {"application/json": {"schema": schema}}}}
errors = {c: {"description": d, "content": {"application/json": {"schema": ref("Error")}}} for c, d in
          [("400", "Bad request"), ("401", "Not signed in"), ("403", "Not allowed, or CSRF"), ("404", "Not found, or not readable by this person"),
           ("405", "Method not allowed on this path"), ("409", "Already exists")]}
chain_p = {"name": "chain", "in": "path", "required": True, "schema": hexhash, "description": "Device chain hash"}
subject_p = {"name": "chain", "in": "path", "required": True, "schema": subject, "description": "Device chain hash, or `server` for the server-level alerts (admins only; others get 404)"}
obs_p = {"name": "observation", "in": "path", "required": True, "schema": pos_int}
type_p = {"name": "type", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_:]{1,128}$"}}
# An empty optional query value counts as absent (an HTML form's "all types" sends `type=`).
type_q = {"type": "string", "pattern": "^([A-Za-z0-9_:]{1,128})?$", "description": "a HealthKit type identifier; empty: all types"}
q = lambda n, s, req=False: {"name": n, "in": "query", "required": req, "schema": s}
# A chart's time range: a preset counted back from today, or local dates (both inclusive); from/to win over range.
local_date = {"type": "string", "format": "date", "description": "a local date YYYY-MM-DD of the device"}
range_ps = [q("range", {"type": "string", "enum": ["7d", "30d", "90d", "1y", "all"]}), q("from", local_date), q("to", local_date)]
csrf = None
def op(summary, params=None, ok=None, body=None, code="200", extra=None):
    changes = csrf in (params or [])
    o = {"summary": summary, "parameters": [p for p in (params or []) if p is not None], "responses": {**(ok or {}), **errors}}
    if changes: o["security"] = [{"session": [], "csrf": []}]
    if body: o["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return o
def op_id(operation_id, *args, **kwargs):
    o = op(*args, **kwargs)
    o["operationId"] = operation_id
    return o

paths = {
 "/api/v1/session": {
   "post": {**op("Sign in: starts a session (cookie __Host-hp_session) and returns its CSRF token", ok=resp(ref("Session"), "201", "Signed in"), body=ref("Login")), "security": []},
   "delete": op("Sign out", [csrf], ok={"204": {"description": "Signed out"}})},
 "/api/v1/me": {"get": op("The signed-in person", ok=resp(ref("Me")))},
 "/api/v1/overview": {"get": op("Every chain the person may read, grouped by person", ok=resp(ref("Overview")))},
 "/api/v1/chains/{chain}": {"get": op("A chain: card, a page of its observation timeline, its types now", [chain_p, q("after", pos_int)], ok=resp(ref("ChainPage")))},
 "/api/v1/chains/{chain}/observations/{observation}": {"get": op("One observation's changes per type, classified against the previous observation", [chain_p, obs_p], ok=resp(ref("ObservationPage")))},
 "/api/v1/chains/{chain}/observations/{observation}/disappeared": {"get": op("A page of the records that disappeared at the observation: type name, the device's local time, value with unit, source, why", [chain_p, obs_p, q("type", type_q), q("after", pos_int)], ok=resp(ref("DisappearedPage")))},
 "/api/v1/chains/{chain}/observations/{observation}/visible": {"get": op("A page of what was visible at the observation", [chain_p, obs_p, q("type", type_q), q("cursor", {"type": "string", "pattern": "^([1-9][0-9]{0,17}:[0-9a-f]{64})?$", "description": "a page's `next`: where the next page starts (a type and a sample's fingerprint); empty: the first page"}), q("from", local_date), q("to", local_date)], ok=resp(ref("VisiblePage")))},
 "/api/v1/chains/{chain}/types/{type}": {"get": op("A type's days in one chain, as of an observation (default: the latest), within a time range of the device's local days", [chain_p, type_p, q("at", pos_int)] + range_ps, ok=resp(ref("TypeSeries")))},
 "/api/v1/types/{type}": {"get": op("A type's days in every chain the person may read, side by side, with overlaps, within a time range of each device's local days", [type_p] + range_ps, ok=resp(ref("TypeAcross")))},
 "/api/v1/chains/{chain}/diff": {"get": op("A page of the diff between two observations of the chain", [chain_p, q("from", pos_int, True), q("to", pos_int, True), q("kind", {"type": "string", "enum": ["appeared", "disappeared", "changed"]}), q("after", pos_int)], ok=resp(ref("DiffPage")))},
 "/api/v1/chains/{chain}/export": {"get": op("A verifiable export of the chain at an observation (docs/export-format.md), made from the replica; X-HP-Manifest-Hash names its manifest hash",
   [chain_p, q("kind", {"type": "string", "enum": ["records", "records_csv", "summary", "diff"]}, True), q("at", pos_int),
    q("from", pos_int), q("to", pos_int)],
   ok={"200": {"description": "The export file (export_format_version 2: records carry display_name, display_unit, local_day and lateness_seconds; archive.capture names a capture's windows per type): JSON, or for records_csv a zip of the CSV, its relationships CSV and its manifest; a diff is from `from` to `to`, which default to the observation before `to` and to the latest observation (the latest change)", "headers": {"X-HP-Manifest-Hash": {"schema": hexhash}, "X-HP-Record-Count": {"schema": {"type": "string"}}},
               "content": {"application/json": {"schema": {"type": "object"}}, "application/zip": {"schema": {"type": "string", "format": "binary"}}}}})},
 "/api/v1/chains/{chain}/shares/{person}": {
   "put": op("Share the chain with a person (admins; members for their own chains)", [chain_p, {"name": "person", "in": "path", "required": True, "schema": name}, csrf], ok=resp(ref("Share"))),
   "delete": op("Take the chain back from a person", [chain_p, {"name": "person", "in": "path", "required": True, "schema": name}, csrf], ok=resp(ref("Share")))},
 "/api/v1/alerts": {"get": op("Alerts (firing and resolved) on the chains the person may read (docs/alerts.md)", ok=resp(arr(ref("AlertState"))))},
 "/api/v1/alerts/{chain}/{condition}/ack": {"post": {**op("Acknowledge a firing alert: no reminders until it resolves", [subject_p, {"name": "condition", "in": "path", "required": True, "schema": {"type": "string", "enum": ["silent", "refused", "verification_failed", "loss_found", "disk_space_low", "certificate_expiring", "delivery_failing", "backup_failing"]}}, csrf], ok={"204": {"description": "Acknowledged"}}),
   # The body is optional: without fired_at whatever fires now is acknowledged; with it a newer firing is a 409.
   "requestBody": {"required": False, "content": {"application/json": {"schema": {"type": "object", "properties": {"fired_at": {"type": "number", "minimum": 0, "description": "The fired_at the client was shown (GET /api/v1/alerts); if the alert fired again since, 409"}}}}}}}},
 "/api/v1/alerts/{chain}/{condition}/snooze": {"post": op("Snooze a firing alert for 1 to 720 hours", [subject_p, {"name": "condition", "in": "path", "required": True, "schema": {"type": "string", "enum": ["silent", "refused", "verification_failed", "loss_found", "disk_space_low", "certificate_expiring", "delivery_failing", "backup_failing"]}}, csrf], ok={"204": {"description": "Snoozed"}},
   body={"type": "object", "properties": {"hours": {"type": "integer", "minimum": 1, "maximum": 720}}, "required": ["hours"]})},
 "/api/v1/alerts/channels": {"get": op("The person's own alert channels (secrets only as a hint)", ok=resp(arr(ref("AlertChannel")))),
   "post": op("Add an alert channel for the person (a webhook without a secret gets a generated one)", [csrf], ok=resp(ref("AlertChannel"), "201", "Added"), body=ref("NewAlertChannel"))},
 "/api/v1/alerts/channels/{id}": {"delete": op("Remove one of the person's alert channels", [{"name": "id", "in": "path", "required": True, "schema": pos_int}, csrf],
   ok={"204": {"description": "Removed"}})},
 "/api/v1/admin/people": {"get": op("People (admin)", ok=resp(arr(ref("Person")))), "post": op("Add a person (admin)", [csrf], ok=resp(ref("Person"), "201", "Added"), body=ref("NewPerson"))},
 "/api/v1/admin/people/{person}": {"delete": op_id("removePerson", "Remove a person without devices (admin; the last admin stays: 409)", [{"name": "person", "in": "path", "required": True, "schema": name}, csrf], ok={"204": {"description": "Removed"}})},
 "/api/v1/admin/people/{person}/role": {"put": op_id("setPersonRole", "Change a person's role (admin; the last admin keeps it, a person with devices cannot become a viewer: 409)", [{"name": "person", "in": "path", "required": True, "schema": name}, csrf], ok=resp(ref("Person")), body={"type": "object", "properties": {"role": {"type": "string", "enum": ["admin", "member", "viewer"]}}, "required": ["role"]})},
 "/api/v1/admin/people/{person}/password": {"put": op_id("setPersonPassword", "Set a person's password (admin)", [{"name": "person", "in": "path", "required": True, "schema": name}, csrf], ok={"204": {"description": "Set"}}, body={"type": "object", "properties": {"password": {"type": "string", "minLength": 12, "maxLength": 256}}, "required": ["password"]})},
 "/api/v1/admin/devices": {"get": op("Devices (admin)", ok=resp(arr(ref("Device"))))},
 "/api/v1/admin/tokens": {"post": op("Issue a one-time enrollment token (admin)", [csrf], ok=resp(ref("Token"), "201", "Issued"), body=ref("NewToken"))},
 "/api/v1/admin/devices/{device}/revoke": {"post": op("Revoke a device (admin)", [{"name": "device", "in": "path", "required": True, "schema": name}, csrf], ok={"204": {"description": "Revoked"}})},
 "/api/v1/admin/verify": {"post": op("Verify every chain (admin)", [csrf], ok=resp(arr(ref("ChainReport"))), body=ref("VerifyRequest"))},
 "/api/v1/admin/audit": {"get": op("The audit log, newest first: every admin and sharing action from the web, the API and the CLI (admin)",
                                    [{"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                                     {"name": "before", "in": "query", "required": False, "schema": pos_int}],
                                    ok=resp(arr(ref("AuditEntry"))))},
}
# A person created by POST is addressed by name, not id.
created = paths["/api/v1/admin/people"]["post"]["responses"]["201"]
created["links"] = {k: {"operationId": k, "parameters": {"person": "$response.body#/name"}}
                    for k in ["setPersonRole", "setPersonPassword", "removePerson"]}

doc = {"openapi": "3.0.3",
       "info": {"title": "HealthProbe household server API", "version": "1",
                "description": "What the dashboard shows, as JSON with snake_case keys. Sign in with POST /api/v1/session; the session cookie authenticates later calls, and every change carries X-CSRF-Token. A chain that does not exist and one the person may not read both answer 404. Dates are ISO 8601 UTC with milliseconds; hashes are lower-case hex. docs/dashboard.md."},
       "servers": [{"url": "https://127.0.0.1:8447"}],
       "components": {"schemas": schemas, "securitySchemes": {"session": {"type": "apiKey", "in": "cookie", "name": "__Host-hp_session"},
                                                             "csrf": {"type": "apiKey", "in": "header", "name": "X-CSRF-Token", "description": "csrf_token from POST /api/v1/session; required on every change"}}},
       "security": [{"session": []}],
       "paths": paths}
# OpenAPI 3.0 has no null type: optional values are simply omitted.
print(json.dumps(doc, indent=2, sort_keys=False))
