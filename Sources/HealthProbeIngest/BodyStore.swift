import Crypto
import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeImport

/// The raw bodies an automation posted, content-addressed by the SHA-256 of their bytes
/// (`sha256sum` names them): `<sha>.json` is the body, `<sha>.received.json` when and with
/// which settings it came, `<sha>.recorded.json` what became of it. A body and its
/// `received` are on disk before it is decoded; `recorded` is on disk before the poster
/// hears the answer. A body without `recorded` is one a crash interrupted: it is recorded
/// at the next start.
public struct BodyStore: Sendable {
    /// How a body arrived.
    public struct Received: Codable, Sendable, Equatable {
        public var sha256: String
        public var bytes: Int
        public var receivedAt: Double
        public var period: String?
        public var aggregation: String?
        public var utcOffsetSeconds: Int

        public init(sha256: String, bytes: Int, receivedAt: Double, period: String?, aggregation: String?, utcOffsetSeconds: Int) {
            self.sha256 = sha256
            self.bytes = bytes
            self.receivedAt = receivedAt
            self.period = period
            self.aggregation = aggregation
            self.utcOffsetSeconds = utcOffsetSeconds
        }
    }

    /// What became of a body: an observation's counts, or why it was refused.
    public struct Recorded: Codable, Sendable, Equatable {
        public var sha256: String
        /// `recorded` or `refused`.
        public var outcome: String
        public var observationId: Int64?
        public var status: String?
        public var records = 0
        public var types = 0
        public var appeared = 0
        public var changed = 0
        public var unchanged = 0
        public var disappeared = 0
        public var unrecognised = 0
        /// Per type the longest delay from a sample's end to this push, seconds.
        public var latenessByType: [String: Double] = [:]
        /// Why a body was refused (a JSON path and what was expected; never a value).
        public var reason: String?
        public var recordedAt: Double
    }

    public let directory: String

    public init(directory: String) { self.directory = directory }

    public static func sha256(_ bytes: [UInt8]) -> String { ArchiveHasher.hex(Array(SHA256.hash(data: bytes))) }

    func path(_ sha: String, _ suffix: String) -> String { directory + "/" + sha + suffix }

    /// What became of body `sha`, nil when it was never recorded.
    public func recorded(_ sha: String) throws -> Recorded? {
        guard let bytes = DurableFile.read(path(sha, ".recorded.json")) else { return nil }
        do { return try Self.decoder.decode(Recorded.self, from: Data(bytes)) } catch {
            throw ArchiveError(.storage, "\(path(sha, ".recorded.json")) is damaged; delete it to record the body again", cause: error)
        }
    }

    /// Keeps an arrived body under its content address (synced, then renamed), and how it
    /// came, durably; a body kept before stays as it was and the new file goes.
    public func adopt(_ body: IncomingBody, _ received: Received) throws {
        let kept = path(received.sha256, ".json")
        if FileManager.default.fileExists(atPath: kept) {
            unlink(body.path)
        } else {
            do { try DurableFile.sync(body.path) } catch { unlink(body.path); throw error }
            guard rename(body.path, kept) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(body.path)
                throw ArchiveError(.storage, "cannot move the arrived body into \(kept): \(reason)")
            }
            DurableFile.syncDirectory(directory)
        }
        try DurableFile.put(path(received.sha256, ".received.json"), try Self.encode(received))
    }

    /// Removes the files of bodies that never arrived whole (a stop while one came in); returns how many.
    public func sweepIncoming() -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var n = 0
        for name in names where name.hasPrefix(IncomingBody.prefix) && unlink(directory + "/" + name) == 0 { n += 1 }
        return n
    }

    /// Notes durably what became of a body.
    public func markRecorded(_ r: Recorded) throws {
        try DurableFile.put(path(r.sha256, ".recorded.json"), try Self.encode(r))
    }

    /// Bodies kept but never recorded (a crash between keeping and recording), oldest first.
    public func pending() throws -> [Received] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var out: [Received] = []
        for name in names where name.hasSuffix(".received.json") {
            let sha = String(name.dropLast(".received.json".count))
            guard !FileManager.default.fileExists(atPath: path(sha, ".recorded.json")), let bytes = DurableFile.read(directory + "/" + name),
                  let r = try? Self.decoder.decode(Received.self, from: Data(bytes)), r.sha256 == sha else { continue }
            out.append(r)
        }
        return out.sorted { ($0.receivedAt, $0.sha256) < ($1.receivedAt, $1.sha256) }
    }

    /// The body `sha` as its file, read in chunks, once its bytes were checked against
    /// its name (also in chunks: memory stays at one chunk).
    /// `verify: false` skips the hash for a file hashed as it arrived.
    public func checkedBody(_ sha: String, verify: Bool = true) throws -> HAEBody {
        let file = path(sha, ".json")
        guard verify else { return try HAEBody.file(file) }
        guard let handle = FileHandle(forReadingAtPath: file) else { throw ArchiveError(.notFound, "no body \(sha) in \(directory)") }
        defer { try? handle.close() }
        var hash = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hash.update(data: chunk) }
        guard ArchiveHasher.hex(Array(hash.finalize())) == sha else { throw ArchiveError(.storage, "\(file) does not hash to its name: the disk changed it") }
        return try HAEBody.file(file)
    }

    static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        return d
    }

    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.keyEncodingStrategy = .convertToSnakeCase
        return [UInt8](try e.encode(value))
    }
}
