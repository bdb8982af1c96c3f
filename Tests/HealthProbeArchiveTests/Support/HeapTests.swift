import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("Heap")
struct HeapTests {
    @Test("the process is limited to one heap arena per core (2 to 8) once its settings apply, unless the user set the allocator's own variables")
    func arenasLimited() throws {
        #if canImport(Glibc)
        let applied = ProcessSettings.apply()
        #expect(applied.arenaLimit == Heap.arenaLimit)
        let env = ProcessInfo.processInfo.environment
        if env["MALLOC_ARENA_MAX"] != nil || env["GLIBC_TUNABLES"] != nil {
            #expect(Heap.arenaLimit == nil)
        } else {
            // Online processors are counted as glibc does (not cgroup quotas).
            let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
            #expect(Heap.arenaLimit == min(max(cores, 2), 8))
        }
        #endif
    }

    @Test("blocks of 1 MiB or more stay mapped on their own after a larger one was freed (the threshold does not move), unless the user set it")
    func mmapThresholdFixed() throws {
        #if canImport(Glibc)
        ProcessSettings.apply()
        let env = ProcessInfo.processInfo.environment
        guard env["MALLOC_MMAP_THRESHOLD_"] == nil, env["GLIBC_TUNABLES"] == nil else {
            #expect(Heap.mmapThreshold == nil)
            return
        }
        #expect(Heap.mmapThreshold == 1 << 20)
        // Read from the block's own header: other tests allocating meanwhile cannot change it.
        // With glibc's moving threshold, freeing this 24 MiB block would raise it past 2 MiB.
        let large = try #require(malloc(24 << 20))
        memset(large, 1, 24 << 20)
        free(large)
        let small = try #require(malloc(64 << 10))
        defer { free(small) }
        #expect(Heap.isMapped(small) == false, "the header check reads a 64 KiB block as mapped")
        // A free chunk other tests left in an arena may serve a block whatever the threshold:
        // blocks are held until one needs new memory, which the threshold then maps.
        var blocks: [UnsafeMutableRawPointer] = []
        defer { blocks.forEach { free($0) } }
        var mappedOnItsOwn = false
        // 8 MiB blocks, at most 40: free space that many small blocks of the other tests left
        // behind (and coalesced) serves fewer of them than of 2 MiB ones.
        for _ in 0..<40 where !mappedOnItsOwn {
            let block = try #require(malloc(8 << 20))
            blocks.append(block)
            mappedOnItsOwn = Heap.isMapped(block) == true
        }
        #expect(mappedOnItsOwn, "every 8 MiB block came from an arena")
        #endif
    }

    @Test("no library changes process-wide settings on its own: no load-time constructor, and only executables' mains apply them")
    func onlyExecutablesApply() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String } ?? []
        #expect(files.count > 100)
        var applying: [String] = []
        for file in files where file.hasSuffix(".c") || file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("__attribute__((constructor))"), "\(file) runs code when it loads")
            let code = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            if code.contains(where: { $0.contains("ProcessSettings.apply()") }) { applying.append(file) }
        }
        // The executables, and the one main they share (HealthProbeCLI's CommandMain, which only they call).
        #expect(Set(applying) == ["hp-fuzz/HPFuzz.swift", "HealthProbeCLI/CommandMain.swift"], "\(applying.sorted())")
        let mains = ["hp-node/HPNode.swift", "hp-server/HPServer.swift", "hp-bench/HPBench.swift"]
        for main in mains {
            let text = try String(contentsOf: sources.appendingPathComponent(main), encoding: .utf8)
            #expect(text.contains("static func main() async { await CommandMain.run(Self.self) }"), "\(main)")
        }
    }
}
