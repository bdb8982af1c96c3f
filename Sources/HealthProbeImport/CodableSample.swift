import HealthProbeArchive
import HealthProbeCanonical

/// A `CapturedSample` as JSON, for correlation members held back until the
/// end of an import (kept in a temporary table, not in memory).
struct CodableSample: Codable {
    var sample: CapturedSample
    init(_ s: CapturedSample) { sample = s }

    private enum K: String, CodingKey {
        case uuid, start, end, creation, kind, value, unit, category, workout, duration
        case sourceName, bundle, product, version, os, device, metadata
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: K.self)
        sample = CapturedSample(uuid: try c.decodeIfPresent(String.self, forKey: .uuid), startDate: try c.decode(Double.self, forKey: .start),
                                endDate: try c.decode(Double.self, forKey: .end), valueKind: ValueKind(rawValue: try c.decode(String.self, forKey: .kind)) ?? .other,
                                numericValue: try c.decodeIfPresent(Double.self, forKey: .value), unit: try c.decodeIfPresent(String.self, forKey: .unit),
                                categoryValue: try c.decodeIfPresent(Int.self, forKey: .category),
                                workoutActivityType: try c.decodeIfPresent(Int.self, forKey: .workout),
                                durationSeconds: try c.decodeIfPresent(Double.self, forKey: .duration),
                                metadata: try c.decodeIfPresent([String: JSONValue].self, forKey: .metadata))
        sample.creationDate = try c.decodeIfPresent(Double.self, forKey: .creation)
        let name = try c.decodeIfPresent(String.self, forKey: .sourceName), bundle = try c.decodeIfPresent(String.self, forKey: .bundle)
        let version = try c.decodeIfPresent(String.self, forKey: .version)
        if name != nil || bundle != nil || version != nil {
            sample.source = SourceDescriptor(name: name, bundleIdentifier: bundle, productType: try c.decodeIfPresent(String.self, forKey: .product),
                                             version: version, operatingSystemVersion: try c.decodeIfPresent(String.self, forKey: .os))
        }
        if let d = try c.decodeIfPresent([String: String].self, forKey: .device) {
            sample.device = DeviceDescriptor(name: d["name"], manufacturer: d["manufacturer"], model: d["model"], hardwareVersion: d["hardware"],
                                             firmwareVersion: d["firmware"], softwareVersion: d["software"], localIdentifier: d["local"], udiDeviceIdentifier: d["udi"])
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: K.self)
        let s = sample
        try c.encodeIfPresent(s.uuid, forKey: .uuid)
        try c.encode(s.startDate, forKey: .start)
        try c.encode(s.endDate, forKey: .end)
        try c.encodeIfPresent(s.creationDate, forKey: .creation)
        try c.encode(s.valueKind.rawValue, forKey: .kind)
        try c.encodeIfPresent(s.numericValue, forKey: .value)
        try c.encodeIfPresent(s.unit, forKey: .unit)
        try c.encodeIfPresent(s.categoryValue, forKey: .category)
        try c.encodeIfPresent(s.workoutActivityType, forKey: .workout)
        try c.encodeIfPresent(s.durationSeconds, forKey: .duration)
        try c.encodeIfPresent(s.source?.name, forKey: .sourceName)
        try c.encodeIfPresent(s.source?.bundleIdentifier, forKey: .bundle)
        try c.encodeIfPresent(s.source?.productType, forKey: .product)
        try c.encodeIfPresent(s.source?.version, forKey: .version)
        try c.encodeIfPresent(s.source?.operatingSystemVersion, forKey: .os)
        if let d = s.device {
            var o: [String: String] = [:]
            o["name"] = d.name; o["manufacturer"] = d.manufacturer; o["model"] = d.model; o["hardware"] = d.hardwareVersion
            o["firmware"] = d.firmwareVersion; o["software"] = d.softwareVersion; o["local"] = d.localIdentifier; o["udi"] = d.udiDeviceIdentifier
            try c.encode(o, forKey: .device)
        }
        try c.encodeIfPresent(s.metadata, forKey: .metadata)
    }
}
