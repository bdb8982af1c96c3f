import Foundation
import HPFileSync
import HealthProbeCanonical

/// A file written through a buffer to `path + ".partial"` and renamed into
/// place only when complete, so no file that looks complete is left behind
/// by a cancelled or failed export.
final class ExportOutput {
    let path: String
    let partial: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private(set) var bytesWritten = 0
    /// Bytes already handed to the kernel for write-back.
    private var writebackStarted = 0
    /// Write-back is started every this many bytes, so `commit`'s sync waits
    /// for the tail of the file only, not for all of it.
    static let writebackChunk = 16 << 20

    init(path: String, overwrite: Bool) throws {
        self.path = path
        partial = path + ".partial"
        let fm = FileManager.default
        if fm.fileExists(atPath: path) && !overwrite {
            throw ArchiveError(.invalidInput, "\(path) already exists; choose another --out or pass --overwrite")
        }
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty && !fm.fileExists(atPath: dir) {
            throw ArchiveError(.notFound, "the directory \(dir) does not exist")
        }
        guard fm.createFile(atPath: partial, contents: nil), let h = FileHandle(forWritingAtPath: partial) else {
            throw ArchiveError(.storage, "cannot create \(partial); check the directory's permissions")
        }
        handle = h
        buffer.reserveCapacity(1 << 20)
    }

    func write(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 20 { try flush() }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 20 { try flush() }
    }

    func write(_ text: String) throws { try write(Array(text.utf8)) }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        do {
            try handle.write(contentsOf: buffer)
        } catch {
            throw ArchiveError(.storage, "writing \(partial) failed (disk full?)", cause: error)
        }
        bytesWritten += buffer.count
        buffer.removeAll(keepingCapacity: true)
        if bytesWritten - writebackStarted >= Self.writebackChunk {
            // Only a hint: a failure here shows up at `commit`'s sync.
            _ = hp_start_writeback(handle.fileDescriptor, Int64(writebackStarted), Int64(bytesWritten - writebackStarted))
            writebackStarted = bytesWritten
        }
    }

    /// Flushes, syncs and renames the file into place.
    func commit() throws {
        try flush()
        do {
            try handle.synchronize()
            try handle.close()
        } catch {
            throw ArchiveError(.storage, "finishing \(partial) failed", cause: error)
        }
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
    }

    /// Closes and deletes the partial file.
    func abandon() {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: partial)
    }
}

/// RFC 4180 CSV fields.
enum CSV {
    /// A field: quoted when it holds a comma, quote, CR or LF.
    static func field(_ s: String) -> String {
        if s.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    /// The text of a canonical value in a CSV cell (null is empty; numbers as in canonical JSON).
    static func text(_ v: JSONValue) throws -> String {
        switch v {
        case .null: return ""
        case .string(let s): return s
        case .bool(let b): return b ? "true" : "false"
        case .number(let d):
            if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
            return String(decoding: try CanonicalJSON.encode(v), as: UTF8.self)
        default: return String(decoding: try CanonicalJSON.encode(v), as: UTF8.self)
        }
    }

    /// A CRLF-terminated row.
    static func row(_ fields: [String]) -> String { fields.map(field).joined(separator: ",") + "\r\n" }

    /// Splits one RFC 4180 record (no embedded line breaks in our exports' fields).
    static func parse(_ line: String) -> [String]? { parse(utf8: Array(line.utf8)) }

    /// `parse` on the record's UTF-8 bytes (a final CR is ignored); nil when a
    /// quote is misplaced or unclosed.
    static func parse(utf8 bytes: [UInt8]) -> [String]? {
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ",")
        let end = bytes.last == 0x0D ? bytes.count - 1 : bytes.count
        return bytes.withUnsafeBufferPointer { b -> [String]? in
            var out: [String] = []
            out.reserveCapacity(24)
            var i = 0
            while true {
                if i < end && b[i] == quote {
                    // Quoted: doubled quotes stand for one; a comma or the end must follow.
                    var cell: [UInt8] = []
                    i += 1
                    var closed = false
                    while i < end {
                        if b[i] == quote {
                            if i + 1 < end && b[i + 1] == quote { cell.append(quote); i += 2; continue }
                            closed = true
                            i += 1
                            break
                        }
                        cell.append(b[i])
                        i += 1
                    }
                    guard closed else { return nil }
                    out.append(String(decoding: cell, as: UTF8.self))
                    if i == end { return out }
                    guard b[i] == comma else { return nil }
                    i += 1
                } else {
                    var j = i
                    while j < end && b[j] != comma {
                        if b[j] == quote { return nil }
                        j += 1
                    }
                    out.append(String(decoding: UnsafeBufferPointer(rebasing: b[i..<j]), as: UTF8.self))
                    if j == end { return out }
                    i = j + 1
                }
            }
        }
    }
}
