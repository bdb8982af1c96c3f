import AsyncHTTPClient
import Crypto
import Foundation
import HealthProbeArchive
import NIOCore
import NIOHTTP1

/// An S3-compatible bucket reached over HTTP(S) with path-style URLs
/// (`ENDPOINT/BUCKET/KEY`), every request signed with `SigV4`. Bodies are streamed
/// from and to files in 1 MiB chunks; nothing read back is trusted until re-hashed.
public struct ObjectStore: Sendable {
    public let settings: ObjectStoreSettings
    let client: HTTPClient
    let signer: SigV4
    let timeout: TimeAmount

    /// `timeout`: how long a request may take to be answered (a store that is down fails
    /// a request after it); a put gets one more second per MiB of its body.
    public init(settings: ObjectStoreSettings, client: HTTPClient = ObjectStore.client, timeout: TimeAmount = .seconds(30)) {
        self.settings = settings
        self.client = client
        self.timeout = timeout
        signer = SigV4(accessKey: settings.accessKey, secretKey: settings.secretKey, region: settings.region)
    }

    /// The process's client for object stores (never shut down, as `HTTPClient.shared`):
    /// - a connection refused or not made within 5 s fails the request at once, where
    ///   AsyncHTTPClient's default retries it until the request's own deadline (the first
    ///   round of a server whose store was down waited 30 s for each request);
    /// - no redirect is followed: a signed request goes only where it was signed for;
    /// - no body is decompressed: the bytes hashed are the bytes stored.
    public static let client: HTTPClient = {
        var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(60))
        pool.retryConnectionEstablishment = false
        let configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5)), connectionPool: pool,
                                                     decompression: .disabled)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The key of `name` under the configured prefix.
    public func key(_ name: String) -> String { settings.prefix.isEmpty ? name : settings.prefix + "/" + name }

    /// Uploads the file at `path` (of lower-case hex SHA-256 `sha256`) as `key`.
    public func put(key: String, file path: String, sha256: String) async throws {
        let size = DataDirectory.size(path)
        let body = HTTPClientRequest.Body.stream(FileChunks(path: path), length: .known(Int64(size)))
        let response = try await send("PUT", key: key, payloadHash: sha256, body: body, timeout: timeout + .seconds(Int64(size >> 20)))
        try await expectSuccess(response, "PUT", key)
    }

    /// Downloads `key`; the lower-case hex SHA-256 of its bytes. With `path`, the bytes
    /// are written to that new file (mode 0600); more than `maxBytes` is refused.
    @discardableResult
    public func get(key: String, to path: String? = nil, maxBytes: Int = 1 << 34) async throws -> String {
        let response = try await send("GET", key: key)
        try await expectSuccess(response, "GET", key)
        var hasher = SHA256()
        var handle: FileHandle?
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
                  let h = FileHandle(forWritingAtPath: path) else {
                throw ArchiveError(.storage, "cannot create \(path) for the object \(key) (is the directory writable and not full?)")
            }
            handle = h
        }
        defer { try? handle?.close() }
        var total = 0
        for try await buffer in response.body {
            total += buffer.readableBytes
            guard total <= maxBytes else {
                throw ArchiveError(.invalidInput, "the object \(key) in \(location) is larger than \(maxBytes) bytes; it is not one this server wrote")
            }
            buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            if let handle { try handle.write(contentsOf: Data(buffer.readableBytesView)) }
        }
        if let handle { try handle.synchronize() }
        return SigV4.hex(hasher.finalize())
    }

    /// Deletes `key` (a key that is not there is no error).
    public func delete(key: String) async throws {
        let response = try await send("DELETE", key: key)
        guard response.status.code != 404 else { return }
        try await expectSuccess(response, "DELETE", key)
    }

    /// Creates the bucket (an existing one of the same owner is kept).
    public func createBucket() async throws {
        let response = try await send("PUT", key: nil)
        guard response.status.code != 409 else { return }
        try await expectSuccess(response, "PUT bucket", settings.bucket)
    }

    /// Every key starting with `prefix` (ListObjectsV2, page by page).
    public func list(prefix: String) async throws -> [String] {
        var keys: [String] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try await send("GET", key: nil, query: query)
            try await expectSuccess(response, "LIST", prefix)
            let xml = String(decoding: try await response.body.collect(upTo: 16 << 20).readableBytesView, as: UTF8.self)
            let page = ListResult(xml: xml)
            keys += page.keys
            token = page.truncated ? page.nextToken : nil
            if page.truncated && token == nil {
                throw ArchiveError(.invalidInput, "\(location) answered a truncated listing of \(prefix) without a continuation token")
            }
        } while token != nil
        return keys
    }

    /// `endpoint/bucket`, for messages (never the keys).
    public var location: String { "\(settings.endpoint)/\(settings.bucket)" }

    /// `endpoint/bucket/prefix` (without a prefix, `location`), for messages.
    public var prefixLocation: String { location + (settings.prefix.isEmpty ? "" : "/" + settings.prefix) }

    func send(_ method: String, key: String?, query: [(String, String)] = [], payloadHash: String = SigV4.emptyPayloadHash,
              body: HTTPClientRequest.Body? = nil, timeout: TimeAmount? = nil) async throws -> HTTPClientResponse {
        guard let endpoint = URL(string: settings.endpoint), let scheme = endpoint.scheme, let host = endpoint.host else {
            throw ArchiveError(.invalidInput, "the object storage endpoint \(settings.endpoint) is not a URL like http://HOST:PORT")
        }
        let hostHeader = endpoint.port.map { "\(host):\($0)" } ?? host
        var path = "/" + SigV4.encode(settings.bucket)
        if let key { path += "/" + SigV4.encode(key, keepSlash: true) }
        let queryText = query.map { "\(SigV4.encode($0.0))=\(SigV4.encode($0.1))" }.joined(separator: "&")
        var request = HTTPClientRequest(url: "\(scheme)://\(hostHeader)\(path)" + (queryText.isEmpty ? "" : "?" + queryText))
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in signer.headers(method: method, host: hostHeader, path: path, query: query, payloadHash: payloadHash, date: Date()) {
            request.headers.add(name: name, value: value)
        }
        if let body { request.body = body }
        do {
            return try await client.execute(request, timeout: timeout ?? self.timeout)
        } catch {
            throw ArchiveError(.storage, "object storage \(location) cannot be reached for \(method) (\(error)); check s3_endpoint and that the store is up", cause: error)
        }
    }

    func expectSuccess(_ response: HTTPClientResponse, _ what: String, _ key: String) async throws {
        guard !(200..<300).contains(response.status.code) else { return }
        let body = try? await response.body.collect(upTo: 64 << 10)
        let text = body.map { String(decoding: $0.readableBytesView, as: UTF8.self) } ?? ""
        let code = ListResult.element("Code", in: text).flatMap(Self.printable) ?? "no error code"
        let hint = hint(response)
        throw ArchiveError(.storage, "object storage \(location) answered \(response.status.code) (\(code)) to \(what) \(key); \(hint)")
    }

    /// What to check for a failed answer. A redirect is not followed (a signed request goes only
    /// where it was signed for): a bucket in another region names it (`x-amz-bucket-region`),
    /// else the store's `Location` names the endpoint to use (its scheme and host only).
    func hint(_ response: HTTPClientResponse) -> String {
        switch response.status.code {
        case 403: return "check s3_access_key and s3_secret_key"
        case 404: return "check the bucket \(settings.bucket) (s3_bucket, or BUCKET of s3://BUCKET/PREFIX: it must exist) and the prefix"
        case 300..<400:
            if let region = response.headers.first(name: "x-amz-bucket-region").flatMap(Self.printable) {
                return "the bucket is in region \(region): set s3_region to it, and s3_endpoint to that region's endpoint"
            }
            // Only a path-style location (`/BUCKET/...`, as requests are made) names an endpoint to use.
            if let location = response.headers.first(name: "location").flatMap({ URL(string: $0) }),
               let scheme = location.scheme, ["http", "https"].contains(scheme), let host = location.host.flatMap(Self.printable),
               location.path.hasPrefix("/" + settings.bucket + "/") || location.path == "/" + settings.bucket {
                return "the store sends the request to \(scheme)://\(host)\(location.port.map { ":\($0)" } ?? ""): set s3_endpoint to it"
            }
            return "the store answered with a redirect, which is not followed: set s3_endpoint to the bucket's own path-style endpoint (and s3_region to its region)"
        default: return "see the object store's log"
        }
    }

    /// A header value fit to quote in a message: at most 100 letters, digits, `.`, `-` and `_`.
    static func printable(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= 100,
              value.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-_".unicodeScalars.contains($0)) }) else { return nil }
        return value
    }
}

