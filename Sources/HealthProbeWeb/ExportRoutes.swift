import Foundation
import HTTPTypes
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import Hummingbird
import ZIPFoundation

/// Downloads: the verifiable exports of docs/export-format.md for a chain at an
/// observation, made from the chain's replica and recorded nowhere. The manifest hash
/// travels in `X-HP-Manifest-Hash`; `hp-node verify-export FILE` checks the file alone.
extension WebServer {
    /// What the dashboard exports, by the `kind` a form or the API names.
    enum Download: String, CaseIterable {
        /// Records visible at an observation: JSON, or CSV zipped with its relationships and manifest.
        case records, recordsCSV = "records_csv"
        /// Type summaries at an observation.
        case summary
        /// What changed between two observations (`from`, `to`).
        case diff

        var kind: ExportKind {
            switch self {
            case .records: .observationRecordsJSON
            case .recordsCSV: .observationRecordsCSV
            case .summary: .typeSummaryJSON
            case .diff: .observationDiffJSON
            }
        }
    }

    func addExportRoutes(_ router: Router<WebContext>) {
        for prefix in ["", "/api/v1"] {
            router.get("\(prefix)/chains/{chain}/export") { request, context in
                let person = try await access.person(context)
                let chain = try await access.chain(context, for: person)
                guard let name = try Params.query(request, "kind"), let kind = Download(rawValue: name) else {
                    throw WebError(.badRequest, "kind is one of \(Download.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                var export = ExportRequest(kind: kind.kind)
                export.at = try Params.queryID(request, "at")
                if kind == .diff {
                    // Either may be left out: `to` is then the latest observation, `from` the one before `to`.
                    let from = try Params.queryID(request, "from"), to = try Params.queryID(request, "to")
                    if let from, let to { (export.from, export.to) = (min(from, to), max(from, to)) } else { (export.from, export.to) = (from, to) }
                }
                // The file's name says the span asked for: a bound left out is the latest, or the one before `to`.
                let span: String? = switch (export.from, export.to) {
                case let (from?, to?): "\(from)-to-\(to)"
                case let (from?, nil): "\(from)-to-latest"
                case let (nil, to?): "to-\(to)"
                case (nil, nil): kind == .diff ? "latest" : nil
                }
                let label = [name, export.at.map { "at-\($0)" }, span].compactMap { $0 }.joined(separator: "-")
                return try await download(chain, export, label: label, context)
            }
        }
    }

    /// Writes the export into the server's cache, unlinks it, and streams it: one JSON file,
    /// or, for CSV, a zip of the CSV, its relationships and its manifest (verify-export reads
    /// them from beside each other).
    func download(_ chain: String, _ request: ExportRequest, label: String, _ context: WebContext) async throws -> Response {
        let store = self.store
        let directory = store.root + "/cache/web-exports/\(UUID().uuidString.lowercased())"
        let csv = request.kind == .observationRecordsCSV
        let fileName = "healthprobe-\(chain.prefix(12))-\(label).\(csv ? "csv" : "json")"
        let path = directory + "/" + fileName
        let (result, served): (ExportResult, String)
        do {
            (result, served) = try await blocking {
                try PrivateFiles.makeDirectory(directory)
                let replica = try Archive.open(path: store.replicaPath(chain), mode: .readOnly)
                let result = try Exporter.writeUnrecorded(archive: replica, chainHash: chain, request: request, out: path,
                                                          exportID: UUID().uuidString.lowercased(), createdAt: Self.now())
                guard csv else { return (result, path) }
                let zipPath = path + ".zip"
                let zip = try ZIPFoundation.Archive(url: URL(fileURLWithPath: zipPath), accessMode: .create)
                for file in [path] + result.companionPaths {
                    try zip.addEntry(with: (file as NSString).lastPathComponent, fileURL: URL(fileURLWithPath: file), compressionMethod: .deflate)
                }
                return (result, zipPath)
            }
        } catch let e as ArchiveError where e.code == .notFound || e.code == .invalidInput {
            try? FileManager.default.removeItem(atPath: directory)
            throw WebError(.notFound, e.message)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: served)) } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        // Unlinked now: the open handle keeps the bytes until the download ends or fails.
        try? FileManager.default.removeItem(atPath: directory)
        let size = Int((try? handle.seekToEnd()) ?? 0)
        try handle.seek(toOffset: 0)
        var headers = HTTPFields()
        headers[.contentType] = csv ? "application/zip" : "application/json"
        headers[.contentDisposition] = "attachment; filename=\"\(fileName)\(csv ? ".zip" : "")\""
        headers[HTTPField.Name("X-HP-Manifest-Hash")!] = result.manifestHash
        headers[HTTPField.Name("X-HP-Record-Count")!] = String(result.recordCount)
        let box = UncheckedHandle(handle)
        return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: size) { writer in
            defer { try? box.handle.close() }
            while true {
                let chunk = try box.handle.read(upToCount: 64 * 1024) ?? Data()
                if chunk.isEmpty { break }
                try await writer.write(ByteBuffer(bytes: chunk))
            }
            try await writer.finish(nil)
        })
    }
}

/// A file handle read by one download's body writer only.
/// `@unchecked Sendable`: immutable (one `let`); one body writer reads the handle, never two at once.
final class UncheckedHandle: @unchecked Sendable {
    let handle: FileHandle
    init(_ handle: FileHandle) { self.handle = handle }
}
