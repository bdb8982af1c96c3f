import Foundation
import HTTPTypes
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeServer
import Hummingbird

/// Downloads: the verifiable exports of docs/export-format.md for a chain at an
/// observation, made from the chain's replica and recorded nowhere. The manifest hash
/// travels in `X-HP-Manifest-Hash`; `hp-node verify-export FILE` checks the file alone.
extension WebServer {
    /// What the dashboard exports: the two JSON kinds, one file each.
    static let downloadKinds: [String: ExportKind] = [
        "records": .observationRecordsJSON,
        "summary": .typeSummaryJSON,
    ]

    func addExportRoutes(_ router: Router<WebContext>) {
        for prefix in ["", "/api/v1"] {
            router.get("\(prefix)/chains/{chain}/export") { request, context in
                let person = try await access.person(context)
                let chain = try await access.chain(context, for: person)
                guard let kindName = try Params.query(request, "kind"), let kind = Self.downloadKinds[kindName] else {
                    throw WebError(.badRequest, "kind is records or summary")
                }
                let at = try Params.queryID(request, "at")
                return try await download(chain, kind: kind, kindName: kindName, at: at, context)
            }
        }
    }

    func download(_ chain: String, kind: ExportKind, kindName: String, at: Int64?, _ context: WebContext) async throws -> Response {
        let store = self.store
        let directory = store.root + "/cache/web-exports"
        let path = directory + "/\(UUID().uuidString.lowercased()).json"
        let result: ExportResult
        do {
            result = try await blocking {
                try PrivateFiles.makeDirectory(directory)
                let replica = try Archive.open(path: store.replicaPath(chain), mode: .readOnly)
                var request = ExportRequest(kind: kind)
                request.at = at
                return try Exporter.writeUnrecorded(archive: replica, chainHash: chain, request: request, out: path,
                                                    exportID: UUID().uuidString.lowercased(), createdAt: Self.now())
            }
        } catch let e as ArchiveError where e.code == .notFound || e.code == .invalidInput {
            try? FileManager.default.removeItem(atPath: path)
            throw WebError(.notFound, e.message)
        }
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)) } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        // Unlinked now: the open handle keeps the bytes until the download ends or fails.
        try? FileManager.default.removeItem(atPath: path)
        let size = Int((try? handle.seekToEnd()) ?? 0)
        try handle.seek(toOffset: 0)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.contentDisposition] = "attachment; filename=\"healthprobe-\(chain.prefix(12))-\(kindName)\(at.map { "-at-\($0)" } ?? "").json\""
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
