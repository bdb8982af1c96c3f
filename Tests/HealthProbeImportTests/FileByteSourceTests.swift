import Foundation
import Testing
@testable import HealthProbeImport
import HealthProbeTestSupport

@Suite("Reading an export file")
struct FileByteSourceTests {
    @Test("closing, then releasing, closes the descriptor once: a descriptor reused meanwhile stays open")
    func closesOnce() throws {
        let dir = TempDir()
        try Data("<HealthData/>".utf8).write(to: URL(fileURLWithPath: dir.file("a.xml")))
        var source: FileByteSource? = try FileByteSource(path: dir.file("a.xml"))
        source?.close()
        // The lowest free descriptor is the one just closed (unless another test took it meanwhile).
        let reused = open(dir.file("a.xml"), O_RDONLY | O_CLOEXEC)
        #expect(reused >= 0)
        defer { Glibc.close(reused) }
        source = nil  // deinit
        #expect(fcntl(reused, F_GETFD) != -1, "descriptor \(reused) was closed by a source that no longer owned it")
    }
}
