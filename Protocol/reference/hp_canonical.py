#!/usr/bin/env python3
"""Reference implementation of HealthProbe canonical JSON (RFC 8785) and the
hp:v2 hashes, written from docs/hashing.md alone. It generates
Protocol/vectors/hashing.json; the Swift tests check the product against it.

Usage: python3 Protocol/reference/hp_canonical.py > Protocol/vectors/hashing.json
       python3 Protocol/reference/hp_canonical.py verify-bundle FILE [MANIFEST_HASH]
       python3 Protocol/reference/hp_canonical.py chain-digests BUNDLE_1 BUNDLE_2 ...
       python3 Protocol/reference/hp_canonical.py verify-export FILE
"""
import base64, hashlib, hmac, json, math, os, re, struct, sys
from datetime import datetime, timezone


def es_number(x: float) -> str:
    """ECMAScript Number.prototype.toString(x), as RFC 8785 requires."""
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("NaN/Infinity are not JSON")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))  # shortest round-trip digits
    mant, _, exp = r.partition("e")
    exp = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    digits = ip + fp
    n = len(ip) + exp
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    s = stripped.rstrip("0") or "0"
    k = len(s)
    if k <= n <= 21:
        out = s + "0" * (n - k)
    elif 0 < n <= 21:
        out = s[:n] + "." + s[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + s
    else:
        e = n - 1
        out = s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


def es_string(s: str) -> str:
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"': out.append('\\"')
        elif ch == "\\": out.append("\\\\")
        elif ch == "\b": out.append("\\b")
        elif ch == "\t": out.append("\\t")
        elif ch == "\n": out.append("\\n")
        elif ch == "\f": out.append("\\f")
        elif ch == "\r": out.append("\\r")
        elif c < 0x20: out.append("\\u%04x" % c)
        else: out.append(ch)
    out.append('"')
    return "".join(out)


def canonical(v) -> str:
    if v is None: return "null"
    if v is True: return "true"
    if v is False: return "false"
    if isinstance(v, (int, float)): return es_number(float(v))
    if isinstance(v, str): return es_string(v)
    if isinstance(v, list): return "[" + ",".join(canonical(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(es_string(k) + ":" + canonical(v[k]) for k in keys) + "}"
    raise TypeError(type(v))


def iso(seconds: float) -> str:
    ms = round(seconds * 1000)
    dt = datetime.fromtimestamp(ms // 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (ms % 1000)


def norm_date(seconds: float) -> float:
    return round(seconds * 1000) / 1000


def sha(domain: str, data: bytes) -> str:
    return hashlib.sha256(b"hp:v2:" + domain.encode() + b":" + data).hexdigest()


def mac(key: bytes, domain: str, text: str) -> str:
    return hmac.new(key, b"hp:v2:" + domain.encode() + b":" + text.encode(), hashlib.sha256).hexdigest()


def clean(s):
    if s is None: return None
    s = s.strip()
    return s or None


def clean_os(s):
    s = clean(s)
    if s is None or all(c in "0." for c in s): return None
    return s


def sample_hashes(secret: bytes, type_id: str, raw: dict) -> dict:
    """Normalizes a raw sample and returns every hash docs/hashing.md defines."""
    out = {}
    uuid = clean(raw.get("uuid"))
    out["uuid_hash"] = mac(secret, "sample_uuid", uuid.upper()) if uuid else None
    src = raw.get("source") or {}
    name, bundle = clean(src.get("name")), clean(src.get("bundle_identifier"))
    source = revision = bundle_hash = None
    if name or bundle:
        source = {"bundle_identifier": bundle, "name_hash": mac(secret, "source_name", name) if name else None}
        revision = {"operating_system_version": clean_os(src.get("operating_system_version")),
                    "product_type": clean(src.get("product_type")), "version": clean(src.get("version"))}
        bundle_hash = sha("source_bundle", bundle.encode()) if bundle else None
    dev = raw.get("device")
    device_hash = None
    if dev:
        fields = {"name": clean(dev.get("name")), "manufacturer": clean(dev.get("manufacturer")),
                  "model": clean(dev.get("model")), "hardware_version": clean(dev.get("hardware_version")),
                  "firmware_version": clean(dev.get("firmware_version")),
                  "software_version": clean_os(dev.get("software_version")),
                  "local_identifier": clean(dev.get("local_identifier")),
                  "udi_device_identifier": clean(dev.get("udi_device_identifier"))}
        if any(v is not None for v in fields.values()):
            out["device_json"] = canonical(fields)
            device_hash = mac(secret, "device", out["device_json"])
    out["device_hash"] = device_hash
    meta = raw.get("metadata")
    metadata_hash = None
    if meta:
        out["metadata_json"] = canonical(meta)
        metadata_hash = sha("metadata", out["metadata_json"].encode())
    out["metadata_hash"] = metadata_hash
    value = raw.get("numeric_value")
    creation = iso(norm_date(raw["creation"])) if raw.get("creation") is not None else None
    payload = {
        "category_value": raw.get("category_value"), "creation_date": creation, "device_hash": device_hash,
        "duration_seconds": raw.get("duration_seconds"), "end_date": iso(norm_date(raw["end"])),
        "metadata_hash": metadata_hash, "numeric_value": value, "source": source, "source_revision": revision,
        "start_date": iso(norm_date(raw["start"])), "type": type_id, "unit": clean(raw.get("unit")),
        "value_kind": raw["value_kind"], "workout_activity_type": raw.get("workout_activity_type"),
    }
    out["payload_json"] = canonical(payload)
    out["payload_hash"] = sha("payload", out["payload_json"].encode())
    strict = {
        "category_value": raw.get("category_value"), "creation_date": creation, "duration_seconds": raw.get("duration_seconds"),
        "end_date": payload["end_date"], "numeric_value": value, "occurrence": 0,
        "source_bundle_hash": bundle_hash, "start_date": payload["start_date"], "type": type_id,
        "unit": payload["unit"], "value_kind": raw["value_kind"],
        "workout_activity_type": raw.get("workout_activity_type"),
    }
    prefix = "%016x" % ((round(norm_date(raw["start"]) * 1000) + (1 << 63)) % (1 << 64))
    out["strict_fingerprint_json"] = canonical(strict)
    out["strict_fingerprint"] = prefix + sha("strict_fingerprint", out["strict_fingerprint_json"].encode())[:48]
    strict["occurrence"] = 1
    out["strict_fingerprint_occurrence_1"] = prefix + sha("strict_fingerprint", canonical(strict).encode())[:48]
    return out


def bits_to_float(h: str) -> float:
    return struct.unpack(">d", bytes.fromhex(h))[0]


def main():
    numbers = ["0000000000000000", "8000000000000000", "0000000000000001", "8000000000000001",
               "7fefffffffffffff", "ffefffffffffffff", "4340000000000000", "c340000000000000",
               "4430000000000000", "44b52d02c7e14af5", "44b52d02c7e14af6", "44b52d02c7e14af7",
               "444b1ae4d6e2ef4e", "444b1ae4d6e2ef4f", "444b1ae4d6e2ef50", "3eb0c6f7a0b5ed8c",
               "3eb0c6f7a0b5ed8d", "41b3de4355555553", "41b3de4355555554", "41b3de4355555555",
               "41b3de4355555556", "41b3de4355555557", "becbf647612f3696", "43143ff3c1cb0959",
               "3ff0000000000000", "4059000000000000", "3fb999999999999a", "3e7ad7f29abcaf48",
               "3eb0c6f7a0b5ed8d", "4415af1d78b58c40"]
    json_cases = [
        ("rfc8785-3.2.2", '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],'
                          '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}'),
        ("rfc8785-3.2.3-key-order", '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh",'
                                    '"1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}'),
        ("nested", '{"b":[1,{"z":null,"a":"x"}],"a":{"d":-0.0,"c":1e-7}}'),
        ("whitespace-and-escapes", ' { "tab\\t" : "line\\nbreak" , "ctl" : "\\u001f\\u0008" } '),
    ]
    secret = bytes.fromhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
    samples = [
        ("heart-rate-with-uuid", "HKQuantityTypeIdentifierHeartRate", {
            "uuid": "7d3c1f2e-4b5a-4c6d-8e9f-0a1b2c3d4e5f", "start": 1748001600.25, "end": 1748001600.25,
            "value_kind": "quantity", "numeric_value": 72, "unit": "count/min",
            "source": {"name": "Synthetic Watch", "bundle_identifier": "com.apple.health.5E3F1C2A-0000-4000-8000-000000000001",
                       "product_type": "Watch6,1", "version": "10.1", "operating_system_version": "10.1"},
            "device": {"name": "Apple Watch", "manufacturer": "Apple Inc.", "model": "Watch", "hardware_version": "Watch6,1", "software_version": "10.1"},
            "metadata": {"HKMetadataKeyHeartRateMotionContext": 1}}),
        ("steps-no-uuid-unknown-os", "HKQuantityTypeIdentifierStepCount", {
            "start": 1748001600.0004, "end": 1748005200, "creation": 1748005260.5, "value_kind": "quantity", "numeric_value": 1234.5, "unit": " count ",
            "source": {"name": "Synthetic iPhone", "bundle_identifier": "com.example.steps", "operating_system_version": "0.0.0"}}),
        ("sleep-category", "HKCategoryTypeIdentifierSleepAnalysis", {
            "uuid": "A1B2C3D4-0000-4000-8000-000000000002", "start": 1748037600, "end": 1748068200,
            "value_kind": "category", "category_value": 3}),
        ("workout", "HKWorkoutTypeIdentifier", {
            "uuid": "A1B2C3D4-0000-4000-8000-000000000003", "start": 1748019600, "end": 1748022300.5,
            "value_kind": "workout", "numeric_value": 412, "unit": "kcal", "workout_activity_type": 37, "duration_seconds": 2700.5,
            "metadata": {"HKIndoorWorkout": 0, "HKTimeZone": "Europe/Berlin", "nested": {"b": [1, 2.5e-7], "a": "\u00f6"}}}),
    ]
    doc = {
        "description": "HealthProbe canonical JSON (RFC 8785) and hp:v2 hash vectors; see docs/hashing.md. Generated by Protocol/reference/hp_canonical.py.",
        "numbers": [{"bits": b, "canonical": es_number(bits_to_float(b))} for b in numbers],
        "canonical_json": [{"name": n, "input": i, "canonical": canonical(json.loads(i))} for n, i in json_cases],
        "dates": [{"unix_seconds": t, "canonical": iso(t)} for t in
                  [0, 1748001600.25, 1748001600.0004, 1748001600.9995, -1.5, 951782400, 4102444799.999]],
        "sha256": [{"domain": d, "input": i, "hex": sha(d, i.encode())} for d, i in
                   [("payload", ""), ("metadata", '{"HKIndoorWorkout":0}'), ("type_set", '["HKQuantityTypeIdentifierHeartRate"]')]],
        "hmac": [{"key_hex": secret.hex(), "domain": d, "input": i, "hex": mac(secret, d, i)} for d, i in
                 [("sample_uuid", "7D3C1F2E-4B5A-4C6D-8E9F-0A1B2C3D4E5F"), ("source_name", "Synthetic Watch"),
                  ("device_chain", "00" * 32)]],
        "samples": [{"name": n, "secret_hex": secret.hex(), "type": t, "sample": s, "expected": sample_hashes(secret, t, s)}
                    for n, t, s in samples],
    }
    json.dump(doc, sys.stdout, indent=2, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


KINDS = ["observation", "sample_type", "source", "source_revision", "device", "metadata", "new_sample", "sample",
         "version", "event", "range_open", "range_close", "relationship", "type_run"]


def member_table():
    """The member table of Protocol/bundles.md section 4.1, read from the document:
    kind -> [(member path, type)] in document order."""
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bundles.md")
    table, inside = {}, False
    for line in open(doc, encoding="utf-8"):
        if line.startswith("<!-- members:"):
            inside = True
            continue
        if line.startswith("<!-- end of members"):
            break
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if inside and len(cells) == 3 and cells[0] not in ("kind", "---"):
            table.setdefault(cells[0], []).append((cells[1], cells[2]))
    return table


DATE_MIN, DATE_MAX = -2208988800, 7258118400  # 1900-01-01 and 2200-01-01, UTC


def is_date(v):
    """A canonical date (section 4.1): the exact form, a real calendar instant, within the bounds."""
    if not isinstance(v, str) or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", v):
        return False
    try:
        dt = datetime.strptime(v[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return False
    t = (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()
    return DATE_MIN <= t < DATE_MAX


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def type_ok(v, t):
    """Whether value v has type t of the table of section 4.1 (objects: their members are checked apart)."""
    if t.endswith(" or null"):
        if v is None:
            return True
        t = t[: -len(" or null")]
    if t == "hex":
        return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)
    if t == "date":
        return is_date(v)
    if t.startswith("text "):
        return isinstance(v, str) and len(v.encode("utf-8")) <= int(t[5:])
    if t.startswith("integer "):
        lo, hi = (int(x) for x in t[8:].split(".."))
        return is_number(v) and v == math.floor(v) and lo <= v <= hi
    if t == "number":
        return is_number(v)
    if t.startswith("one of "):
        return v in [x.strip() for x in t[7:].split(",")]
    if t.startswith("base64 "):
        if not isinstance(v, str) or len(v) > int(t[7:]) or len(v) % 4:
            return False
        try:
            base64.b64decode(v, validate=True)
            return True
        except Exception:
            return False
    if t.startswith("json-object "):
        if not isinstance(v, str) or len(v.encode("utf-8")) > int(t[12:]):
            return False
        try:
            inner = json.loads(v)
        except Exception:
            return False
        return isinstance(inner, dict) and canonical(inner) == v
    if t == "object":
        return isinstance(v, dict)
    if t.startswith('"'):
        return v == t.strip('"')
    raise ValueError("unknown type in bundles.md: " + t)


def members_ok(item, rows):
    """Exactly the members of the table, each of its type (section 4.1)."""
    def walk(obj, prefix):
        names = {p[len(prefix):] for p, _ in rows if p.startswith(prefix) and "." not in p[len(prefix):]}
        if set(obj) != names:
            return False
        for name in names:
            t = dict(rows)[prefix + name]
            if not type_ok(obj[name], t):
                return False
            if t.split(" or ")[0] == "object" and obj[name] is not None and not walk(obj[name], prefix + name + "."):
                return False
        return True
    return walk(item, "")


def rules_ok(k, v, sequence):
    """The rules between members (section 4.3)."""
    if k == "version":
        p = v["payload"]
        return p["type"] == v["sample"]["type"] and (p["source"] is None) == (p["source_revision"] is None)
    if k == "new_sample":
        p = v["payload"]
        return (p["source"] is None) == (p["source_revision"] is None)
    if k == "event":
        e, ev, has = v["event_kind"], v["evidence_kind"], v["payload_hash"] is not None
        if e in ("appeared", "representation_changed"):
            return ev == "reported" and has
        if e == "disappeared":
            return ev in ("full_scan_absent", "hk_deleted_object")
        return ev == "hk_deleted_object" and not has
    if k == "range_close":
        return v["first_sequence"] < sequence
    if k in ("type_run", "observation"):
        if k == "type_run" and v["error_kind"] is not None and v["status"] not in ("failed", "unauthorized"):
            return False
        if k == "type_run" and (v["verified_visible_count"] is None) == (v["status"] in ("completed", "needs_review")):
            return False
        if v["started_at"] and v["ended_at"] and v["ended_at"] < v["started_at"]:
            return False
    return True


def implied_status(runs):
    """The observation status its type runs imply (section 4.5)."""
    if not runs:
        return "completed"
    if not any(r in ("completed", "needs_review") for r in runs):
        return "failed"
    if "failed" in runs or "interrupted" in runs:
        return "partial_failed"
    if "unauthorized" in runs:
        return "partial_unauthorized"
    if "needs_review" in runs:
        return "needs_review"
    return "completed"


class ItemRules:
    """The rules between the items of one bundle (section 4.5): returns an error code or None."""

    def __init__(self):
        self.observed_at, self.status = None, None
        self.types = {}  # type identifier -> {"category", "inserted", "deleted", "run"}
        self.last_type = None
        self.runs = []

    def item(self, k, v):
        t = self.types
        if k == "observation":
            self.observed_at, self.status = v["observed_at"], v["status"]
        elif k == "sample_type":
            name = v["type_identifier"]
            if self.last_type is not None and not self.last_type.encode() < name.encode():
                return "order"
            self.last_type = name
            t[name] = {"category": v["category"], "inserted": 0, "deleted": 0, "run": None}
        elif k == "sample":
            if v["type_identifier"] not in t or v["first_seen_at"] != self.observed_at:
                return "inconsistent"
        elif k in ("version", "new_sample"):
            ty = t.get(v["payload"]["type"] if k == "new_sample" else v["sample"]["type"])
            if ty is None or (ty["category"] is not None and v["payload"]["value_kind"] != ty["category"]):
                return "inconsistent"
            if k == "new_sample":
                ty["inserted"] += 1  # a new_sample is a sample with its appeared event (section 4.6)
        elif k == "event":
            ty = t.get(v["sample"]["type"])
            if ty is None or v["observed_at"] != self.observed_at:
                return "inconsistent"
            ty["inserted" if v["event_kind"] in ("appeared", "representation_changed") else "deleted"] += 1
        elif k == "range_open":
            if v["first_seen_at"] != self.observed_at:
                return "inconsistent"
        elif k == "range_close":
            if v["last_seen_at"] > self.observed_at:
                return "inconsistent"
        elif k == "type_run":
            ty = t.get(v["type_identifier"])
            if ty is None or ty["run"] is not None:
                return "inconsistent"
            ty["run"] = v["status"]
            self.runs.append(v["status"])
            if v["inserted_event_count"] != ty["inserted"] or v["deleted_event_count"] != ty["deleted"]:
                return "inconsistent"
            if v["status"] == "unauthorized" and ty["inserted"] + ty["deleted"] > 0:
                return "inconsistent"
        return None

    def end(self):
        if any(ty["run"] is None and ty["inserted"] + ty["deleted"] > 0 for ty in self.types.values()):
            return "inconsistent"
        if self.status in ("completed", "needs_review", "partial_unauthorized", "partial_failed") and implied_status(self.runs) != self.status:
            return "inconsistent"
        return None


def verify_bundle(path, expected):
    """Verifies a bundle in line form (Protocol/bundles.md section 5.1). Prints 'ok <manifest hash>'
    or '<error code> line <n>' and returns the exit status."""
    table = member_table()
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    def fail(code, line):
        print("%s line %s" % (code, line))
        return 1
    if not lines:
        return fail("malformed", 1)
    m = hashlib.sha256(b"hp:v2:manifest:")
    counts, n, last, done, sequence, fmt = {}, 0, 0, False, 0, 1
    rules = ItemRules()
    for i, raw in enumerate(lines, start=1):
        if done:
            return fail("malformed", i)
        try:
            v = json.loads(raw.decode("utf-8"))
        except Exception:
            return fail("malformed", i)
        if canonical(v).encode("utf-8") != raw:
            return fail("not_canonical", i)
        if not isinstance(v, dict):
            return fail("malformed", i)
        if i == 1:
            limit = "integer 1..9007199254740991"
            if (set(v) != {"bundle_format", "device_chain_hash", "observation_id", "previous_manifest_hash", "sequence"}
                    or v["bundle_format"] not in (1, 2) or isinstance(v["bundle_format"], bool)
                    or not type_ok(v["device_chain_hash"], "hex")
                    or not type_ok(v["sequence"], limit) or not type_ok(v["observation_id"], limit)
                    or not type_ok(v["previous_manifest_hash"], "hex or null")
                    or (v["previous_manifest_hash"] is None) != (v["sequence"] == 1)):
                return fail("malformed", i)
            sequence, fmt = v["sequence"], v["bundle_format"]
            m.update(raw + b"\n")
            continue
        if "kind" not in v:
            if n == 0:
                return fail("order", i)
            trailer = {"counts": counts, "item_count": n}
            if v != trailer:
                return fail("counts", i)
            if rules.end():
                return fail(rules.end(), i)
            m.update(raw)
            done = True
            continue
        k = v["kind"]
        if k not in KINDS or (k == "new_sample" and fmt < 2):
            return fail("unknown_kind", i)
        if KINDS.index(k) < last or (k == "observation") != (i == 2):
            return fail("order", i)
        last = KINDS.index(k)
        if not members_ok(v, table[k]) or not rules_ok(k, v, sequence):
            return fail("field", i)
        if k == "metadata" and sha("metadata", v["metadata_json"].encode()) != v["metadata_hash"]:
            return fail("metadata_hash", i)
        if k == "version" and sha("payload", canonical(v["payload"]).encode()) != v["payload_hash"]:
            return fail("payload_hash", i)
        broken = rules.item(k, v)
        if broken:
            return fail(broken, i)
        m.update(sha("item", raw).encode() + b"\n")
        counts[k] = counts.get(k, 0) + 1
        n += 1
    if not done:
        return fail("malformed", len(lines))
    if not data.endswith(b"\n"):
        return fail("malformed", len(lines))
    h = m.hexdigest()
    if expected and h != expected:
        return fail("manifest_hash", "-")
    print("ok " + h)
    return 0


def chain_digests(paths):
    """Replays a chain's bundles (in sequence order) and prints, for each, the chain-state
    digest and visible count after it (Protocol/bundles.md section 7)."""
    types, open_ranges = {}, {}  # (type, fp) -> uuid hash; (type, fp, payload hash, first sequence) -> True
    for path in paths:
        with open(path, "rb") as f:
            lines = [json.loads(l) for l in f.read().split(b"\n") if l]
        seq = lines[0]["sequence"]
        for it in lines[1:-1]:
            k = it["kind"]
            if k == "sample":
                types[(it["type_identifier"], it["strict_fingerprint"])] = it["sample_uuid_hash"]
            elif k == "new_sample":
                t, fp = it["payload"]["type"], it["strict_fingerprint"]
                types[(t, fp)] = it["sample_uuid_hash"]
                open_ranges[(t, fp, sha("payload", canonical(it["payload"]).encode()), seq)] = True
            elif k == "range_open":
                open_ranges[(it["sample"]["type"], it["sample"]["strict_fingerprint"], it["payload_hash"], seq)] = True
            elif k == "range_close":
                del open_ranges[(it["sample"]["type"], it["sample"]["strict_fingerprint"], it["payload_hash"], it["first_sequence"])]
        rows = sorted(((t, fp, ph) for (t, fp, ph, _) in open_ranges), key=lambda r: (r[0].encode(), r[1].encode()))
        d = hashlib.sha256(b"hp:v2:chain_state:")
        for t, fp, ph in rows:
            d.update(canonical({"payload_hash": ph, "sample_uuid_hash": types.get((t, fp)), "strict_fingerprint": fp, "type": t}).encode() + b"\n")
        print("%d %s %d" % (seq, d.hexdigest(), len(rows)))
    return 0


def export_counts(kind, items):
    """The manifest counts of an export kind, rebuilt from its items (docs/export-format.md)."""
    if kind == "observation_diff_json":
        by = {}
        for it in items:
            by.setdefault(it["sample_type_identifier"], {})
            by[it["sample_type_identifier"]][it["change"]] = by[it["sample_type_identifier"]].get(it["change"], 0) + 1
        return {"by_type": by, "records": len(items)}
    if kind == "type_summary_json":
        s = sum(1 for it in items if it["kind"] == "type_summary")
        return {"records": len(items), "type_summaries": s, "daily_rows": len(items) - s}
    if kind == "archive_manifest_json":
        o = sum(1 for it in items if it["kind"] == "observation")
        return {"records": len(items), "observations": o, "bundles": len(items) - o}
    by = {}
    for it in items:
        if it.get("kind") == "record":
            by[it["sample_type_identifier"]] = by.get(it["sample_type_identifier"], 0) + 1
    return {"by_type": by, "records": sum(by.values()), "relationships": len(items) - sum(by.values())}


def manifest_hash(metadata, item_hashes, counts, filters):
    m = hashlib.sha256(b"hp:v2:export_manifest:")
    m.update(canonical(metadata).encode() + b"\n")
    for h in item_hashes:
        m.update(h.encode() + b"\n")
    m.update(canonical(counts).encode() + b"\n" + canonical(filters).encode())
    return m.hexdigest()


def verify_export(path):
    """Verifies a JSON export (the whole file parsed as one JSON document) or, when
    PATH.manifest.json exists, a CSV export. Prints 'ok <manifest hash>' or the problems."""
    import csv, os
    problems = []
    if os.path.exists(path + ".manifest.json"):
        env = json.load(open(path + ".manifest.json", encoding="utf-8"))
        hashes, by, rels = [], {}, 0
        numeric = {"observation_id", "numeric_value", "category_value", "workout_activity_type", "duration_seconds",
                   "first_seen_observation_id", "last_verified_observation_id", "disappeared_observation_id", "lateness_seconds"}
        with open(path, newline="", encoding="utf-8") as f:
            rows = csv.reader(f)
            cols = next(rows)
            # Version 1: the spec's 23 columns; version 2 appends display_name, display_unit,
            # local_day and lateness_seconds after item_hash. The item hash covers every
            # column but export_id and item_hash.
            at = cols.index("item_hash")
            for n, row in enumerate(rows, start=2):
                item = {}
                for c, v in zip(cols, row):
                    if c not in ("export_id", "item_hash"):
                        item[c] = None if v == "" else (float(v) if c in numeric else v)
                if sha("export_item", canonical(item).encode()) != row[at]:
                    problems.append("%s line %d: item_hash" % (path, n))
                hashes.append(row[at])
                by[row[2]] = by.get(row[2], 0) + 1
        relfile = env.get("files", {}).get("relationships")
        if relfile:
            with open(os.path.join(os.path.dirname(path), relfile), newline="", encoding="utf-8") as f:
                rows = csv.reader(f)
                next(rows)
                for n, r in enumerate(rows, start=2):
                    item = {"kind": "relationship", "metadata_hash": r[7] or None, "observation_id": float(r[2]) if r[2] else None,
                            "relationship_kind": r[1], "source_identity_hash": r[4], "source_type_identifier": r[3],
                            "target_identity_hash": r[6], "target_type_identifier": r[5]}
                    if sha("export_item", canonical(item).encode()) != r[-1]:
                        problems.append("%s line %d: item_hash" % (relfile, n))
                    hashes.append(r[-1])
                    rels += 1
        counts = {"by_type": by, "records": sum(by.values()), "relationships": rels}
        meta = {k: v for k, v in env.items() if k not in ("export_id", "created_at", "manifest", "files")}
        man = env["manifest"]
    else:
        env = json.load(open(path, encoding="utf-8"))
        items = env["items"]
        hashes = []
        for n, it in enumerate(items, start=1):
            body = {k: v for k, v in it.items() if k != "item_hash"}
            if sha("export_item", canonical(body).encode()) != it.get("item_hash"):
                problems.append("item %d: item_hash" % n)
            hashes.append(it.get("item_hash", ""))
        counts = export_counts(env["export_kind"], items)
        meta = {k: v for k, v in env.items() if k not in ("export_id", "created_at", "items", "manifest")}
        man = env["manifest"]
    if man["counts"] != counts:
        problems.append("manifest.counts")
    if man["record_count"] != len(hashes):
        problems.append("manifest.record_count")
    h = manifest_hash(meta, hashes, man["counts"], meta["filters"])
    if h != man["manifest_hash"]:
        problems.append("manifest.manifest_hash (computed %s)" % h)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("ok " + h)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "verify-export":
        sys.exit(verify_export(sys.argv[2]))
    if len(sys.argv) >= 3 and sys.argv[1] == "chain-digests":
        sys.exit(chain_digests(sys.argv[2:]))
    if len(sys.argv) >= 3 and sys.argv[1] == "verify-bundle":
        sys.exit(verify_bundle(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""))
    main()
