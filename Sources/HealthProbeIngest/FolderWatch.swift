import Foundation
import HealthProbeArchive
import HealthProbeImport
import Logging
import NIOPosix
import ServiceLifecycle
import ZIPFoundation

/// Imports Apple Health exports dropped into a folder (say one the phone saves to): a new
/// `*.zip` or `*.xml` is imported once it is completely written (the same size and
/// modification time at two looks `interval` apart; hidden and partial-download names
/// are never touched), then moved to `imported/` or to `failed/` beside a
/// `NAME.reason.txt` saying why. A `Service`; clock injected.
public struct FolderWatch<C: Clock>: Service where C.Duration == Duration {
    public struct Settings: Sendable {
        public var interval: Duration = .seconds(2)
        /// A zip whose entries claim more than this, uncompressed, is refused unopened; one
        /// that inflates to more while it is read (whatever it claims) is stopped there.
        public var maxExpandedBytes: UInt64 = 32 << 30
        /// ... and so is one expanding more than this many times (a zip bomb), claimed or actual.
        public var maxRatio: UInt64 = 400
        public init() {}
    }

    let directory: String
    let home: ArchiveHome
    let queue: SyncQueue
    let archives: OpenArchives
    let status: ServeStatus
    let settings: Settings
    let clock: C
    let now: @Sendable () -> Double
    let logger: Logger

    public init(directory: String, home: ArchiveHome, queue: SyncQueue, archives: OpenArchives, status: ServeStatus, settings: Settings = Settings(), clock: C,
                now: @escaping @Sendable () -> Double, logger: Logger) {
        self.directory = directory
        self.home = home
        self.queue = queue
        self.archives = archives
        self.status = status
        self.settings = settings
        self.clock = clock
        self.now = now
        self.logger = logger
    }

    struct Seen: Equatable { var size: UInt64; var modified: Double }

    public func run() async throws {
        let fm = FileManager.default
        for sub in ["imported", "failed"] { try fm.createDirectory(atPath: directory + "/" + sub, withIntermediateDirectories: true) }
        var previous: [String: Seen] = [:]
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var current: [String: Seen] = [:]
            for name in Self.candidates(in: directory) {
                guard let a = try? fm.attributesOfItem(atPath: directory + "/" + name), (a[.type] as? FileAttributeType) == .typeRegular,
                      let size = (a[.size] as? NSNumber)?.uint64Value, let modified = (a[.modificationDate] as? Date)?.timeIntervalSince1970 else { continue }
                let seen = Seen(size: size, modified: modified)
                if size > 0, previous[name] == seen {
                    await importFile(name)
                } else {
                    current[name] = seen
                }
            }
            previous = current
            status.update(now: now()) { $0.folder.lastCheckAt = now() }
            do { try await cancelWhenGracefulShutdown { try await clock.sleep(for: settings.interval) } } catch { break }
        }
    }

    /// The names in `directory` that may be exports: `*.zip` and `*.xml`, not hidden,
    /// not partial downloads, in name order.
    static func candidates(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { n in
            let lower = n.lowercased()
            return !n.hasPrefix(".") && (lower.hasSuffix(".zip") || lower.hasSuffix(".xml"))
        }.sorted()
    }

    /// Imports one stable file as an observation of the node's own chain, then moves it.
    func importFile(_ name: String) async {
        let path = directory + "/" + name
        let started = now()
        do {
            if name.lowercased().hasSuffix(".zip") { try checkZip(path) }
            let node = try archives.node(home), logger = self.logger
            var options = AppleHealthImporter.Options()
            // Counted on the bytes actually inflated: a zip whose headers lie is stopped too.
            options.zipLimits = ZipLimits(maxInflatedBytes: settings.maxExpandedBytes, maxRatio: settings.maxRatio)
            let r = try await NIOThreadPool.singleton.runIfActive { [options] in
                let importer = AppleHealthImporter(node: node, options: options, logger: logger)
                return try importer.importExport(at: path)
            }
            let moved = try move(name, to: "imported")
            queue.due(home.root, now: now())
            status.update(now: now()) { s in
                s.folder.imported += 1
                s.folder.lastImported = moved
                s.surfaces["import", default: .init()].captures += 1
                s.surfaces["import", default: .init()].lastCaptureAt = started
                s.surfaces["import", default: .init()].lastObservationId = r.observationId
            }
            logger.info("watched folder: imported", metadata: ["file": "\(name)", "observation": "\(r.observationId)", "status": "\(r.status)"])
        } catch {
            let reason = "\(error)"
            let moved = try? move(name, to: "failed")
            if let moved { try? DurableFile.put(directory + "/failed/" + moved + ".reason.txt", Array((reason + "\n").utf8)) }
            status.update(now: now()) { s in
                s.folder.failed += 1
                s.folder.lastFailed = moved ?? name
                s.folder.lastFailure = reason
            }
            logger.warning("watched folder: import failed", metadata: ["file": "\(name)", "error": "\(reason)"])
        }
    }

    /// Refuses a zip that would expand beyond the limits before a byte is inflated.
    func checkZip(_ path: String) throws {
        let archive: ZIPFoundation.Archive
        do { archive = try ZIPFoundation.Archive(url: URL(fileURLWithPath: path), accessMode: .read) } catch {
            throw ArchiveError(.invalidInput, "not a readable zip (truncated or damaged): export it from the Health app again")
        }
        var expanded: UInt64 = 0, compressed: UInt64 = 0
        // Saturating: sizes that add up past 2^64 must not wrap to a small total.
        func add(_ a: UInt64, _ b: UInt64) -> UInt64 { let (sum, over) = a.addingReportingOverflow(b); return over ? .max : sum }
        for entry in archive {
            expanded = add(expanded, entry.uncompressedSize)
            compressed = add(compressed, entry.compressedSize)
        }
        let (bound, over) = max(compressed, 1).multipliedReportingOverflow(by: settings.maxRatio)
        guard expanded <= settings.maxExpandedBytes, over || expanded <= bound else {
            throw ArchiveError(.invalidInput, "the zip claims \(expanded) bytes from \(compressed) compressed: more than an Apple Health export expands to (a zip bomb?); not opened")
        }
    }

    /// Moves `name` into `sub`, under a new name if one is there already; returns the name used.
    func move(_ name: String, to sub: String) throws -> String {
        let fm = FileManager.default
        var target = name
        if fm.fileExists(atPath: "\(directory)/\(sub)/\(target)") { target = "\(Int(now()))-\(name)" }
        try fm.moveItem(atPath: "\(directory)/\(name)", toPath: "\(directory)/\(sub)/\(target)")
        DurableFile.syncDirectory(directory + "/" + sub)
        return target
    }
}
