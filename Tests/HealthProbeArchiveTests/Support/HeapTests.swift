import Foundation
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
            let cores = ProcessInfo.processInfo.activeProcessorCount
            #expect(Heap.arenaLimit == min(max(cores, 2), 8))
        }
        #endif
    }
}
