import Foundation

/// `Protocol/vectors/replies.json`: frame payloads a client decodes, valid or refused.
public struct ReplyVectors: Decodable, Sendable {
    public struct Case: Decodable, Sendable, CustomStringConvertible {
        /// The frame kind's name (`CHAIN_STATUS`).
        public var frame: String
        public var payload: String
        /// The refusal's code, nil when valid.
        public var error: String?
        /// Text the refusal's message contains (`CHAIN_STATUS.last_sequence`).
        public var field: String?
        public var note: String?
        public var description: String { "\(frame) \(note ?? "")" }
    }
    public var cases: [Case]

    public static func load() throws -> ReplyVectors {
        try JSONDecoder().decode(ReplyVectors.self, from: Data(contentsOf: vectorURL("replies.json")))
    }
}
