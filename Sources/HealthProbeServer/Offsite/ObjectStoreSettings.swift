import Foundation

/// Where accepted bundles and registry snapshots are copied (config `s3_*` keys).
public struct ObjectStoreSettings: Sendable, Equatable {
    /// `http(s)://HOST[:PORT]`, without the bucket.
    public var endpoint: String
    public var bucket: String
    /// Keys start with this (no leading or trailing `/`); may be empty.
    public var prefix: String
    public var region: String
    public var accessKey: String
    public var secretKey: String

    public init(endpoint: String, bucket: String, prefix: String, region: String, accessKey: String, secretKey: String) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.bucket = bucket
        self.prefix = prefix.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        self.region = region
        self.accessKey = accessKey
        self.secretKey = secretKey
    }
}
