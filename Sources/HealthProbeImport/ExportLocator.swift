import Foundation
import ZIPFoundation

/// Where the export XML is: a plain file, a member of an `export.zip`, or a
/// file inside an unzipped export folder. The XML is found by content (it
/// holds `<HealthData`), so `Export.xml` and localized names work; `__MACOSX/`
/// members, `._*` AppleDouble files and `.DS_Store` are skipped, and so is the
/// clinical-document XML (`export_cda.xml`).
public struct ExportLocation: Sendable, Equatable {
    public enum Kind: String, Sendable { case xml, zip, folder }
    public let kind: Kind
    /// The file (xml, folder) or zip path.
    public let path: String
    /// The zip member, for `.zip`.
    public let member: String?
    public let displayName: String

    /// Finds the export XML at `path`.
    public static func locate(_ path: String) throws -> ExportLocation { try locate(path, meter: InflateMeter(ZipLimits())) }

    /// Finds the export XML at `path`, counting what reading zip members inflates on `meter`.
    static func locate(_ path: String, meter: InflateMeter) throws -> ExportLocation {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            throw ImportError(.notFound, "\(path) does not exist")
        }
        if isDir.boolValue {
            let found = try findInFolder(path)
            return ExportLocation(kind: .folder, path: found, member: nil, displayName: found)
        }
        let head = try readHead(path, 4)
        if head.starts(with: [0x50, 0x4B]) {
            let (archive, members) = try ZipEntrySource.openArchive(path)
            var candidates: [(entry: Entry, member: ZipMemberData)] = []
            for (i, entry) in archive.enumerated() where entry.type == .file && isCandidate(entry.path) {
                candidates.append((entry, try ZipEntrySource.member(members, i, of: path)))
            }
            // Prefer conventional names, but decide by content.
            candidates.sort { rank($0.entry.path) < rank($1.entry.path) }
            for (entry, member) in candidates {
                if try zipMemberLooksLikeExport(path, entry, member, meter: meter) {
                    return ExportLocation(kind: .zip, path: path, member: entry.path, displayName: "\(path):\(entry.path)")
                }
            }
            throw ImportError(.notAnExport, "\(path) is a zip archive but holds no Apple Health export XML (no member contains <HealthData>)")
        }
        guard try fileLooksLikeExport(path) else {
            throw ImportError(.notAnExport, "\(path) is not an Apple Health export: expected export.zip, export.xml or the unzipped folder (no <HealthData> element near the start)")
        }
        return ExportLocation(kind: .xml, path: path, member: nil, displayName: path)
    }

    /// Opens the XML bytes.
    func open(meter: InflateMeter = InflateMeter(ZipLimits())) throws -> ByteSource {
        switch kind {
        case .xml, .folder: return try FileByteSource(path: path)
        case .zip: return try ZipEntrySource(zipPath: path, entryPath: member ?? "", meter: meter)
        }
    }

    static func isCandidate(_ path: String) -> Bool {
        let name = (path as NSString).lastPathComponent
        if path.hasPrefix("__MACOSX/") || path.contains("/__MACOSX/") || name.hasPrefix("._") || name == ".DS_Store" { return false }
        if name.lowercased().contains("cda") { return false }
        return name.lowercased().hasSuffix(".xml")
    }

    static func rank(_ path: String) -> Int {
        let name = (path as NSString).lastPathComponent.lowercased()
        if name == "export.xml" { return 0 }
        return path.split(separator: "/").count
    }

    static func findInFolder(_ root: String) throws -> String {
        guard let e = FileManager.default.enumerator(atPath: root) else {
            throw ImportError(.notFound, "cannot list \(root)")
        }
        var candidates: [String] = []
        while let rel = e.nextObject() as? String {
            if rel.hasPrefix("workout-routes") || rel.contains("/workout-routes/") || rel.contains("electrocardiograms") { continue }
            if isCandidate(rel) { candidates.append(rel) }
        }
        candidates.sort { rank($0) < rank($1) }
        for rel in candidates where try fileLooksLikeExport(root + "/" + rel) { return root + "/" + rel }
        throw ImportError(.notAnExport, "\(root) holds no Apple Health export XML (no .xml file contains <HealthData>)")
    }

    static func readHead(_ path: String, _ count: Int) throws -> [UInt8] {
        let source = try FileByteSource(path: path)
        var buf = [UInt8](repeating: 0, count: count)
        let n = try buf.withUnsafeMutableBufferPointer { try source.read($0.baseAddress!, count) }
        return Array(buf.prefix(n))
    }

    /// `<HealthData` within the first 64 KiB (past the DTD, which can be ~10 KiB).
    static func fileLooksLikeExport(_ path: String) throws -> Bool {
        contains(try readHead(path, 64 * 1024), "<HealthData")
    }

    static func zipMemberLooksLikeExport(_ path: String, _ entry: Entry, _ member: ZipMemberData, meter: InflateMeter) throws -> Bool {
        struct Enough: Error {}
        var head: [UInt8] = []
        do {
            try member.read(path: path, chunk: 16 * 1024) { data in
                try meter.count(chunk: data.count, memberSoFar: UInt64(head.count + data.count), member: entry.path,
                                declared: entry.uncompressedSize, compressed: entry.compressedSize)
                head.append(contentsOf: data)
                if head.count >= 64 * 1024 { throw Enough() }
            }
        } catch is Enough {
        } catch let e as InflateMeter.Exceeded {
            throw ImportError(.inflateLimit, e.description)
        } catch {
            throw ImportError(.corruptZip, "the zip member \(entry.path) cannot be read (corrupt)", cause: error)
        }
        return contains(head, "<HealthData")
    }

    static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard bytes.count >= n.count else { return false }
        var i = 0
        while i <= bytes.count - n.count {
            if bytes[i] == n[0] && Array(bytes[i..<(i + n.count)]) == n { return true }
            i += 1
        }
        return false
    }
}