/// A file's bytes in 1 MiB buffers, for a streamed request body.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let path: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let path: String
        var handle: FileHandle?
        var done = false

        mutating func next() async throws -> ByteBuffer? {
            guard !done else { return nil }
            if handle == nil {
                guard let h = FileHandle(forReadingAtPath: path) else { throw ArchiveError(.storage, "cannot read \(path) to upload it") }
                handle = h
            }
            guard let data = try handle?.read(upToCount: 1 << 20), !data.isEmpty else {
                done = true
                try? handle?.close()
                return nil
            }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(path: path) }
}

/// The parts of a ListObjectsV2 answer the restore needs, read without an XML parser:
/// its keys, whether it is truncated and the next continuation token.
struct ListResult {
    var keys: [String] = []
    var truncated = false
    var nextToken: String?

    init(xml: String) {
        var rest = Substring(xml)
        while let open = rest.range(of: "<Key>"), let close = rest[open.upperBound...].range(of: "</Key>") {
            keys.append(Self.unescape(String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        truncated = Self.element("IsTruncated", in: xml) == "true"
        nextToken = Self.element("NextContinuationToken", in: xml)
    }

    static func element(_ name: String, in xml: String) -> String? {
        guard let open = xml.range(of: "<\(name)>"), let close = xml[open.upperBound...].range(of: "</\(name)>") else { return nil }
        return unescape(String(xml[open.upperBound..<close.lowerBound]))
    }

    static func unescape(_ s: String) -> String {
        s.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
    }
}
