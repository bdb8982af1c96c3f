import Foundation
import GRDB

/// Every admin and sharing action, from the web, the API and the CLI: who did what, to
/// whom, when, and through which door. Written in the transaction that makes the change,
/// so an action and its record stand or fall together. Never holds passwords, tokens or
/// health values.
public enum Audit {
    /// Who acted, and through which door.
    public struct Actor: Sendable, Equatable {
        /// `device`: a device itself, over the sync protocol (a restore token redeemed).
        public enum Via: String, Sendable, Codable { case web, api, cli, device }
        public var name: String
        public var via: Via

        public init(name: String, via: Via) {
            self.name = name
            self.via = via
        }

        /// The operator at the server's shell: their login name.
        public static var cli: Actor {
            Actor(name: ProcessInfo.processInfo.environment["SUDO_USER"] ?? ProcessInfo.processInfo.environment["USER"] ?? "operator", via: .cli)
        }
    }

    public enum Action: String, Sendable, Codable, CaseIterable {
        case personAdd = "person.add"
        case personRole = "person.role"
        case personPassword = "person.password"
        case personRemove = "person.remove"
        case deviceToken = "device.token"
        case deviceRevoke = "device.revoke"
        case deviceGive = "device.give"
        case chainShare = "chain.share"
        case chainUnshare = "chain.unshare"
        case verify
        case alertChannelAdd = "alert.channel.add"
        case alertChannelRemove = "alert.channel.remove"
        case alertAck = "alert.ack"
        case alertSnooze = "alert.snooze"
        case chainRestoreToken = "chain.restore_token"
        case chainTransfer = "chain.transfer"
        /// A restored data directory made the server's home (`hp-server adopt`).
        case adopt = "server.adopt"
    }

    public struct Entry: Sendable, Codable, Equatable {
        public var id: Int64
        /// Unix seconds.
        public var at: Double
        public var actor: String
        public var via: Actor.Via
        public var action: Action
        /// The person, device or chain acted on.
        public var target: String?
        public var detail: String

        /// The target as people are shown it: a chain by its first 12 hex digits, anything else as is.
        public var shownTarget: String { target.map { $0.count == 64 ? String($0.prefix(12)) : $0 } ?? "" }
    }

    /// Registry migration "v5 audit log".
    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE audit_log (
                id INTEGER PRIMARY KEY,
                at REAL NOT NULL,
                actor TEXT NOT NULL,
                via TEXT NOT NULL,
                action TEXT NOT NULL,
                target TEXT,
                detail TEXT NOT NULL
            );
            """)
    }

    /// Records an action inside the caller's transaction.
    static func record(_ db: Database, _ actor: Actor, _ action: Action, target: String?, detail: String = "") throws {
        try db.execute(sql: "INSERT INTO audit_log(at, actor, via, action, target, detail) VALUES (?, ?, ?, ?, ?, ?)",
                       arguments: [Date().timeIntervalSince1970, actor.name, actor.via.rawValue, action.rawValue, target, detail])
    }
}

extension DeviceRegistry {
    /// The newest `limit` audit entries (before `before`, an entry id, for paging), newest first.
    public func audit(limit: Int = 100, before: Int64? = nil) throws -> [Audit.Entry] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM audit_log WHERE ? IS NULL OR id < ? ORDER BY id DESC LIMIT ?",
                             arguments: [before, before, max(1, min(limit, 1000))]).map { r in
                Audit.Entry(id: r["id"], at: r["at"], actor: r["actor"], via: Audit.Actor.Via(rawValue: r["via"]) ?? .cli,
                            action: Audit.Action(rawValue: r["action"]) ?? .verify, target: r["target"], detail: r["detail"])
            }
        }
    }

    /// Changes when the registry changed in a way a restore must not lose: an audited action
    /// (people, tokens, revocations, shares, transfers) or a device enrolled. Compared between
    /// registry snapshots for object storage; cheap (a key's maximum and a small table).
    public func changeMark() throws -> String {
        try database.read { db in
            let r = try Row.fetchOne(db, sql: """
                SELECT (SELECT max(id) FROM audit_log), (SELECT max(enrolled_at) FROM devices), (SELECT count(*) FROM devices)
                """)
            return "\(r?[0] as Int64? ?? 0):\(r?[1] as Double? ?? 0):\(r?[2] as Int64? ?? 0)"
        }
    }

    /// Records an action that is not itself a registry change (a verification run).
    public func recordAudit(_ actor: Audit.Actor, _ action: Audit.Action, target: String?, detail: String) throws {
        try database.write { db in try Audit.record(db, actor, action, target: target, detail: detail) }
    }
}
