import Foundation
import HealthProbeArchive

/// Parses the export's `device` attribute,
/// `<<HKDevice: 0x533ad2350>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch4,4, software:9.6.3>`.
/// The memory address changes between exports and is dropped.
enum DeviceString {
    /// Parses with a small memo keyed by the text after the address (devices repeat).
    /// Consecutive records usually name the same device: the last key is compared
    /// first, which is cheaper than hashing it.
    final class Memo {
        private var cache: [Substring: DeviceDescriptor?] = [:]
        private var lastKey: Substring = ""
        private var last: DeviceDescriptor??

        func parse(_ s: String) -> DeviceDescriptor? {
            guard let close = s.utf8.firstIndex(of: UInt8(ascii: ">")) else { return DeviceString.parse(s) }
            let key = s[close...]
            if let last, key == lastKey { return last }
            let d: DeviceDescriptor?
            if let hit = cache[key] { d = hit } else {
                d = DeviceString.parse(s)
                if cache.count > 4096 { cache.removeAll() }
                cache[key] = d
            }
            lastKey = key
            last = .some(d)
            return d
        }
    }

    static func parse(_ s: String) -> DeviceDescriptor? {
        guard s.hasPrefix("<<HKDevice") else { return nil }
        var d = DeviceDescriptor()
        var body = Substring(s)
        if let close = body.firstIndex(of: ">") { body = body[body.index(after: close)...] }
        if body.hasSuffix(">") { body = body.dropLast() }
        // Fields are ", key:value"; values may contain commas (hardware:Watch4,4), so split on ", key:".
        let keys = ["name", "manufacturer", "model", "hardware", "firmware", "software", "localIdentifier", "UDIDeviceIdentifier", "creation date"]
        var fields: [String: String] = [:]
        var rest = body
        var currentKey: String?
        var currentStart = rest.startIndex
        func flush(upTo end: Substring.Index) {
            if let k = currentKey { fields[k] = String(rest[currentStart..<end]).trimmingCharacters(in: .whitespaces) }
        }
        var i = rest.startIndex
        while i < rest.endIndex {
            if rest[i] == "," {
                let after = rest[rest.index(after: i)...].drop(while: { $0 == " " })
                if let key = keys.first(where: { after.hasPrefix($0 + ":") }) {
                    flush(upTo: i)
                    currentKey = key
                    currentStart = after.index(after.startIndex, offsetBy: key.count + 1)
                    i = currentStart
                    continue
                }
            }
            i = rest.index(after: i)
        }
        flush(upTo: rest.endIndex)
        rest = ""
        d.name = fields["name"]
        d.manufacturer = fields["manufacturer"]
        d.model = fields["model"]
        d.hardwareVersion = fields["hardware"]
        d.firmwareVersion = fields["firmware"]
        d.softwareVersion = fields["software"]
        d.localIdentifier = fields["localIdentifier"]
        d.udiDeviceIdentifier = fields["UDIDeviceIdentifier"]
        return d
    }
}
