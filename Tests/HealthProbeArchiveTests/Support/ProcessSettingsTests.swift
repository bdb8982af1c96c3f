import Foundation
import Testing
import HealthProbeTestSupport
@testable import HealthProbeArchive

@Suite("Process settings")
struct ProcessSettingsTests {
    @Test("no library changes process-wide settings when it loads: no C constructor under Sources/")
    func noLoadTimeSettings() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".c") || $0.hasSuffix(".h") }
        #expect(files.count >= 4, "expected the C sources of HPSQLiteConfig and HPFileSync; found \(files)")
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("__attribute__((constructor))"), "\(file) runs code when the program loads; apply it in ProcessSettings.apply instead")
        }
    }

    @Test("the settings applied (by the test bundle as each executable does at start) are in force, and applying again changes nothing")
    func applied() {
        ProcessSettings.apply()
        ProcessSettings.apply()
        #expect(SQLiteSetup.result == 0, "SQLite was initialized before the settings could apply")
        #if canImport(Glibc)
        let env = ProcessInfo.processInfo.environment
        if env["MALLOC_ARENA_MAX"] == nil && env["GLIBC_TUNABLES"] == nil { #expect(Heap.arenaLimit != nil) }
        #endif
    }
}
