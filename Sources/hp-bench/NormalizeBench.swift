import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// `hp-bench normalize`: normalization and hashing alone (no SQLite).
struct NormalizeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "normalize", abstract: "Measure sample normalization and hashing without SQLite.")

    @Option(name: .long, help: "Number of samples.")
    var samples: Int = 1_000_000

    func run() async throws {
        let normalizer = SampleNormalizer(hasher: ArchiveHasher(secret: [UInt8](repeating: 1, count: 32)))
        var generated: [CapturedSample] = []
        generated.reserveCapacity(10_000)
        for i in 0..<10_000 { generated.append(CaptureBench.sample(type: 0, index: i, generation: 0)!) }
        var checksum = 0
        let (_, gen) = Measure.time { for i in 0..<samples { checksum &+= CaptureBench.sample(type: 0, index: i, generation: 0)!.startDate.exponent } }
        let (_, norm) = try Measure.time {
            for i in 0..<samples {
                let n = try normalizer.normalize(generated[i % 10_000], typeIdentifier: "HKQuantityTypeIdentifierHeartRate")
                checksum &+= Int(n.payloadDigest.w3 & 0xFF)
            }
        }
        let (_, fp) = try Measure.time {
            let n = try normalizer.normalize(generated[0], typeIdentifier: "HKQuantityTypeIdentifierHeartRate")
            for _ in 0..<samples { checksum &+= Int(try SampleEncoding.strictFingerprintDigest(n, occurrence: 0).w3 & 0xFF) }
        }
        // Shaped like an imported Record: no UUID, one metadata entry (3 values), a semantic key.
        var imported: [CapturedSample] = []
        imported.reserveCapacity(10_000)
        for i in 0..<10_000 {
            var s = generated[i]
            s.uuid = nil
            s.metadata = ["HKMetadataKeyHeartRateMotionContext": .string(String(i % 3))]
            s.semanticWindow = SemanticWindow(start: s.startDate, end: s.endDate)
            imported.append(s)
        }
        let (_, imp) = try Measure.time {
            for i in 0..<samples {
                let n = try normalizer.normalize(imported[i % 10_000], typeIdentifier: "HKQuantityTypeIdentifierHeartRate")
                checksum &+= Int(n.payloadDigest.w3 & 0xFF)
            }
        }
        // An imported record's semantic fingerprint is computed when a new sample identity is stored.
        let (_, sem) = try Measure.time {
            let n = try normalizer.normalize(imported[0], typeIdentifier: "HKQuantityTypeIdentifierHeartRate")
            for _ in 0..<samples { checksum &+= n.semanticFingerprint?.utf8.count ?? 0 }
        }
        print(String(format: "generate %.2f µs, normalize %.2f µs (an imported record: %.2f µs, and its semantic fingerprint when stored: %.2f µs), strict fingerprint %.2f µs per sample (checksum %d)",
                     gen / Double(samples) * 1e6, norm / Double(samples) * 1e6, imp / Double(samples) * 1e6, sem / Double(samples) * 1e6, fp / Double(samples) * 1e6, checksum))
    }
}
