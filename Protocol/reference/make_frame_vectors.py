#!/usr/bin/env python3
"""Writes Protocol/vectors/frames.json from Protocol/README.md alone (independent of the
product's code). Usage: python3 Protocol/reference/make_frame_vectors.py > Protocol/vectors/frames.json"""
import base64, hashlib, json, struct, sys, zlib


def frame(t, payload=b""):
    return struct.pack(">IB", len(payload) + 1, t) + payload


def canon(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def main():
    status = canon({"device_chain_hash": "ab" * 32, "last_manifest_hash": None, "last_sequence": 0})
    lines = b'{"a":1}\n{"b":2}\n'
    part = struct.pack(">II", 0, len(lines)) + zlib.compress(lines)
    bomb = zlib.compress(b"\0" * (1 << 20))
    frames = [
        {"name": "ping", "hex": frame(0x30).hex(), "frames": [{"type": 0x30, "payload_hex": ""}]},
        {"name": "chain status", "hex": frame(0x11, status).hex(), "frames": [{"type": 0x11, "payload_hex": status.hex()}]},
        {"name": "two frames", "hex": (frame(0x30) + frame(0x31)).hex(), "frames": [{"type": 0x30, "payload_hex": ""}, {"type": 0x31, "payload_hex": ""}]},
        {"name": "bundle part", "hex": frame(0x21, part).hex(), "frames": [{"type": 0x21, "payload_hex": part.hex()}]},
        {"name": "truncated", "hex": frame(0x11, status)[:-3].hex(), "incomplete": True},
        {"name": "length zero", "hex": "00000000", "error": "malformed_frame"},
        {"name": "unknown type", "hex": frame(0x55).hex(), "error": "malformed_frame"},
        {"name": "oversize", "hex": struct.pack(">IB", 16 * 1024 * 1024 + 1, 0x21).hex(), "error": "frame_too_large"},
        {"name": "garbage", "hex": "ffffffff00112233", "error": "frame_too_large"},
    ]
    auth = canon({"client_time": "2026-11-22T06:00:00.000Z", "credential": "c1" * 32, "device_name": "anna-phone"})
    enroll = canon({"client_time": "2026-11-22T06:00:00.000Z", "device_name": "anna-phone", "enrollment_secret": "5e" * 32})
    auth_ok = canon({"credential": "c1" * 32, "device_name": "anna-phone", "server_time": "2026-11-22T06:00:00.250Z"})
    household = canon({"from": None, "to": None, "type": "HKQuantityTypeIdentifierHeartRate"})
    frames += [
        {"name": "auth", "hex": frame(0x08, auth).hex(), "frames": [{"type": 0x08, "payload_hex": auth.hex()}]},
        {"name": "enroll", "hex": frame(0x0A, enroll).hex(), "frames": [{"type": 0x0A, "payload_hex": enroll.hex()}]},
        {"name": "auth ok with credential", "hex": frame(0x09, auth_ok).hex(), "frames": [{"type": 0x09, "payload_hex": auth_ok.hex()}]},
        {"name": "household request", "hex": frame(0x40, household).hex(), "frames": [{"type": 0x40, "payload_hex": household.hex()}]},
    ]
    # Version 2 (section 8): a restore request, the bundle it announces, and one part.
    restore = canon({"device_chain_hash": "ab" * 32, "sequence": 1})
    announced = canon({"chain_state_digest": "d0" * 32, "item_count": 0, "manifest_hash": "aa" * 32, "parts": 1,
                       "sequence": 1, "uncompressed_size": len(lines), "visible_count": 0})
    frames += [
        {"name": "restore request", "hex": frame(0x50, restore).hex(), "frames": [{"type": 0x50, "payload_hex": restore.hex()}]},
        {"name": "restore bundle and part", "hex": (frame(0x51, announced) + frame(0x52, part)).hex(),
         "frames": [{"type": 0x51, "payload_hex": announced.hex()}, {"type": 0x52, "payload_hex": part.hex()}]},
    ]

    # Version 3 (section 3.1): a streamed bundle of one part, declared at its end.
    stream_begin = canon({"sequence": 1})
    stream_end = canon({"item_count": 0, "manifest_hash": "aa" * 32, "parts": 1, "sequence": 1, "uncompressed_size": len(lines)})
    frames += [
        {"name": "streamed bundle", "hex": (frame(0x24, stream_begin) + frame(0x21, part) + frame(0x25, stream_end)).hex(),
         "frames": [{"type": 0x24, "payload_hex": stream_begin.hex()}, {"type": 0x21, "payload_hex": part.hex()},
                    {"type": 0x25, "payload_hex": stream_end.hex()}]},
    ]

    # Version 3 (section 8.4): a restore whose chain state follows the parts.
    restore_stream = canon({"item_count": 0, "manifest_hash": "aa" * 32, "parts": 1, "sequence": 1, "uncompressed_size": len(lines)})
    restore_state = canon({"chain_state_digest": "d0" * 32, "sequence": 1, "visible_count": 0})
    frames += [
        {"name": "restore stream, part and state", "hex": (frame(0x54, restore_stream) + frame(0x52, part) + frame(0x53, restore_state)).hex(),
         "frames": [{"type": 0x54, "payload_hex": restore_stream.hex()}, {"type": 0x52, "payload_hex": part.hex()},
                    {"type": 0x53, "payload_hex": restore_state.hex()}]},
    ]

    def token(fields):
        return "hpenroll1." + base64.urlsafe_b64encode(canon(fields)).rstrip(b"=").decode()

    good = {"address": "homeserver.lan:7447", "fingerprint": "9f" * 32, "name": "anna-phone", "secret": "5e" * 32}
    tokens = [
        dict(good, name_of_case="valid", text=token(good)),
        {"name_of_case": "wrong prefix", "text": "hpenroll2." + token(good)[10:], "error": "not an enrollment token"},
        {"name_of_case": "truncated", "text": token(good)[:-12], "error": "damaged"},
        {"name_of_case": "short secret", "text": token(dict(good, secret="5e" * 8)), "error": "secret"},
        {"name_of_case": "no port", "text": token(dict(good, address="homeserver.lan")), "error": "HOST:PORT"},
    ]
    credentials = [{"credential": "c1" * 32, "stored_hash": hashlib.sha256(b"hp:v2:credential:" + ("c1" * 32).encode()).hexdigest()},
                   {"enrollment_secret": "5e" * 32, "stored_hash": hashlib.sha256(b"hp:v2:enrollment_secret:" + ("5e" * 32).encode()).hexdigest()}]
    hellos = [
        {"name": "version 1", "hex": (b"HPSY" + struct.pack(">HH", 1, 0)).hex(), "version": 1},
        {"name": "version 2", "hex": (b"HPSY" + struct.pack(">HH", 2, 0)).hex(), "version": 2},
        {"name": "version 3", "hex": (b"HPSY" + struct.pack(">HH", 3, 0)).hex(), "version": 3},
        {"name": "version 4", "hex": (b"HPSY" + struct.pack(">HH", 4, 0)).hex(), "error": "protocol_version"},
        {"name": "version 0", "hex": (b"HPSY" + struct.pack(">HH", 0, 0)).hex(), "error": "protocol_version"},
        {"name": "http", "hex": b"GET / HTTP/1.1\r\n".hex(), "error": "bad_magic"},
        {"name": "partial", "hex": b"HPS".hex(), "incomplete": True},
    ]
    parts = [
        {"name": "lines", "zlib_hex": zlib.compress(lines).hex(), "declared": len(lines), "inflated_hex": lines.hex()},
        {"name": "zlib bomb", "zlib_hex": bomb.hex(), "declared": 100, "error": "inflate_limit"},
        {"name": "over the limit", "zlib_hex": zlib.compress(b"x").hex(), "declared": 8 * 1024 * 1024 + 1, "error": "inflate_limit"},
        {"name": "declares more than it holds", "zlib_hex": zlib.compress(lines).hex(), "declared": len(lines) + 5, "error": "malformed_frame"},
        {"name": "corrupt", "zlib_hex": (b"\x78\x9c" + b"\xff" * 10).hex(), "declared": 10, "error": "malformed_frame"},
    ]
    json.dump({"description": "Sync frame, hello and bundle-part vectors (Protocol/README.md). Generated by Protocol/reference/make_frame_vectors.py.",
               "frames": frames, "hellos": hellos, "parts": parts, "tokens": tokens, "stored_secrets": credentials}, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
