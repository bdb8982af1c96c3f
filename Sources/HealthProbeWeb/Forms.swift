import Foundation
import Hummingbird
import HealthProbeArchive
import HealthProbeCanonical

/// Reads small request bodies into typed values, with limits, before anything uses them.
enum Forms {
    /// The most a form or API body may hold.
    static let maxBody = 64 * 1024

    /// The whole body, at most `maxBody` bytes; `what` names it in the refusal.
    static func collect(_ request: Request, _ what: String) async throws -> ByteBuffer {
        do { return try await request.body.collect(upTo: maxBody) } catch {
            throw WebError(.badRequest, "the \(what) is larger than \(maxBody / 1024) KiB")
        }
    }

    /// Decodes an `application/x-www-form-urlencoded` body.
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let text = String(buffer: try await collect(request, "form"))
        do { return try URLEncodedFormDecoder().decode(T.self, from: text) } catch {
            throw WebError(.badRequest, "the form is missing a field or has one of the wrong kind")
        }
    }

    /// Decodes a JSON body.
    static func json<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let buffer = try await collect(request, "body")
        do { return try JSONDecoder().decode(T.self, from: Data(buffer: buffer)) } catch {
            throw WebError(.badRequest, "the body is not the JSON object this endpoint takes (see docs/openapi.json)")
        }
    }
}

/// Values from paths and queries, checked before they reach a query.
enum Params {
    /// A chain hash: 64 lower-case hex digits, nothing else (it names a directory).
    static func chain(_ context: WebContext) throws -> String {
        guard let c = context.parameters.get("chain"), ArchiveHasher.isLowerHex(Array(c.utf8), count: 64) else {
            throw WebError.noSuchChain
        }
        return c
    }

    /// A positive 64-bit id from a path parameter.
    static func id(_ context: WebContext, _ name: String) throws -> Int64 {
        guard let text = context.parameters.get(name), let v = Int64(text), v > 0 else {
            throw WebError(.notFound, "\(name) must be a positive integer no larger than 9223372036854775807")
        }
        return v
    }

    /// An optional positive id from the query.
    static func queryID(_ request: Request, _ name: String) throws -> Int64? {
        guard let text = request.uri.queryParameters[Substring(name)].map(String.init), !text.isEmpty else { return nil }
        guard let v = Int64(text), v > 0 else { throw WebError(.badRequest, "\(name) must be a positive integer no larger than 9223372036854775807") }
        return v
    }

    /// An optional query string of at most `max` bytes.
    static func query(_ request: Request, _ name: String, max: Int = 256) throws -> String? {
        guard let text = request.uri.queryParameters[Substring(name)].map(String.init), !text.isEmpty else { return nil }
        guard text.utf8.count <= max else { throw WebError(.badRequest, "\(name) is longer than \(max) bytes") }
        return text
    }

    /// The optional `kind` of a diff.
    static func diffKind(_ request: Request) throws -> DiffKind? {
        try query(request, "kind").map {
            guard let k = DiffKind(rawValue: $0) else { throw WebError(.badRequest, "kind is appeared, disappeared or changed") }
            return k
        }
    }

    /// The two observations of a diff.
    static func diffBounds(_ request: Request) throws -> (Int64, Int64) {
        guard let from = try queryID(request, "from"), let to = try queryID(request, "to") else {
            throw WebError(.badRequest, "a diff needs two observations: from and to")
        }
        return (from, to)
    }

    /// A type identifier: ASCII letters, digits, `_` and `:` (Health Auto Export's aggregated kinds, `hp:hae:minutes:...`), at most 128.
    static func typeIdentifier(_ text: String?) throws -> String {
        guard let text, (1...128).contains(text.utf8.count),
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x3A }) else {
            throw WebError(.notFound, "no such type")
        }
        return text
    }
}
