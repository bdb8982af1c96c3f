import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import HealthProbeArchive

@Suite("Heap")
struct HeapTests {
    @Test("the process is limited to one heap arena per core (2 to 8) from load, unless the user set the allocator's own variables")
    func arenasLimited() throws {
        #if canImport(Glibc)
        let env = ProcessInfo.processInfo.environment
        if env["MALLOC_ARENA_MAX"] != nil || env["GLIBC_TUNABLES"] != nil {
            #expect(Heap.arenaLimit == nil)
        } else {
            // The constructor counts online processors as glibc does (not cgroup quotas).
            let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
            #expect(Heap.arenaLimit == min(max(cores, 2), 8))
        }
        #endif
    }

    @Test("blocks of 1 MiB or more stay mapped on their own after a larger one was freed (the threshold does not move), unless the user set it")
    func mmapThresholdFixed() throws {
        #if canImport(Glibc)
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
        for _ in 0..<20 where !mappedOnItsOwn {
            let block = try #require(malloc(2 << 20))
            blocks.append(block)
            mappedOnItsOwn = Heap.isMapped(block) == true
        }
        #expect(mappedOnItsOwn, "a 2 MiB block came from an arena")
        #endif
    }
}
