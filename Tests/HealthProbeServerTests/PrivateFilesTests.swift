import Foundation
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeServer
import HealthProbeProtocol
import HealthProbeNode
import HealthProbeTestSupport

@Suite("The server's directories and file copies")
struct PrivateFilesTests {
    func mode(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }

    @Test("a directory is made private, once; a missing parent is made too")
    func directories() throws {
        let dir = TempDir()
        let a = dir.file("a")
        try PrivateFiles.makeDirectory(a)
        try PrivateFiles.makeDirectory(a)
        #expect(try mode(a) == 0o700)
        let deep = dir.file("b/c/d")
        try PrivateFiles.makeDirectory(deep)
        #expect(FileManager.default.fileExists(atPath: deep))
        // A file where the directory should be: an error naming the path.
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir.file("f")))
        #expect { try PrivateFiles.makeDirectory(dir.file("f/g")) } throws: { "\($0)".contains(dir.file("f/g")) }
    }

    @Test("a copy has the same bytes, is private, never replaces a file, and leaves nothing when the source is missing")
    func copies() throws {
        let dir = TempDir()
        let source = dir.file("source")
        let bytes = (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        let target = dir.file("target")
        try PrivateFiles.copySynced(source, to: target)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: target))) == bytes)
        #expect(try mode(target) == 0o600)
        #expect(throws: ArchiveError.self) { try PrivateFiles.copySynced(source, to: target) }
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: target))) == bytes, "the existing file is untouched")
        #expect(throws: ArchiveError.self) { try PrivateFiles.copySynced(dir.file("missing"), to: dir.file("other")) }
        #expect(!FileManager.default.fileExists(atPath: dir.file("other")))
    }
}
